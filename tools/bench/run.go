package bench

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// maxQuiesceUs bounds how long a run waits, after its clients stop, for them to finish and for
// replicas to converge.
const maxQuiesceUs = 120_000_000

// settleUs is how long a run lets the protocol work after quiescence before the workload's
// final checks (stabilization making the last writes visible, straggling log records).
const settleUs = 1_000_000

// errorBackoffUs is how long a client waits after a failed request before its next transaction.
const errorBackoffUs = 100_000

// runState is what one run's workers share, whatever the driver. In the simulator they all run
// on one goroutine; against a real cluster on their connections' goroutines, hence the lock.
type runState struct {
	opts   *Options
	entry  registry.Entry
	layout *tcc.Layout
	// placement is the deployment of a PartitionedReadWrite protocol (nil for the others, which
	// have a layout instead).
	placement *partitioned.Placement
	wl        workload.Run
	workers   []*worker

	mu sync.Mutex
	// txns holds the recorded transactions compactly (a long run records millions).
	txns  history.Log
	stats *collector
}

// newRun validates opts for protocol e deployed as layout (or placement, for the
// PartitionedReadWrite family), and prepares the state the workers share.
func newRun(opts *Options, e registry.Entry, layout *tcc.Layout, placement *partitioned.Placement) (*runState, error) {
	if err := opts.Validate(); err != nil { // opts.Protocols names e: Validate checks the family
		return nil, err
	}
	boundMs := make([]float64, opts.Topology.N())
	if e.Promises() == registry.Serializable {
		bound, err := maoLatencyMs(opts.Topology.RTTMs)
		if err != nil {
			return nil, fmt.Errorf("bench: lower bound: %w", err)
		}
		boundMs = bound
	}
	r := &runState{opts: opts, entry: e, layout: layout, placement: placement,
		stats: newCollector(boundMs, opts.WarmupUs, opts.DurationUs-opts.CooldownUs, opts.LatencyIncludesAborts, opts.ClientHopUs)}
	r.txns.CheckOnly = !opts.KeepHistory // the checker's fields only, unless the history is kept
	wl, err := opts.Workload.NewRun(workload.RunInfo{Protocol: e, Topology: opts.Topology, Layout: layout, Placement: placement, Seed: opts.Seed,
		Params: opts.Params, ClientsPerDC: opts.ClientsPerDC, WindowUs: [2]int64{opts.WarmupUs, opts.DurationUs - opts.CooldownUs}, Record: r.record})
	if err != nil {
		return nil, err
	}
	r.wl = wl
	return r, nil
}

func (r *runState) record(t history.Txn) {
	if t.Status == txn.Committed && len(t.Writes) == 0 && r.entry.ReadOnlyCommitsAreSnapshots != nil && r.entry.ReadOnlyCommitsAreSnapshots(r.opts.Params) {
		t.Snapshot = true // a local read-only commit (registry.Entry.ReadOnlyCommitsAreSnapshots)
	}
	r.mu.Lock()
	r.txns.Append(t)
	r.mu.Unlock()
}

// hasClients reports whether datacenter dc runs clients.
func (r *runState) hasClients(dc int) bool {
	return r.opts.ClientDCs == nil || slices.Contains(r.opts.ClientDCs, r.opts.Topology.DCs[dc])
}

// clientID is the simulator's id of client number i of datacenter dc: the main clients of every
// datacenter first (ids 1 to DCs×ClientsPerDC, as in earlier releases), then the workload's
// extra clients; datacenter DCs (one past the last) numbers the clients connected at
// quiescence.
func (r *runState) clientID(dc, i int) txn.ClientID {
	n, per := r.opts.Topology.N(), r.opts.ClientsPerDC
	if i < per && dc < n {
		return txn.ClientID(dc*per + i + 1)
	}
	extra := r.opts.Workload.ExtraClientsPerDC()
	if dc == n {
		return txn.ClientID(n*(per+extra) + i + 1)
	}
	return txn.ClientID(n*per + dc*extra + (i - per) + 1)
}

// clientName names client number i of datacenter dc.
func (r *runState) clientName(dc, i int) string {
	return fmt.Sprintf("%s/%d", r.opts.Topology.DCs[dc], i)
}

// addWorker adds the client ci to the run.
func (r *runState) addWorker(ci workload.ClientInfo) error {
	cl, err := r.wl.NewClient(ci)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(r.opts.Seed, r.opts.Workload.ClientStream(ci.ID)))
	r.workers = append(r.workers, &worker{run: r, dc: ci.DC, conn: ci.Conn, client: cl, rng: rng})
	return nil
}

