package sdur

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/topology"
)

// config is a replica's parsed parameters.
type config struct {
	mode           Mode
	k              int   // THRESHOLD's K
	delayUs        int64 // DELAY: a global's own-partition broadcast waits this long
	tickNoopUs     int64 // THRESHOLD: the no-op tick after this long without DC advancing (0: off)
	voteTimeoutUs  int64 // τ_vote: ABORTREQ for a global missing votes (§3.5)
	finalTimeoutUs int64 // τ_final: a follower proposes FINAL (VOTEBCAST)
	snapshotUs     int64 // snapshot interval (0: none)
	markers        bool  // snapshot_mode marker+reconcile (else reconcile-only)
	gcHorizonUs    int64 // H of gc.go
	noReconcile    bool  // unsafe: publish the SCs without reconciliation
	asymmetric     bool  // unsafe: certify globals with the local (one-way) test
	// Paxos (§3.7)
	tickUs, batchUs, retryUs, electionUs, heartbeatUs, forwardUs int64
	maxBatch                                                     int
}

// Params are S-DUR's parameters (bench --set name=value).
var Params = []string{"mode", "k", "delay", "tick_noop", "vote_timeout", "final_timeout", "snapshot_interval",
	"snapshot_mode", "gc_horizon", "batch", "batch_size", "election_timeout", "unsafe_snapshot_no_reconcile",
	"unsafe_asymmetric_certification"}

// Snapshot modes (spec §3.6): markers and the hold of globals, then reconciliation (the
// default), or reconciliation alone.
const (
	SnapshotMarkers   = "marker+reconcile"
	SnapshotReconcile = "reconcile-only"
)

var modes = map[string]Mode{"base": Base, "threshold": Threshold, "votebcast": VoteBcast}

// parse reads p over the variant's defaults.
func parse(p protocol.Params, defaults protocol.Params) (config, error) {
	merged := protocol.Params{}
	for k, v := range defaults {
		merged[k] = v
	}
	for k, v := range p {
		merged[k] = v
	}
	if err := merged.CheckKnown(Params, nil); err != nil {
		return config{}, fmt.Errorf("sdur: %w", err)
	}
	c := config{tickUs: 10_000, retryUs: 300_000, heartbeatUs: 10_000, forwardUs: 300_000}
	mode := merged["mode"]
	if mode == "" {
		mode = "base"
	}
	m, ok := modes[mode]
	if !ok {
		return config{}, fmt.Errorf("sdur: parameter mode: %q is not base, threshold or votebcast", mode)
	}
	c.mode = m
	var err error
	for _, f := range []struct {
		dst  *int64
		name string
		def  int64
	}{{&c.delayUs, "delay", 0}, {&c.tickNoopUs, "tick_noop", 20_000}, {&c.voteTimeoutUs, "vote_timeout", 5_000_000},
		{&c.finalTimeoutUs, "final_timeout", 200_000}, {&c.snapshotUs, "snapshot_interval", 1_000_000},
		{&c.gcHorizonUs, "gc_horizon", 60_000_000},
		{&c.batchUs, "batch", 1_000}, {&c.electionUs, "election_timeout", 1_000_000}} {
		if *f.dst, err = merged.Duration(f.name, f.def); err != nil {
			return config{}, fmt.Errorf("sdur: %w", err)
		}
		if *f.dst < 0 {
			return config{}, fmt.Errorf("sdur: parameter %s must not be negative", f.name)
		}
	}
	switch merged["snapshot_mode"] {
	case "", SnapshotMarkers:
		c.markers = true
	case SnapshotReconcile:
	default:
		return config{}, fmt.Errorf("sdur: parameter snapshot_mode: %q is not %s or %s", merged["snapshot_mode"], SnapshotMarkers, SnapshotReconcile)
	}
	if c.k, err = merged.Int("k", 640); err != nil {
		return config{}, fmt.Errorf("sdur: %w", err)
	}
	if c.maxBatch, err = merged.Int("batch_size", 64); err != nil {
		return config{}, fmt.Errorf("sdur: %w", err)
	}
	if c.noReconcile, err = merged.Bool("unsafe_snapshot_no_reconcile", false); err != nil {
		return config{}, fmt.Errorf("sdur: %w", err)
	}
	if c.asymmetric, err = merged.Bool("unsafe_asymmetric_certification", false); err != nil {
		return config{}, fmt.Errorf("sdur: %w", err)
	}
	switch {
	case c.k < 0:
		return config{}, fmt.Errorf("sdur: parameter k must not be negative, got %d", c.k)
	case c.maxBatch < 1:
		return config{}, fmt.Errorf("sdur: parameter batch_size must be at least 1, got %d", c.maxBatch)
	case c.batchUs < 1 || c.electionUs < c.tickUs || c.voteTimeoutUs < c.tickUs || c.finalTimeoutUs < c.tickUs:
		return config{}, fmt.Errorf("sdur: batch must be positive and election_timeout, vote_timeout and final_timeout at least %d µs", c.tickUs)
	case c.gcHorizonUs < 4*c.voteTimeoutUs:
		// an ABORTREQ, sent vote_timeout after a fresh delivery, must arrive before it expires (gc.go)
		return config{}, fmt.Errorf("sdur: gc_horizon must be at least 4 × vote_timeout (%d µs), got %d µs", 4*c.voteTimeoutUs, c.gcHorizonUs)
	}
	return c, nil
}

