// Package fastccs implements FastCCS (spec fastccs-tcc.md §2, after the MSc thesis "FastCCS:
// Fast Causal Consistent Snapshot"): a partitioned key-value store with transactional causal
// consistency whose read-only transactions (ROTs) never block and take one round almost always
// and two at most, and whose write-only transactions (WOTs) commit with a two-phase protocol
// under a commit vector.
//
// Every partition p_i keeps a sequence counter sn_i and a snapshot vector svc_i: svc_i[i] is the
// contiguous prefix of its sequence numbers that is committed, and svc_i[k] what p_i learned of
// svc_k[k] (gossip every stab_interval, and the clocks clients present). A version with commit
// vector ct is visible at p_i when ct ≤ svc_i: committed at every participant. A client keeps
// vc_c, the entry-wise maximum of what it has read and written. A ROT reads every partition at
// its svc (round 1) and re-reads, at the merged client clock, only the partitions whose svc did
// not cover another answer's ctm (round 2). The client library (client.go, Algorithm 1) and the
// partition (replica.go, Algorithm 2) speak the messages of messages.go, encoded by codec.go.
//
// Resolutions of the spec's §6 applied here: A2 (a pending version's temporary ct copies vc_c),
// A3 (one sn per transaction and partition), A4/A4b (the coordinator counts itself; early
// Prepared votes are buffered), A5 (svc := max(svc, vc_c)), A6 (round 2 returns ctm), A7 (the
// round-2 test is "svc does not cover ctm"), A8 (presumed abort, tombstones, holes,
// check_commit), A9 (a non-blocking in-order commit queue), A10 (every participant replies; the
// client waits for all), A11 (merge_clock_on_write, default off), A13 (vc_c := max(vc_c, ct)),
// A14 (uniform coordinator from the seeded PRNG), A15 (latest = largest ct[owner]), A16 (the
// final ct is installed before svc[i] moves; a read returns exactly the svc it used), A17 (ROTs
// restart, WOTs retry with the same id), A18/G-GC (garbage collection), A20 (duplicate keys).
//
// "fastccs" is the thesis's single-datacenter protocol: a deployment with more than one
// datacenter is refused. "fastccs-geo" (geo.go) is our extension to several datacenters (spec
// G1, not in the thesis); vectors are indexed through Slots, one entry per (datacenter,
// partition), so that both share every rule above.
package fastccs

import (
	"errors"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
)

func init() {
	registry.Register("fastccs", registry.Entry{
		Family:      registry.Causal,
		Description: "FastCCS: transactional causal consistency with vector-clock snapshots; ROTs in 1 round, at most 2 (one datacenter)",
		New:         New,
		Codec:       Codec,
		NewClient:   NewClient,
		// Algorithm 1: at most two rounds.
		MaxReadRounds: 2,
		RandomParams:  randomParams,
	})
}

// Parameter names FastCCS accepts. Replicas and client libraries get the same Params and each
// reads the ones it needs.
const (
	// ParamStabInterval is the period of svc gossip (spec §2.7, A12; default 5ms).
	ParamStabInterval = "stab_interval"
	// ParamGossip chooses how svc entries travel: "all" (every partition sends its own entry
	// to every other, the thesis's O(N²) messages per period; the default), "tree" (whole
	// vectors up and down a gossip_fanout-ary tree rooted at partition 0: 2(N−1) messages per
	// period, for hundreds of partitions) or "off" (only client clocks move svc; spec S7).
	ParamGossip = "gossip"
	// ParamGossipFanout is the number of children per node of the tree mode (default 8).
	ParamGossipFanout = "gossip_fanout"
	// ParamTxTimeout is TX_TIMEOUT (default 5s, spec A18): the client restarts a ROT or
	// retries a WOT after it, and garbage collection keeps what a ROT younger than it may read.
	ParamTxTimeout = "tx_timeout"
	// ParamPrepareTimeout is how long a coordinator waits for every vote before aborting
	// (default tx_timeout; spec A8).
	ParamPrepareTimeout = "prepare_timeout"
	// ParamCheckTimeout is how long a participant waits for the decision after voting before
	// it asks the coordinator with check_commit, and again between asks (default tx_timeout).
	ParamCheckTimeout = "check_timeout"
	// ParamGCInterval is the period of the garbage-collection sweep (default 1s).
	ParamGCInterval = "gc_interval"
	// ParamClockSkewBound bounds the skew between partition clocks that garbage collection
	// allows for (default 100ms).
	ParamClockSkewBound = "clock_skew_bound"
	// ParamMergeClockOnWrite makes a WriteReq merge the client's clock into svc (spec A11;
	// default false, the thesis's algorithm).
	ParamMergeClockOnWrite = "merge_clock_on_write"
	// ParamRetries is how many times a client restarts a ROT or retries a WOT after
	// tx_timeout before it gives up (default 3): a ROT then fails with an error, a WOT reports
	// txn.Unknown.
	ParamRetries = "retries"
	// ParamGeoResend is how long the geo extension waits before it resends a replication stream
	// that another datacenter has not acknowledged (default 500ms; ignored in one datacenter).
	ParamGeoResend = "geo_resend"
	// ParamCoverPoll is how often a session that moved to another datacenter asks the new
	// datacenter's partitions whether they cover its clock yet (geo extension; default 5ms).
	ParamCoverPoll = "cover_poll"
	// ParamUnsafeSkipCoverWait makes a moving session use the new datacenter at once, without
	// waiting until it covers the session's past. It is deliberately broken (a session can then
	// miss its own writes): tests use it to show that the checker catches it. Never set it
	// otherwise.
	ParamUnsafeSkipCoverWait = "unsafe_skip_cover_wait"
	// ParamUnsafeSkipSnapshotCheck makes the client skip Algorithm 1's line-10 check and return
	// every ROT after round 1. It is deliberately broken: tests use it to show that the checker
	// catches the fractured reads it allows. Never set it otherwise.
	ParamUnsafeSkipSnapshotCheck = "unsafe_skip_snapshot_check"
)

