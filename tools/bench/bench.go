// Package bench runs T-YCSB workloads against a protocol in the simulator and summarises them
// per datacenter: commit latency, throughput, abort rate, the latency lower bound and the
// checker's verdict over the recorded history. `meridian bench` is a thin layer over it.
package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/topology/lowerbound"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// Options describe a benchmark run; Defaults gives the main job's settings.
type Options struct {
	Topology     *topology.Topology
	Protocols    []string
	ClientsPerDC int
	// ClientDCs, if set, names the only datacenters that run clients (E3.7: only C issues).
	ClientDCs []string
	// LatencyIncludesAborts averages the latency of aborted transactions too (Chapter 3's
	// convention, spec GAP-E2); by default only committed ones count (Chapter 4's).
	LatencyIncludesAborts bool
	Workload              workload.Config
	// RatePerClient > 0 makes clients open-loop: each starts a transaction every
	// 1/RatePerClient seconds, or at once when the previous one overran its slot (spec
	// GAP-E13). 0 means closed loop, back to back.
	RatePerClient float64
	DurationUs    int64
	WarmupUs      int64 // transactions that start earlier are checked but not measured
	Seed          uint64
	Jitter        float64 // scale of the topology's RTT standard deviations (1 = as measured)
	// JitterCorrelationUs is the correlation time of each link's jitter
	// (sim.Config.JitterCorrelationUs); 0 draws every message's jitter independently.
	JitterCorrelationUs int64
	ClockOffsetUs       []int64   // per datacenter; nil = synchronised
	ClockDriftPPM       []float64 // per datacenter; nil = no drift
	Faults              []sim.Fault
	Params              protocol.Params
	Service             sim.Service
	Chaos               sim.Chaos
	ClientHopUs         int64
	// KeepHistory keeps the recorded history in the Result (for --history).
	KeepHistory bool
	// Progress, if set, is called about once per virtual second.
	Progress func(protocolName string, virtualUs, totalUs int64)
}

// Defaults returns the main job: aws-helios, 12 closed-loop clients per datacenter, T-YCSB
// (50,000 keys, Zipfian 0.99, 5 ops, 50% reads), the five core protocols, 60 virtual seconds,
// the topology's jitter with a correlation time of topology.DefaultJitterCorrelationUs.
func Defaults() Options {
	topo, _ := topology.Preset("aws-helios")
	return Options{
		Topology:            topo,
		Protocols:           []string{"helios-0", "helios-1", "helios-2", "helios-b", "mf"},
		ClientsPerDC:        12,
		Workload:            workload.DefaultConfig(),
		DurationUs:          60_000_000,
		WarmupUs:            2_000_000,
		Seed:                1,
		Jitter:              1,
		JitterCorrelationUs: topology.DefaultJitterCorrelationUs,
		ClientHopUs:         sim.DefaultClientHopUs,
	}
}

