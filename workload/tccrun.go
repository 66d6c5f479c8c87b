package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/verify/history"
)

// Name is "tcc".
func (c TCC) Name() string { return "tcc" }

// Family is registry.Causal: the workload's read-only and write-only transactions run through
// the protocol's client library.
func (c TCC) Family() registry.Family { return registry.Causal }

// ExtraClientsPerDC is 0: every TCC client runs the same mix.
func (c TCC) ExtraClientsPerDC() int { return 0 }

// ClientStream is 2·id+1; the client library of client id draws from stream 2·id.
func (c TCC) ClientStream(id txn.ClientID) uint64 { return uint64(id)<<1 | 1 }

// NewRun returns the client side of one run of the thesis's closed-loop ROT/WOT workload:
// each client is a client library of the protocol (registry.Entry.NewClient) in a tcc.Session.
// Every value names its writer, so a read whose value and version disagree is caught; at
// quiescence a fresh client in every datacenter reads every written key once more (oracle C6).
func (c TCC) NewRun(info RunInfo) (Run, error) {
	if info.Protocol.NewClient == nil {
		return nil, fmt.Errorf("workload: %s has no client library for the tcc workload", info.Protocol.Name)
	}
	gen, err := NewTCCGenerator(c, info.Layout.Partitions())
	if err != nil {
		return nil, err
	}
	r := &tccRun{cfg: c, info: info, gen: gen, rot: newLatencyHistogram(), wot: newLatencyHistogram(), move: newLatencyHistogram(),
		m: &TCCMetrics{RotRounds: map[string]int{"1": 0, "2": 0, "3": 0}, VisibleOnCommit: info.Protocol.VisibleOnCommit}}
	r.vis = newVisibility(info.WindowUs[0], info.WindowUs[1])
	return r, nil
}

// TCCMetrics are the TCC workload's figures of a run (JSON "workload_metrics").
type TCCMetrics struct {
	// ThroughputTPS counts the transactions (ROTs and committed WOTs) that finished inside the
	// measurement window, per second.
	ThroughputTPS float64    `json:"throughput_tps"`
	ROTs          int        `json:"rots"`
	WOTs          int        `json:"wots"`
	ROTLatency    TCCLatency `json:"rot_latency"`
	WOTLatency    TCCLatency `json:"wot_latency"`
	// ROTLatencyCDF and WOTLatencyCDF sample the distributions behind ROTLatency and WOTLatency
	// at the percentiles of CDFPercentiles.
	ROTLatencyCDF []CDFPoint `json:"-"`
	WOTLatencyCDF []CDFPoint `json:"-"`
	// RotRounds is the histogram of measured ROTs by rounds taken ("1", "2", "3"; all three
	// always present).
	RotRounds map[string]int `json:"rot_rounds"`
	// CommitChecks counts Eiger's server-side commit checks caused by measured ROTs.
	CommitChecks int `json:"commit_checks"`
	// VisibilityLag is the visibility lag of the WOTs committed in the measurement window
	// (spec §4.3), per participant partition: from the partition committing a WOT's versions
	// locally until round-1 reads there can return them (FastCCS: ct ≤ svc over the whole
	// vector; Wren: ct ≤ LST), on that partition's clock. WOTVisibilityLag is per WOT: from its
	// coordinator's commit decision until it is visible at every participant. Both come from
	// replicas that implement tcc.VisibilityReporter in the simulator, and are zero (omitted
	// from JSON) for the others and for runs on a real cluster: see VisibilityMeasured and
	// VisibleOnCommit.
	VisibilityLag    TCCLatency `json:"visibility_lag,omitzero"`
	WOTVisibilityLag TCCLatency `json:"wot_visibility_lag,omitzero"`
	// VisibilityMeasured counts the per-partition lags behind VisibilityLag, and
	// VisibilityDropped the events replicas could not keep (their buffers are bounded; a run
	// drains them every virtual second).
	VisibilityMeasured int `json:"visibility_measured,omitempty"`
	VisibilityDropped  int `json:"visibility_dropped,omitempty"`
	// VisibleOnCommit is set for the protocols whose partitions make a version visible as they
	// commit it (registry.Entry.VisibleOnCommit): their visibility lag is 0 by definition.
	VisibleOnCommit bool `json:"visible_on_commit,omitempty"`
	// Moves counts the clients' moves to another datacenter (TCC.MoveFraction), MovesFailed
	// those the new datacenter did not cover in time, and MoveWait how long a move waited
	// until the new datacenter covered the session's past (all moves of the run).
	Moves       int        `json:"moves,omitempty"`
	MovesFailed int        `json:"moves_failed,omitempty"`
	MoveWait    TCCLatency `json:"move_wait,omitzero"`
	// ValueMismatches counts reads (measured or not) whose value is not what the version they
	// name wrote: a protocol bug, whatever the consistency model.
	ValueMismatches int `json:"value_mismatches"`
}