// start starts every worker on its connection's loop, at time 0 of the run.
func (r *runState) start() {
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

func (r *runState) idle() bool {
	for _, w := range r.workers {
		if w.busy.Load() {
			return false
		}
	}
	return true
}

// finish accounts for the workers still busy at nowUs (abandon runs f on a worker's loop),
// summarises the run and checks the history: the recorded transactions and replicas, the
// replicas' final version orders, with the workload's final reads.
func (r *runState) finish(res *Result, replicas []history.Replica, final []txn.ID) {
	opts := r.opts
	res.Protocol, res.Workload, res.Topology, res.Seed = r.entry.Name, opts.Workload.Name(), opts.Topology.Name, opts.Seed
	res.Consistency = r.entry.Promises()
	if r.placement != nil {
		res.Partitions = r.placement.Partitions()
	} else {
		res.Partitions = r.layout.Partitions()
	}
	res.Metrics = r.wl.Metrics()
	r.mu.Lock()
	defer r.mu.Unlock()
	res.DCs = r.stats.summarise(opts.Topology)
	// The clients, and through their connections the simulator, are no longer needed: let the
	// collector have them while the history is checked.
	r.workers, r.wl = nil, nil
	model := checker.Serializable
	if res.Consistency != registry.Serializable {
		model = checker.Causal
	}
	res.Checker = check(&r.txns, replicas, checker.Options{Model: model, MaxRounds: r.entry.MaxReadRounds, Final: final,
		SnapshotsPerDC: r.entry.SerializableSnapshotsPerDC})
	if opts.KeepHistory {
		res.History = &history.History{Txns: r.txns.Txns(), Replicas: replicas}
	}
	r.txns = history.Log{}
}

// check is checker.CheckLog, cheaper when the replicas agree. Under Serializable a replica
// whose version orders equal the first replica's can only repeat the first one's findings (they
// hold the same versions in the same orders), so such a history is checked against the first
// replica alone (on another goroutine, while the others are compared with it), and in full only
// if they differ or that check finds an anomaly, to report it at every replica.
func check(txns *history.Log, replicas []history.Replica, opts checker.Options) checker.Report {
	if opts.Model != checker.Serializable || len(replicas) < 2 {
		return checker.CheckLog(txns, replicas, opts)
	}
	firstOnly := make(chan checker.Report, 1)
	go func() { firstOnly <- checker.CheckLog(txns, replicas[:1], opts) }()
	agree := true
	for _, rep := range replicas[1:] {
		agree = agree && (sameMap(rep.VersionOrder, replicas[0].VersionOrder) ||
			maps.EqualFunc(rep.VersionOrder, replicas[0].VersionOrder, slices.Equal))
	}
	if report := <-firstOnly; agree && report.OK {
		return report
	}
	return checker.CheckLog(txns, replicas, opts)
}

// sameMap reports whether a and b are one map, not merely equal ones: the simulator hands
// replicas whose stores agree one shared map (versionOrders).
func sameMap(a, b map[string][]txn.ID) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// abandonBusy counts the workers whose last transaction never finished and lets the workload
// account for them at nowUs; on runs f on a worker's connection loop.
func (r *runState) abandonBusy(nowUs int64, on func(workload.Conn, func())) int {
	n := 0
	for _, w := range r.workers {
		if w.busy.Load() {
			n++
			on(w.conn, func() { w.client.Abandon(nowUs) })
		}
	}
	return n
}

// worker paces one client: it starts the client's transactions one at a time until the run's
// duration is over, back to back (closed loop) or at a rate (open loop).
type worker struct {
	run          *runState
	dc           int
	conn         workload.Conn
	client       workload.Client
	rng          *rand.Rand
	busy         atomic.Bool
	started      bool  // it has started a transaction
	startUs      int64 // when the current attempt started, in run time
	firstStartUs int64 // when the current transaction's first attempt started
	attempt      int   // the current attempt, from 1
	nextSlotUs   int64 // open loop: the earliest start of the next transaction, in run time
}

// next starts the next transaction: at once (closed loop), or at the start of the next pacing
// slot, or at once if the last transaction overran its slot (open loop, spec GAP-E13).
func (w *worker) next() {
	now := w.conn.NowUs()
	if now >= w.run.opts.DurationUs {
		w.busy.Store(false)
		return
	}
	if w.started && w.nextSlotUs > now {
		w.busy.Store(false)
		w.conn.After(w.nextSlotUs-now, w.next)
		return
	}
	w.busy.Store(true)
	w.started, w.startUs, w.firstStartUs, w.attempt = true, now, now, 1
	if rate := w.run.opts.RatePerClient; rate > 0 {
		// Slots last 1/rate on average, each drawn from [0.5, 1.5)/rate: exactly periodic
		// clients would stay phase-locked to anything periodic in the system (MF's sends).
		w.nextSlotUs = now + int64((0.5+w.rng.Float64())*1e6/rate)
	}
	w.client.Next(w.rng, w.done)
}

// done records an attempt's outcome and starts the next transaction: at once, or after a pause
// when a request failed (an unreachable node), so that the client does not spin. With retries,
// an aborted transaction runs again instead, until the run's duration is over.
func (w *worker) done(o workload.Outcome) {
	now := w.conn.NowUs()
	if !o.OwnMetrics {
		w.run.mu.Lock()
		w.run.stats.add(w.dc, w.startUs, now, o)
		if o.Status == txn.Committed {
			w.run.stats.addCommitted(w.dc, w.firstStartUs, now, w.attempt)
		}
		w.run.mu.Unlock()
	}
	if o.Status == txn.Aborted && o.Err == nil && w.run.opts.Retry && now < w.run.opts.DurationUs {
		w.conn.After(w.backoffUs(), w.retry)
		w.attempt++
		return
	}
	if o.Err != nil {
		w.conn.After(errorBackoffUs, w.next)
		return
	}
	w.next()
}

// maxRetryBackoffUs caps the exponential growth of a retry's backoff.
const maxRetryBackoffUs = 10_000_000

// backoffUs is the pause before the next attempt of a transaction whose attempt w.attempt just
// aborted: exponential backoff with full jitter (uniform in [0, min(RetryBackoffUs·2^(n-1),
// 10 s)] after the n-th abort), so that transactions that abort each other do not retry in
// lockstep; 0 without a backoff.
func (w *worker) backoffUs() int64 {
	base := w.run.opts.RetryBackoffUs
	if base == 0 {
		return 0
	}
	ceiling := base << min(w.attempt-1, 20)
	if ceiling <= 0 || ceiling > maxRetryBackoffUs {
		ceiling = maxRetryBackoffUs
	}
	return w.rng.Int64N(ceiling + 1)
}

// retry starts the next attempt of the current transaction.
func (w *worker) retry() {
	w.startUs = w.conn.NowUs()
	w.client.Retry(w.done)
}

// replicaName names a replica in the history: "V" for a full replica of datacenter V,
// "V/p2" for partition 2 of a partitioned store.
func replicaName(topoDCs []string, nd protocol.Node, partitioned bool) string {
	if partitioned {
		return fmt.Sprintf("%s/p%d", topoDCs[nd.DC], nd.Partition)
	}
	return topoDCs[nd.DC]
}

// describe renders the run's configuration, for replaying it.
func describe(opts *Options, protocolName string) string {
	aligned := ""
	if opts.AlignedTimers {
		aligned = " aligned-timers=true"
	}
	return fmt.Sprintf("protocol=%s workload=%s topology=%s partitions=%d seed=%d clients-per-dc=%d duration=%s window=[%s,%s) rate=%g retry=%t retry-backoff=%s jitter=%g jitter-correlation=%s clock-offsets-us=%v clock-drift-ppm=%v faults=%v chaos=%+v params=%v service=%+v client-hop-us=%d intra-dc-us=%d lan=%+v workload-config=%+v%s",
		protocolName, opts.Workload.Name(), opts.Topology.Name, opts.Partitions, opts.Seed, opts.ClientsPerDC,
		time.Duration(opts.DurationUs)*time.Microsecond, time.Duration(opts.WarmupUs)*time.Microsecond,
		time.Duration(opts.DurationUs-opts.CooldownUs)*time.Microsecond, opts.RatePerClient, opts.Retry,
		time.Duration(opts.RetryBackoffUs)*time.Microsecond, opts.Jitter,
		time.Duration(opts.JitterCorrelationUs)*time.Microsecond, opts.ClockOffsetUs, opts.ClockDriftPPM,
		opts.Faults, opts.Chaos, opts.Params, opts.Service, opts.ClientHopUs, opts.IntraDCUs, opts.LAN, opts.Workload, aligned)
}