var knownParams = []string{ParamStabInterval, ParamGossip, ParamGossipFanout, ParamTxTimeout,
	ParamPrepareTimeout, ParamCheckTimeout, ParamGCInterval, ParamClockSkewBound,
	ParamMergeClockOnWrite, ParamRetries, ParamGeoResend, ParamCoverPoll, ParamUnsafeSkipCoverWait,
	ParamUnsafeSkipSnapshotCheck}

// gossip modes
const (
	gossipAll  = "all"
	gossipTree = "tree"
	gossipOff  = "off"
)

// settings are the parsed parameters.
type settings struct {
	stabIntervalUs   int64
	gossip           string
	fanout           int
	txTimeoutUs      int64
	prepareTimeoutUs int64
	checkTimeoutUs   int64
	gcIntervalUs     int64
	skewBoundUs      int64
	geoResendUs      int64
	coverPollUs      int64
	mergeOnWrite     bool
	retries          int
	skipCheck        bool
	skipCoverWait    bool
}

// parseSettings validates p; replicas and clients call it alike.
func parseSettings(p protocol.Params) (settings, error) {
	var s settings
	if err := p.CheckKnown(knownParams, nil); err != nil {
		return s, fmt.Errorf("fastccs: %w", err)
	}
	var errs []error
	dur := func(name string, def int64, min int64) int64 {
		v, err := p.Duration(name, def)
		if err == nil && v < min {
			err = fmt.Errorf("parameter %s: %s must be at least %dµs", name, p[name], min)
		}
		errs = append(errs, err)
		return v
	}
	s.stabIntervalUs = dur(ParamStabInterval, 5_000, 1)
	s.txTimeoutUs = dur(ParamTxTimeout, 5_000_000, 1)
	s.prepareTimeoutUs = dur(ParamPrepareTimeout, s.txTimeoutUs, 1)
	s.checkTimeoutUs = dur(ParamCheckTimeout, s.txTimeoutUs, 1)
	s.gcIntervalUs = dur(ParamGCInterval, 1_000_000, 1)
	s.skewBoundUs = dur(ParamClockSkewBound, 100_000, 0)
	s.geoResendUs = dur(ParamGeoResend, 500_000, 1)
	s.coverPollUs = dur(ParamCoverPoll, 5_000, 1)
	var err error
	s.fanout, err = p.Int(ParamGossipFanout, 8)
	if err == nil && s.fanout < 1 {
		err = fmt.Errorf("parameter %s: must be at least 1", ParamGossipFanout)
	}
	errs = append(errs, err)
	s.retries, err = p.Int(ParamRetries, 3)
	if err == nil && s.retries < 0 {
		err = fmt.Errorf("parameter %s: must not be negative", ParamRetries)
	}
	errs = append(errs, err)
	s.mergeOnWrite, err = p.Bool(ParamMergeClockOnWrite, false)
	errs = append(errs, err)
	s.skipCheck, err = p.Bool(ParamUnsafeSkipSnapshotCheck, false)
	errs = append(errs, err)
	s.skipCoverWait, err = p.Bool(ParamUnsafeSkipCoverWait, false)
	errs = append(errs, err)
	s.gossip = gossipAll
	if g, ok := p[ParamGossip]; ok {
		s.gossip = g
		if g != gossipAll && g != gossipTree && g != gossipOff {
			errs = append(errs, fmt.Errorf("parameter %s: %q is not all, tree or off", ParamGossip, g))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("fastccs: %w", err)
	}
	return s, nil
}