// TCCLatency summarises one transaction type's latencies in milliseconds.
type TCCLatency struct {
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
}

// Violations reports reads whose values do not match their versions.
func (m *TCCMetrics) Violations() []string { return mismatches(m.ValueMismatches) }

// mismatches is the violation of n reads whose value is not what their version wrote (none if
// n is 0).
func mismatches(n int) []string {
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d reads whose value is not their version's", n)}
}

// MultiRoundFraction is the share of measured ROTs that took more than one round.
func (m *TCCMetrics) MultiRoundFraction() float64 {
	if m.ROTs == 0 {
		return 0
	}
	return 1 - float64(m.RotRounds["1"])/float64(m.ROTs)
}

// AvgRounds is the mean number of rounds of the measured ROTs.
func (m *TCCMetrics) AvgRounds() float64 {
	if m.ROTs == 0 {
		return 0
	}
	sum := 0
	for k, n := range m.RotRounds {
		rounds, _ := strconv.Atoi(k)
		sum += rounds * n
	}
	return float64(sum) / float64(m.ROTs)
}

// tccRun is the state one run's clients share. On a real cluster every client of the Causal
// family runs on one callback goroutine, but the lock keeps the run safe whatever the driver.
type tccRun struct {
	cfg  TCC
	info RunInfo
	gen  *TCCGenerator

	mu       sync.Mutex
	m        *TCCMetrics
	rot, wot *hdrhistogram.Histogram
	move     *hdrhistogram.Histogram // move waits, µs
	written  map[string]bool         // keys committed WOTs wrote: what the final reads cover
	vis      *visibility
}

func (r *tccRun) NewClient(ci ClientInfo) (Client, error) {
	tr, ok := ci.Conn.(tcc.Transport)
	if !ok {
		return nil, fmt.Errorf("workload: tcc needs a partitioned client transport, got %T", ci.Conn)
	}
	lib, err := r.info.Protocol.NewClient(tcc.ClientConfig{ID: ci.ID, DC: ci.DC, Layout: r.info.Layout, Transport: tr,
		Rand: rand.New(rand.NewPCG(r.info.Seed, uint64(ci.ID)<<1)), Params: r.info.Params})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.info.Protocol.Name, err)
	}
	if _, ok := lib.(tcc.Mover); r.cfg.MoveFraction > 0 && (!ok || r.info.Topology.N() < 2) {
		return nil, fmt.Errorf("workload: tcc clients can move only with a protocol whose clients change datacenter (fastccs-geo) on two datacenters or more; %s on %d", r.info.Protocol.Name, r.info.Topology.N())
	}
	dc := r.info.Topology.DCs[ci.DC]
	return &tccClient{run: r, conn: ci.Conn, dc: dc, dcIndex: ci.DC, sess: tcc.NewSession(lib, tr, ci.ID, dc, ci.Name, r.record)}, nil
}

func (r *tccRun) record(t history.Txn) {
	r.info.Record(t)
	if t.Status != txn.Committed || len(t.Writes) == 0 {
		return
	}
	r.mu.Lock()
	if r.written == nil {
		r.written = map[string]bool{}
	}
	for _, k := range t.Writes {
		r.written[k] = true
	}
	r.mu.Unlock()
}

