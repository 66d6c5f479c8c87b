package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// TCCOptions describe one run of a transactional-causal protocol (package tcc) in the
// simulator: the FastCCS thesis's closed-loop ROT/WOT workload on a partitioned store.
type TCCOptions struct {
	// Topology gives the datacenters; nil means one datacenter (the thesis's setting).
	Topology     *topology.Topology
	Partitions   int // per datacenter
	ClientsPerDC int
	Workload     workload.TCCConfig
	// DurationUs is how long clients run; the measurement window is [WarmupUs,
	// DurationUs-CooldownUs) (the thesis keeps the middle half of each trial).
	DurationUs, WarmupUs, CooldownUs int64
	Seed                             uint64
	Jitter                           float64 // scale of the topology's RTT standard deviations
	Params                           protocol.Params
	Faults                           []sim.Fault
	// ClientHopUs is the client-to-partition delay, IntraDCUs the partition-to-partition delay,
	// both varied and bandwidth-limited by LAN.
	ClientHopUs, IntraDCUs int64
	LAN                    sim.LAN
	// Service is the optional CPU cost model of every partition server (the thesis's simulator
	// had none, spec §4.2; the zero value keeps it so).
	Service sim.Service
	// KeepHistory keeps the recorded history in the result.
	KeepHistory bool
	// Progress, if set, is called about once per virtual second.
	Progress func(protocolName string, virtualUs, totalUs int64)
}

// TCCDefaults is the thesis's default configuration (spec §4.3): 8 partitions, 5 keys per
// transaction, 128-byte values, 5% writes. The thesis does not say how many clients it ran (spec
// WL4); we run 32 closed-loop clients, 4 per partition. Trials last 20 virtual seconds, of which
// the middle 10 are measured (the thesis keeps the middle half of each trial).
func TCCDefaults() TCCOptions {
	return TCCOptions{Partitions: 8, ClientsPerDC: 32, Workload: workload.DefaultTCCConfig(),
		DurationUs: 20_000_000, WarmupUs: 5_000_000, CooldownUs: 5_000_000, Seed: 1,
		ClientHopUs: sim.DefaultClientHopUs, IntraDCUs: sim.DefaultClientHopUs, LAN: ThesisLAN}
}

// ThesisLAN is the thesis simulator's network (spec §4.2, WL7): with 0.5 ms base delays,
// every message takes a delay uniform in [0, 1] ms, and every node and client has a 1 Gb/s
// network card.
var ThesisLAN = sim.LAN{JitterUs: 500, BandwidthBitsPerSec: 1_000_000_000}