// Validate reports the first invalid option.
func (o *Options) Validate() error {
	switch {
	case o.Topology == nil:
		return errors.New("bench: no topology")
	case len(o.Protocols) == 0:
		return errors.New("bench: no protocols")
	case o.ClientsPerDC < 1:
		return fmt.Errorf("bench: clients per datacenter must be at least 1, got %d", o.ClientsPerDC)
	case o.DurationUs <= 0:
		return errors.New("bench: duration must be positive")
	case o.WarmupUs < 0 || o.WarmupUs >= o.DurationUs:
		return errors.New("bench: warm-up must be at least 0 and shorter than the duration")
	case o.RatePerClient < 0:
		return errors.New("bench: rate must not be negative")
	case o.Jitter < 0:
		return errors.New("bench: jitter must not be negative")
	case o.JitterCorrelationUs < 0:
		return errors.New("bench: the jitter's correlation time must not be negative")
	}
	for _, p := range o.Protocols {
		if _, err := registry.Lookup(p); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	for _, dc := range o.ClientDCs {
		if _, ok := o.Topology.Index(dc); !ok {
			return fmt.Errorf("bench: client datacenter %q is not in topology %s", dc, o.Topology.Name)
		}
	}
	return o.Workload.Validate()
}

// Latency summarises commit latencies in milliseconds.
type Latency struct {
	Mean, P50, P99, StdDev float64
}

// DCResult is one datacenter's measurements.
type DCResult struct {
	Name         string
	Latency      Latency
	LowerBoundMs float64
	CommittedTPS float64
	OpsPerSec    float64
	AbortRate    float64
	// ImmediateFraction is the share of measured transactions decided within 1 ms (plus the
	// client's round trip) of their commit request (Message Futures' Immediate Commit Zone).
	ImmediateFraction float64
	Committed         int
	Aborted           int
	// LatencyCDF samples the distribution of the latencies behind Latency (cdfPercentiles:
	// about 50 points, finer in the tail), read from the run's histogram; empty when nothing
	// was measured.
	LatencyCDF []CDFPoint
}

// CDFPoint is one point of a latency distribution: Fraction of the measured transactions took
// at most Ms milliseconds.
type CDFPoint struct {
	Ms, Fraction float64
}

// Result is one protocol's run.
type Result struct {
	Protocol   string
	Topology   string
	Seed       uint64
	DCs        []DCResult
	Checker    checker.Report
	Unfinished int // transactions still waiting for a decision when the run stopped
	Sim        sim.Stats
	WallTime   time.Duration
	VirtualUs  int64
	History    *history.History // only with Options.KeepHistory
	Replay     string           // the sim configuration, for reproducing the run
}

// maxQuiesceUs bounds how long a run waits, after its clients stop, for replicas to converge.
const maxQuiesceUs = 120_000_000

// Run runs one protocol with opts in the simulator and checks the history.
func Run(opts Options, protocolName string) (*Result, error) {
	entry, err := registry.Lookup(protocolName)
	if err != nil {
		return nil, err
	}
	run, err := newRun(&opts)
	if err != nil {
		return nil, err
	}
	cfg := sim.Config{Topology: opts.Topology, Factory: entry.New, Params: opts.Params, Seed: opts.Seed,
		Jitter: opts.Jitter, JitterCorrelationUs: opts.JitterCorrelationUs, ClockOffsetUs: opts.ClockOffsetUs, ClockDriftPPM: opts.ClockDriftPPM, ClientHopUs: opts.ClientHopUs,
		Faults: opts.Faults, Service: opts.Service, Chaos: opts.Chaos}
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", protocolName, err)
	}
	wallStart := time.Now()
	for _, nd := range s.Nodes() {
		if !run.hasClients(nd.DC) {
			continue
		}
		for i := range opts.ClientsPerDC {
			id := txn.ClientID(nd.DC*opts.ClientsPerDC + i + 1)
			conn, err := s.Connect(id, nd.ID)
			if err != nil {
				return nil, err
			}
			run.addWorker(conn, id, nd.DC, i)
		}
	}
	run.start()
	for t := int64(0); t < opts.DurationUs; {
		t = min(t+1_000_000, opts.DurationUs)
		s.RunUntil(t)
		if opts.Progress != nil {
			opts.Progress(protocolName, t, opts.DurationUs)
		}
	}
	quiesce(s, run)
	var replicas []history.Replica
	for _, nd := range s.Nodes() {
		replicas = append(replicas, history.Replica{Name: opts.Topology.DCs[nd.DC], VersionOrder: s.Store(nd.ID).VersionOrder()})
	}
	res := run.finish(protocolName, replicas)
	res.Sim, res.VirtualUs, res.Replay = s.Stats(), s.NowUs(), describe(cfg, opts)
	res.WallTime = time.Since(wallStart)
	return res, nil
}

// newRun validates opts and prepares the state the workers share.
func newRun(opts *Options) (*runState, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	gen, err := workload.NewGenerator(opts.Workload)
	if err != nil {
		return nil, err
	}
	bound, err := lowerbound.MAO(opts.Topology.RTTMs)
	if err != nil {
		return nil, fmt.Errorf("bench: lower bound: %w", err)
	}
	return &runState{opts: opts, gen: gen, boundMs: bound.LatencyMs,
		stats: newCollector(opts.Topology.N(), opts.WarmupUs, opts.DurationUs, opts.LatencyIncludesAborts, opts.ClientHopUs)}, nil
}