// New returns the factory of the variant with the given default parameters.
func New(defaults protocol.Params) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		c, err := parse(cfg.Params, defaults)
		if err != nil {
			return nil, err
		}
		return newReplica(cfg, env, c)
	}
}

// Variants are the registered S-DUR variants (spec §5) and their default parameters.
var Variants = map[string]protocol.Params{
	"sdur":           {},
	"sdur-delay":     {"delay": "40ms"},
	"sdur-threshold": {"mode": "threshold"},
	"sdur-votebcast": {"mode": "votebcast"},
}

var descriptions = map[string]string{
	"sdur":           "S-DUR (seed 003): partitions replicated by per-partition Paxos, certification per partition, votes for globals, snapshot read-only transactions",
	"sdur-delay":     "S-DUR delaying globals' own-partition broadcast (Alg. 4; --set delay=40ms)",
	"sdur-threshold": "S-DUR reordering locals ahead of pending globals within a threshold (Alg. 5; --set k=640)",
	"sdur-votebcast": "S-DUR reordering with broadcast of votes: locals never wait for globals (Alg. 6)",
}

func init() {
	names := make([]string, 0, len(Variants))
	for n := range Variants {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		registry.Register(n, registry.Entry{Description: descriptions[n], New: New(Variants[n]), Codec: Codec,
			Family: registry.PartitionedReadWrite, NewPartitionedClient: NewClient, RandomParams: randomParams})
	}
}

// randomParams draws parameters for the swarms: short vote and election timeouts, so that
// partial termination and leader changes happen within a short run, frequent snapshots, small
// thresholds and delays. Derived from the same draws (so that the seeds' other draws stay where
// they were): half the seeds take snapshots without markers (reconcile-only). Garbage collection
// keeps its 60 s horizon here (a 3-second run never reaches it): gc_test.go runs it with faults.
func randomParams(r *rand.Rand, _ *topology.Topology, _ int) protocol.Params {
	voteMs, electionMs, snapMs := 300+r.IntN(1000), 300+r.IntN(700), 20+r.IntN(300)
	p := protocol.Params{
		"vote_timeout":      fmt.Sprintf("%dms", voteMs),
		"election_timeout":  fmt.Sprintf("%dms", electionMs),
		"snapshot_interval": fmt.Sprintf("%dms", snapMs),
		"k":                 fmt.Sprint(r.IntN(8)),
		"batch_size":        fmt.Sprint(1 + r.IntN(64)),
	}
	if snapMs%2 == 1 {
		p["snapshot_mode"] = SnapshotReconcile
	}
	return p
}

// validPayload checks a payload submitted to this partition's broadcast.
func (r *Replica) validPayload(p Payload) bool {
	switch p := p.(type) {
	case *Terminate:
		return p.Slice.Part == r.part && r.validParts(p.Parts) && int(p.Coord) >= 0 && int(p.Coord) < len(r.pl.DC) &&
			r.validSlice(p.Slice) == "" && p.Tx != 0
	case *AbortReq:
		return r.validParts(p.Parts) && int(p.Coord) >= 0 && int(p.Coord) < len(r.pl.DC)
	case *SnapDecided:
		return len(p.S) == r.pl.Partitions()
	case *Final, *Tick, *SnapBegin, *SnapResume:
		return true
	}
	return false
}

// validParts checks that parts are increasing partitions including this one.
func (r *Replica) validParts(parts []int) bool {
	for i, q := range parts {
		if q < 0 || q >= r.pl.Partitions() || (i > 0 && q <= parts[i-1]) {
			return false
		}
	}
	return slices.Contains(parts, r.part)
}

// validPaxos checks every payload a Paxos message carries.
func (r *Replica) validPaxos(m *Paxos) bool {
	valid := func(v []Payload) bool {
		return !slices.ContainsFunc(v, func(p Payload) bool { return p == nil || !r.validPayload(p) })
	}
	return valid(m.Value) && !slices.ContainsFunc(m.Accepted, func(a Accepted) bool { return !valid(a.Value) })
}