// singleDC is the one-datacenter topology of the thesis's experiments.
func singleDC() *topology.Topology {
	return &topology.Topology{Name: "one-dc", DCs: []string{"dc0"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
}

// Validate reports the first invalid option.
func (o *TCCOptions) Validate() error {
	switch {
	case o.Partitions < 1:
		return fmt.Errorf("bench: partitions must be at least 1, got %d", o.Partitions)
	case o.ClientsPerDC < 1:
		return fmt.Errorf("bench: clients per datacenter must be at least 1, got %d", o.ClientsPerDC)
	case o.DurationUs <= 0:
		return errors.New("bench: duration must be positive")
	case o.WarmupUs < 0 || o.CooldownUs < 0 || o.WarmupUs+o.CooldownUs >= o.DurationUs:
		return errors.New("bench: warm-up and cool-down must not be negative and must leave a measurement window")
	case o.Jitter < 0 || o.ClientHopUs < 0 || o.IntraDCUs < 0:
		return errors.New("bench: jitter and delays must not be negative")
	}
	return o.Workload.Validate()
}

// TCCLatency summarises one transaction type's latencies in milliseconds.
type TCCLatency struct {
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
}

// TCCResult is one protocol's run.
type TCCResult struct {
	Protocol   string `json:"protocol"`
	Partitions int    `json:"partitions"`
	Seed       uint64 `json:"seed"`
	// ThroughputTPS counts the transactions (ROTs and committed WOTs) that finished inside the
	// measurement window, per second.
	ThroughputTPS float64    `json:"throughput_tps"`
	ROTs          int        `json:"rots"`
	WOTs          int        `json:"wots"`
	ROTLatency    TCCLatency `json:"rot_latency"`
	WOTLatency    TCCLatency `json:"wot_latency"`
	// ROTLatencyCDF and WOTLatencyCDF sample the distributions behind ROTLatency and WOTLatency
	// (as DCResult.LatencyCDF does).
	ROTLatencyCDF []CDFPoint `json:"-"`
	WOTLatencyCDF []CDFPoint `json:"-"`
	// RotRounds is the histogram of measured ROTs by rounds taken ("1", "2", "3").
	RotRounds map[string]int `json:"rot_rounds"`
	// CommitChecks counts Eiger's server-side commit checks caused by measured ROTs.
	CommitChecks int `json:"commit_checks"`
	// VisibilityLag is the visibility lag of the WOTs committed in the measurement window
	// (spec §4.3), per participant partition: from the partition committing a WOT's versions
	// locally until round-1 reads there can return them (FastCCS: ct ≤ svc over the whole
	// vector; Wren: ct ≤ LST), on that partition's clock. WOTVisibilityLag is per WOT: from its
	// coordinator's commit decision until it is visible at every participant. Both come from
	// replicas that implement tcc.VisibilityReporter, and are zero (omitted from JSON) for the
	// others and for runs on a real cluster: see VisibilityMeasured and VisibleOnCommit.
	VisibilityLag    TCCLatency `json:"visibility_lag,omitzero"`
	WOTVisibilityLag TCCLatency `json:"wot_visibility_lag,omitzero"`
	// VisibilityMeasured counts the per-partition lags behind VisibilityLag, and
	// VisibilityDropped the events replicas could not keep (their buffers are bounded; a run
	// drains them every virtual second).
	VisibilityMeasured int `json:"visibility_measured,omitempty"`
	VisibilityDropped  int `json:"visibility_dropped,omitempty"`
	// VisibleOnCommit is set for the protocols whose partitions make a version visible as they
	// commit it (ec, eiger): their visibility lag is 0 by definition, and not measured.
	VisibleOnCommit bool `json:"visible_on_commit,omitempty"`
	// ValueMismatches counts reads (measured or not) whose value is not what the version they
	// name wrote: a protocol bug, whatever the consistency model.
	ValueMismatches int `json:"value_mismatches"`
	// Checker is the TCC checker's verdict on the whole run (every transaction, measured or
	// not, plus one final read of every written key at quiescence, oracle C6).
	Checker checker.TCCReport `json:"-"`
	// ExpectAnomalies is set for protocols that promise only eventual consistency (ec): the
	// checker's findings are expected there.
	ExpectAnomalies bool             `json:"expect_anomalies"`
	Unfinished      int              `json:"unfinished"` // transactions still running when the run stopped
	Sim             sim.Stats        `json:"-"`
	WallTime        time.Duration    `json:"-"`
	VirtualUs       int64            `json:"-"`
	History         *history.History `json:"-"` // only with TCCOptions.KeepHistory
	Replay          string           `json:"replay"`
}

// MultiRoundFraction is the share of measured ROTs that took more than one round.
func (r *TCCResult) MultiRoundFraction() float64 {
	if r.ROTs == 0 {
		return 0
	}
	return 1 - float64(r.RotRounds["1"])/float64(r.ROTs)
}

// AvgRounds is the mean number of rounds of the measured ROTs.
func (r *TCCResult) AvgRounds() float64 {
	if r.ROTs == 0 {
		return 0
	}
	sum := 0
	for k, n := range r.RotRounds {
		rounds, _ := strconv.Atoi(k)
		sum += rounds * n
	}
	return float64(sum) / float64(r.ROTs)
}

// RunTCC runs protocolName, a transactional-causal protocol, with opts in the simulator.
func RunTCC(opts TCCOptions, protocolName string) (*TCCResult, error) {
	entry, err := registry.Lookup(protocolName)
	if err != nil {
		return nil, err
	}
	if entry.NewClient == nil {
		return nil, fmt.Errorf("bench: %s is not a transactional-causal protocol (it serves read-write transactions; use the default workload)", protocolName)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Topology == nil {
		opts.Topology = singleDC()
	}
	gen, err := workload.NewTCCGenerator(opts.Workload, opts.Partitions)
	if err != nil {
		return nil, err
	}
	dcs := opts.Topology.N()
	nodes := tcc.PartitionedNodes(dcs, opts.Partitions)
	layout, err := tcc.NewLayout(nodes, dcs)
	if err != nil {
		return nil, err
	}
	cfg := sim.Config{Topology: opts.Topology, Nodes: nodes, Factory: entry.New, Params: opts.Params, Seed: opts.Seed,
		Jitter: opts.Jitter, ClientHopUs: opts.ClientHopUs, IntraDCUs: opts.IntraDCUs, LAN: opts.LAN, Faults: opts.Faults, Service: opts.Service}
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", protocolName, err)
	}
	run := newTCCRun(&opts, gen)
	run.vis = newVisibility(opts.WarmupUs, opts.DurationUs-opts.CooldownUs)
	run.vis.drain(s) // turns the replicas' visibility tracking on
	wallStart := time.Now()
	for dc := range dcs {
		for i := range opts.ClientsPerDC {
			id := txn.ClientID(dc*opts.ClientsPerDC + i + 1)
			conn, err := s.Connect(id, layout.Node[dc][i%opts.Partitions])
			if err != nil {
				return nil, err
			}
			lib, err := entry.NewClient(tcc.ClientConfig{ID: id, DC: dc, Layout: layout, Transport: conn,
				Rand: rand.New(rand.NewPCG(opts.Seed, uint64(id)<<1)), Params: opts.Params})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", protocolName, err)
			}
			name := fmt.Sprintf("%s/%d", opts.Topology.DCs[dc], i)
			w := &tccWorker{run: run, conn: conn, dc: dc, rng: rand.New(rand.NewPCG(opts.Seed, uint64(id)<<1|1))}
			w.sess = tcc.NewSession(lib, conn, id, opts.Topology.DCs[dc], name, run.record)
			run.workers = append(run.workers, w)
		}
	}
	for _, w := range run.workers {
		w.busy = true
		w.conn.After(0, w.next)
	}
	for t := int64(0); t < opts.DurationUs; {
		t = min(t+1_000_000, opts.DurationUs)
		s.RunUntil(t)
		run.vis.drain(s)
		if opts.Progress != nil {
			opts.Progress(protocolName, t, opts.DurationUs)
		}
	}
	// Let running transactions finish (a healed network lets timeouts resolve them), then let
	// stabilization make everything visible and read every written key once more (oracle C6).
	for deadline := s.NowUs() + maxQuiesceUs; s.NowUs() < deadline && !run.idle(); {
		s.RunUntil(s.NowUs() + 100_000)
		run.vis.drain(s)
	}
	s.RunUntil(s.NowUs() + finalSettleUs)
	run.vis.drain(s)
	res := run.summarise(protocolName, s.NowUs())
	run.vis.summarise(res)
	res.VisibleOnCommit = visibleOnCommit[protocolName]
	final, err := run.finalReads(s, entry.NewClient, layout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", protocolName, err)
	}
	var replicas []history.Replica
	for _, nd := range s.Nodes() {
		order := s.Store(nd.ID).VersionOrder()
		if vo, ok := s.Replica(nd.ID).(protocol.VersionOrderer); ok {
			order = vo.VersionOrder()
		}
		name := fmt.Sprintf("%s/p%d", opts.Topology.DCs[nd.DC], nd.Partition)
		replicas = append(replicas, history.Replica{Name: name, VersionOrder: order})
	}
	run.check(res, entry, run.txns, replicas, final)
	res.Sim, res.VirtualUs, res.WallTime = s.Stats(), s.NowUs(), time.Since(wallStart)
	res.Replay = fmt.Sprintf("protocol=%s topology=%s partitions=%d clients-per-dc=%d seed=%d duration=%s window=[%s,%s) jitter=%g client-hop-us=%d intra-dc-us=%d lan=%+v service=%+v params=%v faults=%v workload=%+v",
		protocolName, opts.Topology.Name, opts.Partitions, opts.ClientsPerDC, opts.Seed, time.Duration(opts.DurationUs)*time.Microsecond,
		time.Duration(opts.WarmupUs)*time.Microsecond, time.Duration(opts.DurationUs-opts.CooldownUs)*time.Microsecond,
		opts.Jitter, opts.ClientHopUs, opts.IntraDCUs, opts.LAN, opts.Service, opts.Params, opts.Faults, opts.Workload)
	return res, nil
}

// finalSettleUs is how long a run lets stabilization work after its last transaction before it
// reads every written key at quiescence.
const finalSettleUs = 1_000_000

// finalReadKeys is how many keys each final read-only transaction reads.
const finalReadKeys = 16

// finalReads runs, after the workload, read-only transactions over every key a committed WOT
// wrote, from a fresh client in every datacenter, one at a time, and returns their ids: each
// must see the last version of every key (oracle C6, eventual visibility).
func (r *tccRun) finalReads(s *sim.Sim, newClient tcc.ClientFactory, layout *tcc.Layout) ([]txn.ID, error) {
	keys := r.writtenKeys()
	var ids []txn.ID
	for dc := range layout.Node {
		id := txn.ClientID(len(r.workers) + dc + 1)
		conn, err := s.Connect(id, layout.Node[dc][0])
		if err != nil {
			return nil, err
		}
		lib, err := newClient(tcc.ClientConfig{ID: id, DC: dc, Layout: layout, Transport: conn,
			Rand: rand.New(rand.NewPCG(r.opts.Seed, uint64(id)<<1)), Params: r.opts.Params})
		if err != nil {
			return nil, err
		}
		sess := tcc.NewSession(lib, conn, id, r.opts.Topology.DCs[dc], fmt.Sprintf("%s/final", r.opts.Topology.DCs[dc]), r.record)
		for start := 0; start < len(keys); start += finalReadKeys {
			batch := keys[start:min(start+finalReadKeys, len(keys))]
			done := false
			ids = append(ids, sess.NextID())
			sess.Read(batch, func(res tcc.ReadResult) { done = true })
			for deadline := s.NowUs() + maxQuiesceUs; !done && s.NowUs() < deadline; {
				s.RunUntil(s.NowUs() + 10_000)
			}
			if !done {
				return nil, fmt.Errorf("bench: a final read of %d keys did not finish within %s at quiescence", len(batch), time.Duration(maxQuiesceUs)*time.Microsecond)
			}
		}
	}
	return ids, nil
}

// check runs the TCC checker over the run's transactions txns and the replicas' version orders
// (with the final reads' ids, oracle C6) and records the verdict in res.
func (r *tccRun) check(res *TCCResult, entry registry.Entry, txns []history.Txn, replicas []history.Replica, final []txn.ID) {
	h := &history.History{Txns: txns, Replicas: replicas}
	res.Checker = checker.CheckTCC(h, checker.TCCOptions{MaxRounds: entry.MaxReadRounds, Final: final})
	res.ExpectAnomalies = entry.Eventual
	if r.opts.KeepHistory {
		res.History = h
	}
}

// writtenKeys returns every key a committed WOT of the run wrote, sorted: what the final reads
// cover.
func (r *tccRun) writtenKeys() []string {
	seen := map[string]bool{}
	var keys []string
	for _, t := range r.txns {
		if t.Status == txn.Committed {
			for _, k := range t.Writes {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// newTCCRun returns the shared state of a run of opts drawing transactions from gen. Its rounds
// histogram lists 1, 2 and 3 rounds even when none took that many, so that every run's JSON has
// the same shape.
func newTCCRun(opts *TCCOptions, gen *workload.TCCGenerator) *tccRun {
	return &tccRun{opts: opts, gen: gen, rot: hdrhistogram.New(1, 3_600_000_000, 3), wot: hdrhistogram.New(1, 3_600_000_000, 3),
		rounds: map[string]int{"1": 0, "2": 0, "3": 0}}
}

// tccRun is the state one run's workers share (all on the simulator's goroutine).
type tccRun struct {
	opts     *TCCOptions
	gen      *workload.TCCGenerator
	workers  []*tccWorker
	txns     []history.Txn
	rot, wot *hdrhistogram.Histogram
	rounds   map[string]int
	checks   int
	// mismatches counts reads whose value is not what their version's writer wrote.
	mismatches int
	rots       int
	wots       int
	vis        *visibility // nil on a real cluster
}

func (r *tccRun) record(t history.Txn) { r.txns = append(r.txns, t) }

func (r *tccRun) idle() bool {
	for _, w := range r.workers {
		if w.busy {
			return false
		}
	}
	return true
}

func (r *tccRun) measured(startUs, endUs int64) bool {
	return startUs >= r.opts.WarmupUs && endUs <= r.opts.DurationUs-r.opts.CooldownUs
}

// summarise sums the run up at nowUs (run time), once the workers are done or given up on: a
// worker still busy counts as unfinished, and the WOT it was running is recorded with an
// unknown outcome, which the checker must consider both ways.
func (r *tccRun) summarise(protocolName string, nowUs int64) *TCCResult {
	o := r.opts
	windowS := float64(o.DurationUs-o.WarmupUs-o.CooldownUs) / 1e6
	res := &TCCResult{Protocol: protocolName, Partitions: o.Partitions, Seed: o.Seed, ROTs: r.rots, WOTs: r.wots,
		ThroughputTPS: float64(r.rots+r.wots) / windowS, RotRounds: r.rounds, CommitChecks: r.checks, ValueMismatches: r.mismatches,
		ROTLatency: latencyOf(r.rot), WOTLatency: latencyOf(r.wot), ROTLatencyCDF: cdfOf(r.rot), WOTLatencyCDF: cdfOf(r.wot)}
	for _, w := range r.workers {
		if w.busy {
			res.Unfinished++
			if w.writing != nil {
				w.writing.Status, w.writing.EndUs = txn.Unknown, nowUs
				r.record(*w.writing)
			}
		}
	}
	return res
}

func latencyOf(h *hdrhistogram.Histogram) TCCLatency {
	if h.TotalCount() == 0 {
		return TCCLatency{}
	}
	return TCCLatency{Mean: h.Mean() / 1000, P50: float64(h.ValueAtQuantile(50)) / 1000, P99: float64(h.ValueAtQuantile(99)) / 1000}
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

// checkValues counts the reads whose value is not the one their version wrote.
func (r *tccRun) checkValues(reads []tcc.Read) {
	for _, rd := range reads {
		want := []byte(nil)
		if rd.Version != txn.None {
			want = valueOf(rd.Version, rd.Key, r.opts.Workload.ValueBytes)
		}
		if string(rd.Value) != string(want) {
			r.mismatches++
		}
	}
}

// tccWorker is one closed-loop client.
type tccWorker struct {
	run  *tccRun
	conn tcc.Transport // the simulator's sim.Conn, or a real client's transport on the run's clock
	dc   int
	sess *tcc.Session
	rng  *rand.Rand
	busy bool
	// writing is the WOT in flight, recorded with an unknown outcome if the run ends first.
	writing *history.Txn
}

func (w *tccWorker) next() {
	r := w.run
	startUs := w.conn.NowUs()
	if startUs >= r.opts.DurationUs {
		w.busy = false
		return
	}
	t := r.gen.Next(w.rng)
	if !t.Write {
		w.sess.Read(t.Keys, func(res tcc.ReadResult) {
			end := w.conn.NowUs()
			if res.Err == nil {
				r.checkValues(res.Reads)
			}
			if res.Err == nil && r.measured(startUs, end) {
				r.rots++
				r.rounds[strconv.Itoa(res.Rounds)]++
				r.checks += res.CommitChecks
				_ = r.rot.RecordValue(max(end-startUs, 1))
			}
			w.after(res.Err)
		})
		return
	}
	id := w.sess.NextID()
	w.writing = &history.Txn{ID: id, DC: r.opts.Topology.DCs[w.dc], Client: w.sess.Name(), StartUs: startUs, Writes: t.Keys}
	writes := make([]txn.Write, len(t.Keys))
	for i, k := range t.Keys {
		writes[i] = txn.Write{Key: k, Value: valueOf(id, k, r.opts.Workload.ValueBytes)}
	}
	w.sess.Write(writes, func(res tcc.WriteResult) {
		w.writing = nil
		end := w.conn.NowUs()
		if res.Status == txn.Committed && r.measured(startUs, end) {
			r.wots++
			_ = r.wot.RecordValue(max(end-startUs, 1))
		}
		w.after(res.Err)
	})
}

// after starts the next transaction: at once, or after a pause when the last one failed (a
// crashed or cut-off partition), so that a client does not spin.
func (w *tccWorker) after(err error) {
	if err != nil {
		w.conn.After(errorBackoffUs, w.next)
		return
	}
	w.next()
}

// visibleOnCommit lists the protocols whose partitions make a version visible to reads as they
// commit it, so that their visibility lag is 0 by definition: ec installs a write at once, and
// Eiger's reads see a version as soon as its partition receives the commit.
var visibleOnCommit = map[string]bool{"ec": true, "eiger": true}

// visibilityJoinTTLUs is how long a WOT's per-partition visibility events wait for those of its
// other participants (a crashed partition may never report) before the WOT is left out of
// WOTVisibilityLag.
const visibilityJoinTTLUs = 60_000_000

// visibility collects the visibility lags of a run from the replicas that implement
// tcc.VisibilityReporter, draining them every virtual second: per-partition lags, and per-WOT
// lags joined from its participants' events by transaction id.
type visibility struct {
	window      [2]int64 // the measurement window [start, end)
	part, wot   *hdrhistogram.Histogram
	joins       map[txn.ID]*visJoin
	buf         []tcc.Visibility
	reporters   bool
	measured    int
	dropped     int
	lastSweepUs int64
}

// visJoin is a WOT whose participants have not all reported yet.
type visJoin struct {
	firstUs       int64 // the first event's VisibleUs
	seen          int
	lastVisibleUs int64
	participants  int // from the coordinator's event (0 until it arrives)
	decidedUs     int64
}

// newVisibility measures the WOTs committed (per partition) or decided (per WOT) in
// [startUs, endUs).
func newVisibility(startUs, endUs int64) *visibility {
	return &visibility{window: [2]int64{startUs, endUs}, part: hdrhistogram.New(1, 3_600_000_000, 3), wot: hdrhistogram.New(1, 3_600_000_000, 3),
		joins: map[txn.ID]*visJoin{}}
}

// drain takes every reporting replica's events (in node order) and forgets the WOTs whose
// participants did not all report within visibilityJoinTTLUs.
func (v *visibility) drain(s *sim.Sim) {
	for _, nd := range s.Nodes() {
		rep, ok := s.Replica(nd.ID).(tcc.VisibilityReporter)
		if !ok {
			continue
		}
		v.reporters = true
		var dropped int
		v.buf, dropped = rep.DrainVisibility(v.buf[:0])
		v.dropped += dropped
		for _, ev := range v.buf {
			v.add(ev)
		}
	}
	clear(v.buf)
	if now := s.NowUs(); now-v.lastSweepUs >= visibilityJoinTTLUs {
		v.lastSweepUs = now
		for id, j := range v.joins {
			if now-j.firstUs > visibilityJoinTTLUs {
				delete(v.joins, id)
			}
		}
	}
}

func (v *visibility) inWindow(us int64) bool { return us >= v.window[0] && us < v.window[1] }

// add records one partition's event, and the WOT's lag once every participant reported.
func (v *visibility) add(ev tcc.Visibility) {
	if v.inWindow(ev.CommitUs) {
		v.measured++
		_ = v.part.RecordValue(max(ev.LagUs(), 0))
	}
	j := v.joins[ev.Tx]
	if j == nil {
		j = &visJoin{firstUs: ev.VisibleUs}
		v.joins[ev.Tx] = j
	}
	j.seen++
	j.lastVisibleUs = max(j.lastVisibleUs, ev.VisibleUs)
	if ev.Participants > 0 {
		j.participants, j.decidedUs = ev.Participants, ev.DecidedUs
	}
	if j.participants > 0 && j.seen >= j.participants {
		if v.inWindow(j.decidedUs) {
			_ = v.wot.RecordValue(max(j.lastVisibleUs-j.decidedUs, 0))
		}
		delete(v.joins, ev.Tx)
	}
}

// summarise puts the lags into res.
func (v *visibility) summarise(res *TCCResult) {
	if !v.reporters {
		return
	}
	res.VisibilityLag, res.WOTVisibilityLag = latencyOf(v.part), latencyOf(v.wot)
	res.VisibilityMeasured, res.VisibilityDropped = v.measured, v.dropped
}