// Tick drains the visibility events of the replicas that report them.
func (r *tccRun) Tick(replicas []protocol.Replica, nowUs int64) { r.vis.drain(replicas, nowUs) }

func (r *tccRun) Metrics() Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m
	windowS := float64(r.info.WindowUs[1]-r.info.WindowUs[0]) / 1e6
	m.ThroughputTPS = float64(m.ROTs+m.WOTs) / windowS
	m.ROTLatency, m.WOTLatency, m.MoveWait = latencyOf(r.rot), latencyOf(r.wot), latencyOf(r.move)
	m.ROTLatencyCDF, m.WOTLatencyCDF = CDFOf(r.rot), CDFOf(r.wot)
	r.vis.summarise(m)
	return m
}

// newLatencyHistogram returns a histogram of latencies in µs, up to an hour.
func newLatencyHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, 3_600_000_000, 3) }

func latencyOf(h *hdrhistogram.Histogram) TCCLatency {
	if h.TotalCount() == 0 {
		return TCCLatency{}
	}
	return TCCLatency{Mean: h.Mean() / 1000, P50: float64(h.ValueAtQuantile(50)) / 1000, P99: float64(h.ValueAtQuantile(99)) / 1000}
}

// finalReadKeys is how many keys each final read-only transaction reads.
const finalReadKeys = 16