// hasClients reports whether datacenter dc runs clients.
func (r *runState) hasClients(dc int) bool {
	return r.opts.ClientDCs == nil || slices.Contains(r.opts.ClientDCs, r.opts.Topology.DCs[dc])
}

// addWorker adds client number i of datacenter dc, with id, over conn.
func (r *runState) addWorker(conn Conn, id txn.ClientID, dc, i int) {
	dcName := r.opts.Topology.DCs[dc]
	w := &worker{run: r, dc: dc, conn: conn, rng: rand.New(rand.NewPCG(r.opts.Seed, uint64(id)))}
	w.sess = client.NewSession(conn, id, dcName, fmt.Sprintf("%s/%d", dcName, i), r.record)
	r.workers = append(r.workers, w)
}

// start sets time 0 of the run and starts every worker on its connection's loop.
func (r *runState) start() {
	if len(r.workers) > 0 {
		r.originUs = r.workers[0].conn.NowUs()
	}
	for _, w := range r.workers {
		w.busy.Store(true)
		// Open-loop clients start at random phases of their pacing slot: started together they
		// would stay in lockstep, phase-locked to anything periodic (MF's sends).
		startUs := int64(0)
		if rate := r.opts.RatePerClient; rate > 0 {
			startUs = w.rng.Int64N(int64(1e6/rate) + 1)
		}
		w.conn.After(startUs, w.next)
	}
}

// finish checks the history against the replicas' version orders and summarises the run.
func (r *runState) finish(protocolName string, replicas []history.Replica) *Result {
	opts := r.opts
	res := &Result{Protocol: protocolName, Topology: opts.Topology.Name, Seed: opts.Seed}
	for _, w := range r.workers {
		if w.busy.Load() {
			res.Unfinished++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := &history.History{Txns: r.txns, Replicas: replicas}
	res.Checker = checker.Check(h)
	if opts.KeepHistory {
		res.History = h
	}
	res.DCs = r.stats.summarise(opts.Topology, r.boundMs, opts.Workload.OpsPerTxn)
	return res
}

// quiesce lets outstanding transactions finish and the logs settle after the clients stop
// starting new transactions: it runs until every client is idle and every replica has installed
// the same number of transactions (then one more second for stragglers), or gives up after
// maxQuiesceUs (a datacenter that never returns blocks Helios-0 and MF forever).
func quiesce(s *sim.Sim, run *runState) {
	deadline := s.NowUs() + maxQuiesceUs
	for s.NowUs() < deadline {
		s.RunUntil(s.NowUs() + 100_000)
		if run.idle() && converged(s) {
			s.RunUntil(s.NowUs() + 1_000_000)
			return
		}
	}
}

func converged(s *sim.Sim) bool {
	nodes := s.Nodes()
	for _, nd := range nodes[1:] {
		if s.Store(nd.ID).Seq() != s.Store(nodes[0].ID).Seq() {
			return false
		}
	}
	return true
}

func describe(cfg sim.Config, opts Options) string {
	return fmt.Sprintf("topology=%s seed=%d clients-per-dc=%d duration=%s warmup=%s rate=%g jitter=%g jitter-correlation=%s clock-offsets-us=%v clock-drift-ppm=%v faults=%v chaos=%+v params=%v service=%+v workload=%+v",
		cfg.Topology.Name, cfg.Seed, opts.ClientsPerDC, time.Duration(opts.DurationUs)*time.Microsecond,
		time.Duration(opts.WarmupUs)*time.Microsecond, opts.RatePerClient, cfg.Jitter,
		time.Duration(cfg.JitterCorrelationUs)*time.Microsecond, cfg.ClockOffsetUs, cfg.ClockDriftPPM,
		cfg.Faults, cfg.Chaos, cfg.Params, cfg.Service, opts.Workload)
}