// Final reads, from a fresh client in every datacenter, one ROT after the other, every key a
// committed WOT wrote, finalReadKeys keys at a time, and returns their ids: each must see the
// last version of every key (oracle C6, eventual visibility).
func (r *tccRun) Final(s Settler) ([]txn.ID, error) {
	r.mu.Lock()
	keys := make([]string, 0, len(r.written))
	for k := range r.written {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	slices.Sort(keys)
	var ids []txn.ID
	for dc := range r.info.Layout.Node {
		ci, err := s.Connect(dc, r.info.Layout.Node[dc][0], r.info.Topology.DCs[dc]+"/final")
		if err != nil {
			return nil, err
		}
		cl, err := r.NewClient(ci)
		if err != nil {
			return nil, err
		}
		sess := cl.(*tccClient).sess
		for start := 0; start < len(keys); start += finalReadKeys {
			batch := keys[start:min(start+finalReadKeys, len(keys))]
			err := s.Await(ci, func(done func(error)) {
				ids = append(ids, sess.NextID())
				sess.Read(batch, func(res tcc.ReadResult) { done(res.Err) })
			})
			if err != nil {
				return nil, fmt.Errorf("workload: a final read of %d keys at quiescence: %w", len(batch), err)
			}
		}
	}
	return ids, nil
}

// valueOf is the value transaction id writes to key: "<id>/<key>" padded with dots to size
// bytes, so that every value names its writer (spec §1.2) and a read whose value and version
// disagree is caught.
func valueOf(id txn.ID, key string, size int) []byte {
	v := []byte(id.String() + "/" + key)
	for len(v) < size {
		v = append(v, '.')
	}
	return v
}

// tccClient is one closed-loop client.
type tccClient struct {
	run     *tccRun
	conn    Conn
	dc      string
	dcIndex int
	sess    *tcc.Session
	last    TCCTxn // the last transaction, for Retry
	// writing is the WOT in flight, recorded with an unknown outcome if the run ends first.
	writing *history.Txn
}

func (c *tccClient) Next(rng *rand.Rand, done func(Outcome)) {
	c.last = c.run.gen.Next(rng)
	if f := c.run.cfg.MoveFraction; f > 0 && rng.Float64() < f {
		to := rng.IntN(c.run.info.Topology.N() - 1)
		if to >= c.dcIndex {
			to++
		}
		c.move(to, func() { c.start(c.last, done) })
		return
	}
	c.start(c.last, done)
}

// Relocatable is a client connection that can follow its client to another datacenter (the
// simulator's: its outages and timers are then the new datacenter's).
type Relocatable interface {
	MoveTo(dc int)
}

// move takes the client to datacenter to and then calls then; a move the library refuses
// (the new datacenter could not cover the session's past in time) leaves the client where it
// was.
func (c *tccClient) move(to int, then func()) {
	r := c.run
	startUs := c.conn.NowUs()
	name := r.info.Topology.DCs[to]
	c.sess.Move(to, name, func(err error) {
		end := c.conn.NowUs()
		r.mu.Lock()
		if err != nil {
			r.m.MovesFailed++
		} else {
			r.m.Moves++
			_ = r.move.RecordValue(max(end-startUs, 1))
		}
		r.mu.Unlock()
		if err == nil {
			c.dc, c.dcIndex = name, to
			if rc, ok := c.conn.(Relocatable); ok {
				rc.MoveTo(to)
			}
		}
		then()
	})
}

// Retry re-runs the last transaction on the same keys. The TCC protocols do not abort ROTs or
// WOTs (a lost answer is an unknown outcome, which is never retried: a WOT could apply twice,
// spec A17), so a run calls it only if one someday does.
func (c *tccClient) Retry(done func(Outcome)) { c.start(c.last, done) }

// start runs t.
func (c *tccClient) start(t TCCTxn, done func(Outcome)) {
	r := c.run
	startUs := c.conn.NowUs()
	if !t.Write {
		c.sess.Read(t.Keys, func(res tcc.ReadResult) {
			end := c.conn.NowUs()
			r.mu.Lock()
			if res.Err == nil {
				r.checkValues(res.Reads)
			}
			if res.Err == nil && r.info.Measured(startUs, end) {
				r.m.ROTs++
				r.m.RotRounds[strconv.Itoa(res.Rounds)]++
				r.m.CommitChecks += res.CommitChecks
				_ = r.rot.RecordValue(max(end-startUs, 1))
			}
			r.mu.Unlock()
			out := Outcome{Status: txn.Committed, LatencyUs: end - startUs, Ops: len(t.Keys), Err: res.Err}
			if res.Err != nil {
				out.Status = txn.Unknown
			}
			done(out)
		})
		return
	}
	id := c.sess.NextID()
	c.writing = &history.Txn{ID: id, DC: c.dc, Client: c.sess.Name(), StartUs: startUs, Writes: t.Keys}
	writes := make([]txn.Write, len(t.Keys))
	for i, k := range t.Keys {
		writes[i] = txn.Write{Key: k, Value: valueOf(id, k, r.cfg.ValueBytes)}
	}
	c.sess.Write(writes, func(res tcc.WriteResult) {
		c.writing = nil
		end := c.conn.NowUs()
		if res.Status == txn.Committed && r.info.Measured(startUs, end) {
			r.mu.Lock()
			r.m.WOTs++
			_ = r.wot.RecordValue(max(end-startUs, 1))
			r.mu.Unlock()
		}
		done(Outcome{Status: res.Status, LatencyUs: end - startUs, Ops: len(t.Keys), Err: res.Err})
	})
}

// Abandon records the WOT in flight, if any, with an unknown outcome, which the checker must
// consider both ways.
func (c *tccClient) Abandon(nowUs int64) {
	if c.writing != nil {
		c.writing.Status, c.writing.EndUs = txn.Unknown, nowUs
		c.run.record(*c.writing)
		c.writing = nil
	}
}

// checkValues counts the reads whose value is not the one their version wrote; r.mu is held.
func (r *tccRun) checkValues(reads []tcc.Read) {
	for _, rd := range reads {
		if !valueMatches(rd.Key, rd.Value, rd.Version, r.cfg.ValueBytes) {
			r.m.ValueMismatches++
		}
	}
}

// valueMatches reports whether value is what version wrote to key with values of size bytes
// (valueOf; nothing for the initial version).
func valueMatches(key string, value []byte, version txn.ID, size int) bool {
	want := []byte(nil)
	if version != txn.None {
		want = valueOf(version, key, size)
	}
	return string(value) == string(want)
}
