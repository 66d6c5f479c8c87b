// Package alvin implements ALVIN (spec alvin.md, after Turcu, Peluso, Palmieri and Ravindran,
// OPODIS 2014): POB, a leaderless Partial Order Broadcast that orders only conflicting
// transactions, delivering to P-CC (package pcc), which validates and applies each delivered
// transaction and answers its client at the origin.
//
// Every datacenter holds one full replica, a POB participant with index = its node id, so N is
// the number of datacenters. A transaction executes at its origin on a snapshot (pcc), and its
// commit request is broadcast with POB (§3): the origin proposes a position with its own residue
// modulo N (Rule 1) and the conflicting transactions it knows below it; every node answers with
// its own position (above every conflicting transaction it knows) and dependencies. With a fast
// quorum of identical answers in epoch 0 the origin decides at once (fast path, `alvin`);
// otherwise it takes the largest position and the union of dependencies through an accept phase,
// whose acknowledgements add late-arriving conflicts (delta-deps). A STABLE transaction is
// delivered once every dependency ordered before it by the key (pos, tid) is delivered
// (§3.6); dependencies with a larger key are dropped (the removal rule). `alvin-nf` is the same
// with fast decisions off.
//
// Recovery (§3.7): an entry that stays unstable for recover_after first asks every node for its
// decision (FETCH); if none answers, the node runs PREPARE in an epoch of its own residue and,
// from a classic quorum of PROMISEs, re-sends a STABLE, re-accepts the accepted value of the
// highest epoch, adopts a possibly fast-decided proposal (SAFE-ADOPT), restarts the proposal
// (SAFE-RESTART), or decides a NO-OP when no promiser knows the payload (its client, if waiting,
// gets an abort). Leaders and recoverers re-send their phase's message to the nodes that have not
// answered every retry; a node preempted by a higher epoch backs off for a random, growing delay
// before it recovers the entry itself, so competing recoverers do not livelock. Only a node that
// knows a transaction (its payload, or its id as a dependency) recovers it. The spec's experimental
// fallback for the ambiguous fast-mode case is not implemented: the recoverer keeps waiting for
// more promises, which the simulator's outages (they end) always provide.
//
// Garbage collection (§3.9): every report_interval each node sends every peer the transactions
// it has delivered and still keeps (DELIVERED); an entry is collected once every node reported
// it. The deciding leader re-sends its STABLE every retry to the nodes that have not reported
// the transaction, and a report also tells a node what it missed (it fetches transactions another
// node delivered), so that a STABLE lost to a node is made up for twice over. Collected ids are remembered for gc_forget (default 60s) so that late duplicates are
// ignored; a message delayed beyond that could resurrect an entry.
//
// Choices where the spec is silent: a node that receives an ACCEPT without holding the payload
// ignores it (the leader's retransmission carries the payload); a PROPOSE in a higher epoch
// replaces a value accepted in a lower one (the recoverer has proven it was not chosen); the
// leader's own messages are handled after the current input, like a peer's; the initial
// position of a restarted proposal is above every position the recoverer learned, PROMISEs
// included.
//
// Read-only transactions (param reads): "sr" (default) orders them through POB and validates them
// like updates (serializable); "eus" commits them at once at the origin from their snapshot
// (Extended Update Serializability, §1.2): updates stay serializable and every read-only
// transaction sees a prefix of its replica's delivery order, but two read-only transactions at
// two replicas may see two non-conflicting updates in opposite orders. The registry entry
// therefore declares serializable snapshots per datacenter: the checker checks the updates
// globally and each datacenter's read-only transactions with them (checker.Options.SnapshotsPerDC).
//
// Batching (spec §5.3): by default the registered protocols run behind network-level batching
// (package batch, batch_mode=network). With batch_mode=instance the origin instead collects the
// commit requests it admits during one window (batch_window_ms, by default 20/30/40/50 ms by
// cluster size) into a batch (pcc.Batcher) and broadcasts the batch as ONE POB transaction: one
// PROPOSE, one position and one ordering key (pos, batch id), its conflicts those of its
// members (the batch's read and write sets are their union), one recovery and one NO-OP for the
// whole batch (every waiting member's client then gets an abort). At delivery the members are
// handed to P-CC one after the other in batch order, each validated on its own, so a member that
// conflicts aborts alone. POB itself is unchanged: a batch is one more transaction to it, and
// the invariants of §6.1 hold over batches. The open batch is in the checkpoint.
package alvin

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/protocols/smr/pcc"
	"github.com/meridian-kv/meridian/topology"
)

func init() {
	for _, v := range []struct {
		name, what string
		fast       bool
	}{{"alvin", "fast decisions on", true}, {"alvin-nf", "fast decisions off", false}} {
		registry.Register(v.name, registry.Entry{
			Family: registry.ReadWrite,
			Description: "ALVIN: partial-order broadcast of conflicting transactions (" + v.what +
				"), P-CC certification at delivery; --set reads=sr|eus",
			// Network batching, as spec §5.3 gives every protocol (window by cluster size,
			// batch_window_ms=0 turns it off).
			New:                         batch.Wrap(newFactory(v.fast)),
			Codec:                       batch.WrapCodec(Codec),
			SerializableSnapshotsPerDC:  true,
			ReadOnlyCommitsAreSnapshots: func(p protocol.Params) bool { return p[ParamReads] == "eus" },
			ToleratesOutages:            1,
			RandomParams:                randomParams,
		})
	}
}

// randomParams draws the swarms' parameters: the read-only mode, the housekeeping and report
// periods, and a recovery timeout from one to four times the largest RTT, so that recoveries
// also run while leaders are merely slow.
func randomParams(r *rand.Rand, topo *topology.Topology, intervalMs int) protocol.Params {
	maxRTTMs := 0.0
	for dc := range topo.N() {
		maxRTTMs = max(maxRTTMs, topo.MaxRTTMs(dc))
	}
	ms := func(v float64) string { return (time.Duration(v*1000) * time.Microsecond).String() }
	p := protocol.Params{
		ParamTick:           ms(float64(intervalMs)),
		ParamReportInterval: ms(float64(20 + r.IntN(200))),
		ParamRecoverAfter:   ms(maxRTTMs * (1 + 3*r.Float64())),
	}
	if r.IntN(2) == 0 {
		p[ParamReads] = "eus"
	}
	return p
}

// Parameter names ALVIN accepts.
const (
	// ParamReads selects how read-only transactions commit: "sr" (through POB) or "eus" (locally).
	ParamReads = "reads"
	// ParamTick is the housekeeping period (default 10ms).
	ParamTick = "tick"
	// ParamRetry is how long a leader or recoverer waits before re-sending a phase's message to
	// the nodes that have not answered (default 2 × the largest RTT + 20ms).
	ParamRetry = "retry"
	// ParamRecoverAfter is how long an entry may stay unstable before this node fetches its
	// decision, and as long again before it starts recovery (default 2 × retry).
	ParamRecoverAfter = "recover_after"
	// ParamReportInterval is the period of the DELIVERED reports (default 100ms, §3.9).
	ParamReportInterval = "report_interval"
	// ParamGCForget is how long a collected transaction's id is remembered (default 60s).
	ParamGCForget = "gc_forget"
	// ParamUnsafeSkipDelivered is the negative control of spec S11: conflicts() skips the
	// transactions already delivered here, which breaks the core lemma at a lagging node.
	ParamUnsafeSkipDelivered = protocol.UnsafeParamPrefix + "skip_delivered_conflicts"
	// ParamUnsafeIgnoreDeps delivers a transaction as soon as it is stable, without waiting for
	// its dependencies: conflicting transactions are then delivered in different orders at
	// different nodes, the bug the checker must catch (TestCheckerCatchesBrokenPOB).
	ParamUnsafeIgnoreDeps = protocol.UnsafeParamPrefix + "ignore_deps"
)

// ReasonNoOp is the abort reason of a transaction that recovery decided as a NO-OP (§3.7).
const ReasonNoOp txn.AbortReason = "no-op"

// The replica's timers: housekeeping, and the window of the open batch (instance batching).
const (
	timerTick  protocol.TimerID = 1
	timerBatch protocol.TimerID = 2
)

// phase of an instance this node leads.
type phase uint8

const (
	proposing phase = iota + 1
	accepting
	decided
)

// entry is one transaction in this node's DQueue (§3.2).
type entry struct {
	t        *txn.Txn // payload; nil while only the id is known
	noop     bool
	pos      uint64
	deps     []txn.ID
	status   Status
	promised uint64 // highest epoch promised
	maxEpoch uint64 // highest epoch seen in any message for this transaction
	accEpoch uint64 // epoch of the accepted value (status Accepted)
	// The PROPOSE this node answered, for fast-decision recovery.
	hasProposal   bool
	proposedEpoch uint64
	proposedPos   uint64
	proposedDeps  []txn.ID
	delivered     bool   // handed to P-CC (or decided NO-OP), so done
	deliveredBy   uint64 // bitmap of nodes known to have delivered it
	indexed       bool   // in the conflict index
	// Recovery timing: since when the entry waits for progress, and whether it fetched already.
	sinceUs  int64
	fetched  bool
	attempts int // how often this node backed off recovering it (backOff)
}

// reply is one node's answer in a phase this node leads.
type reply struct {
	ok   bool
	pos  uint64
	deps []txn.ID
}

// lead is the state of an instance this node leads (§3.2 LeaderState).
type lead struct {
	epoch        uint64
	phase        phase
	pos0         uint64
	deps0        []txn.ID
	replies      []reply // per node, for the current phase
	count        int
	pos          uint64
	deps         []txn.ID
	noop         bool
	startUs      int64
	sentUs       int64
	havePayload  []bool // nodes known to hold the payload (acknowledged its PROPOSE)
	fastDecision bool
}

// recovery is a PREPARE this node runs.
type recovery struct {
	epoch    uint64
	promises []*Promise // per node
	count    int
	sentUs   int64
}

// delivery is a message from this replica to itself, handled after the current input.
type delivery struct{ m protocol.Message }

// counters counts this node's decisions as a leader and its recoveries (the tests read them).
type counters struct {
	FastDecisions, SlowDecisions, Recoveries, NoOps int
}

// OrderingStats implements protocol.OrderingReporter: the transactions this node decided as
// their leader, on the fast path or the classic one (spec alvin.md §7.2's fast-path share).
// ALVIN executes no dependency components, so there are none to count.
func (r *Replica) OrderingStats() protocol.OrderingStats {
	return protocol.OrderingStats{FastDecisions: r.stats.FastDecisions, SlowDecisions: r.stats.SlowDecisions}
}

// Replica is one ALVIN node: POB and its P-CC executor.
type Replica struct {
	env  protocol.Env
	exec *pcc.Executor
	// batcher collects the commit requests of one window into a batch (batch_mode=instance);
	// nil: every transaction is broadcast on its own.
	batcher *pcc.Batcher
	self    protocol.NodeID
	n       int
	all     uint64 // bitmap of every node
	cq      int
	fq      int
	fast    bool

	tickUs, retryUs, recoverUs, reportUs, forgetUs, fastTimeoutUs int64
	skipDelivered, ignoreDeps                                     bool
	// forceSlow makes the leader take the classic path after a fast quorum (tests of the slow
	// path's latency).
	forceSlow bool

	maxSeen   uint64
	entries   map[txn.ID]*entry
	readers   map[string]map[txn.ID]struct{}
	writers   map[string]map[txn.ID]struct{}
	leads     map[txn.ID]*lead
	recs      map[txn.ID]*recovery
	waiters   map[txn.ID][]txn.ID
	gone      map[txn.ID]int64 // collected, and when
	goneOrder []txn.ID
	echo      [][]txn.ID // per peer: ids of its report collected here
	reportAt  int64

	inbox []delivery
	ready []txn.ID

	stats counters
	// onDeliver, if set, observes every delivery (tests: invariants of §6.1).
	onDeliver func(tid txn.ID, committed bool)
}

// Quorums returns the classic and fast quorum sizes of §1.5 for n nodes (the leader included):
// CQ = ⌊n/2⌋+1 and, with fast decisions, the smallest FQ ≥ CQ satisfying the source's two
// constraints (f + ⌊(f+1)/2⌋ for odd n).
func Quorums(n int, fast bool) (cq, fq int) {
	cq = n/2 + 1
	if !fast {
		return cq, cq
	}
	f := (n - 1) / 2
	if n%2 == 0 {
		f = n/2 - 1
	}
	for fq = cq; fq < n; fq++ {
		if n-fq-1 < cq/2+1 && float64(n-f)/2+float64(f)-1 < float64(fq) {
			break
		}
	}
	return cq, fq
}

func newFactory(fast bool) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) { return New(cfg, env, fast) }
}

// New builds an ALVIN replica (fast decisions on or off). It needs one replica per datacenter
// and at most 64 of them.
func New(cfg protocol.Config, env protocol.Env, fast bool) (*Replica, error) {
	_, _, err := protocol.FullReplicas(cfg)
	if err != nil {
		return nil, err
	}
	p := cfg.Params
	known := append([]string{ParamReads, ParamTick, ParamRetry, ParamRecoverAfter, ParamReportInterval, ParamGCForget, ParamUnsafeSkipDelivered, ParamUnsafeIgnoreDeps}, batch.Params...)
	if err := p.CheckKnown(known, nil); err != nil {
		return nil, fmt.Errorf("alvin: %w", err)
	}
	n := len(cfg.Nodes)
	if n > 64 {
		return nil, fmt.Errorf("alvin: %d replicas; at most 64 are supported", n)
	}
	readOnly := pcc.ReadOnlyOrdered
	switch p[ParamReads] {
	case "", "sr":
	case "eus":
		readOnly = pcc.ReadOnlyLocal
	default:
		return nil, fmt.Errorf("alvin: parameter %s: %q is neither sr nor eus", ParamReads, p[ParamReads])
	}
	self := int(cfg.Self)
	maxRTTUs := int64(0)
	for dc := range n {
		maxRTTUs = max(maxRTTUs, int64(cfg.Topology.MaxRTTMs(dc)*1000))
	}
	r := &Replica{env: env, self: cfg.Self, n: n, all: 1<<n - 1, fast: fast,
		entries: map[txn.ID]*entry{}, readers: map[string]map[txn.ID]struct{}{}, writers: map[string]map[txn.ID]struct{}{},
		leads: map[txn.ID]*lead{}, recs: map[txn.ID]*recovery{}, waiters: map[txn.ID][]txn.ID{}, gone: map[txn.ID]int64{},
		echo: make([][]txn.ID, n)}
	if n == 64 {
		r.all = ^uint64(0)
	}
	r.cq, r.fq = Quorums(n, fast)
	durations := []struct {
		name string
		dst  *int64
		def  int64
	}{
		{ParamTick, &r.tickUs, 10_000},
		{ParamRetry, &r.retryUs, 2*maxRTTUs + 20_000},
		{ParamRecoverAfter, &r.recoverUs, 0},
		{ParamReportInterval, &r.reportUs, 100_000},
		{ParamGCForget, &r.forgetUs, 60_000_000},
	}
	for _, d := range durations {
		if d.name == ParamRecoverAfter {
			d.def = 2 * r.retryUs
		}
		v, err := p.Duration(d.name, d.def)
		if err != nil {
			return nil, fmt.Errorf("alvin: %w", err)
		}
		if v <= 0 {
			return nil, fmt.Errorf("alvin: parameter %s must be positive", d.name)
		}
		*d.dst = v
	}
	if r.skipDelivered, err = p.Bool(ParamUnsafeSkipDelivered, false); err != nil {
		return nil, fmt.Errorf("alvin: %w", err)
	}
	if r.ignoreDeps, err = p.Bool(ParamUnsafeIgnoreDeps, false); err != nil {
		return nil, fmt.Errorf("alvin: %w", err)
	}
	// τ_fast (§3.5): twice the RTT to the (FQ−1)-th closest node.
	rtts := make([]float64, 0, n)
	for i, nd := range cfg.Nodes {
		if i != self {
			rtts = append(rtts, cfg.Topology.RTTMs[cfg.Nodes[self].DC][nd.DC])
		}
	}
	slices.Sort(rtts)
	if r.fq > 1 {
		r.fastTimeoutUs = int64(2*rtts[r.fq-2]*1000) + r.tickUs
	}
	r.exec = pcc.New(env, "alvin", readOnly)
	windowUs, err := batch.InstanceWindowUs(cfg)
	if err != nil {
		return nil, fmt.Errorf("alvin: %w", err)
	}
	if windowUs > 0 {
		r.batcher = pcc.NewBatcher(env, self, windowUs, timerBatch)
	}
	return r, nil
}

// Start arms the housekeeping timer.
func (r *Replica) Start() { r.env.SetTimer(r.tickUs, timerTick) }

// HandleRequest serves reads from the transaction's snapshot and broadcasts commit requests
// (with instance batching, puts them in the open batch, which is broadcast when it is full).
func (r *Replica) HandleRequest(req protocol.Request) {
	if t, ok := r.exec.Admit(req); ok {
		if r.batcher != nil {
			t = r.batcher.Add(t)
		}
		if t != nil {
			r.broadcast(t)
		}
	}
	r.drain()
}

// HandleMessage processes one peer message; malformed ones are ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	if from < 0 || int(from) >= r.n || from == r.self {
		return
	}
	r.handle(from, m)
	r.drain()
}

// HandleTimer runs housekeeping (see tick), or broadcasts the open batch when its window ends.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id == timerBatch && r.batcher != nil {
		if b := r.batcher.Fire(); b != nil {
			r.broadcast(b)
		}
		r.drain()
		return
	}
	if id != timerTick {
		return
	}
	r.tick()
	r.drain()
	r.env.SetTimer(r.tickUs, timerTick)
}

func (r *Replica) send(to protocol.NodeID, m protocol.Message) {
	if to == r.self {
		r.inbox = append(r.inbox, delivery{m: m})
		return
	}
	r.env.Send(to, m)
}

// drain handles the messages this replica sent itself, then delivers what became deliverable.
func (r *Replica) drain() {
	for len(r.inbox) > 0 {
		d := r.inbox[0]
		r.inbox = r.inbox[1:]
		r.handle(r.self, d.m)
	}
	r.inbox = nil
}

func (r *Replica) handle(from protocol.NodeID, m protocol.Message) {
	if v := reflect.ValueOf(m); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return // a nil message: malformed
	}
	switch m := m.(type) {
	case *Propose:
		r.onPropose(from, m)
	case *AckPropose:
		r.onAckPropose(from, m)
	case *Accept:
		r.onAccept(from, m)
	case *AckAccept:
		r.onAckAccept(from, m)
	case *Stable:
		r.onStable(from, m)
	case *Prepare:
		r.onPrepare(from, m)
	case *Promise:
		r.onPromise(from, m)
	case *Nack:
		r.onNack(m)
	case *Fetch:
		r.onFetch(from, m)
	case *Delivered:
		r.onDelivered(from, m)
	}
	r.deliverReady()
}

// ---- Positions, keys and conflicts ----

// nextPos is the smallest position p > m with p mod N == i (§3.1).
func (r *Replica) nextPos(i protocol.NodeID, m uint64) uint64 {
	n := uint64(r.n)
	p := m + 1
	return p + (uint64(i)+n-p%n)%n
}

// keyLess compares the total-order keys (pos, tid) of §3.1.
func keyLess(pa uint64, a txn.ID, pb uint64, b txn.ID) bool {
	return pa < pb || (pa == pb && a < b)
}

func (r *Replica) entry(id txn.ID) *entry {
	e := r.entries[id]
	if e == nil {
		e = &entry{sinceUs: r.env.NowUs()}
		r.entries[id] = e
	}
	return e
}

// setPayload records t as e's payload (if e has none) and indexes e for conflict lookups.
func (r *Replica) setPayload(e *entry, t *txn.Txn) {
	if e.t == nil && t != nil {
		e.t = t
	}
	r.reindex(e)
}

// reindex keeps e in the conflict index exactly while it has a payload and is not a NO-OP.
func (r *Replica) reindex(e *entry) {
	if want := e.t != nil && !e.noop; want != e.indexed {
		e.indexed = want
		for _, rd := range e.t.Reads {
			toggle(r.readers, rd.Key, e.t.ID, want)
		}
		for _, w := range e.t.Writes {
			toggle(r.writers, w.Key, e.t.ID, want)
		}
	}
}

// unindex takes e out of the conflict index (it is being collected).
func (r *Replica) unindex(e *entry) {
	e.noop = true
	r.reindex(e)
}

// toggle adds id to (or removes it from) key's set in idx.
func toggle(idx map[string]map[txn.ID]struct{}, key string, id txn.ID, add bool) {
	s := idx[key]
	if add {
		if s == nil {
			s = map[txn.ID]struct{}{}
			idx[key] = s
		}
		s[id] = struct{}{}
		return
	}
	delete(s, id)
	if len(s) == 0 {
		delete(idx, key)
	}
}

// conflicts returns the indexed transactions that conflict with t (§0), sorted, t excluded:
// writers of its reads, readers and writers of its writes. Delivered transactions are included
// until collected (§3.9), unless the unsafe negative control skips them.
func (r *Replica) conflicts(t *txn.Txn) []txn.ID {
	var out []txn.ID
	add := func(s map[txn.ID]struct{}) {
		for id := range s {
			if id != t.ID && !(r.skipDelivered && r.entries[id].delivered) {
				out = append(out, id)
			}
		}
	}
	for _, rd := range t.Reads {
		add(r.writers[rd.Key])
	}
	for _, w := range t.Writes {
		add(r.readers[w.Key])
		add(r.writers[w.Key])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// below keeps the ids of conf whose key is below (pos, tid).
func (r *Replica) below(conf []txn.ID, pos uint64, tid txn.ID) []txn.ID {
	var out []txn.ID
	for _, id := range conf {
		if keyLess(r.entries[id].pos, id, pos, tid) {
			out = append(out, id)
		}
	}
	return out
}

// union merges sorted id lists into a new sorted list without duplicates.
func union(lists ...[]txn.ID) []txn.ID {
	var out []txn.ID
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func sameIDs(a, b []txn.ID) bool { return slices.Equal(a, b) }

// ---- Proposal phase (§3.4) ----

// broadcast is POBroadcast(T) at the origin, epoch 0.
func (r *Replica) broadcast(t *txn.Txn) {
	if _, ok := r.gone[t.ID]; ok || r.entries[t.ID] != nil {
		return // already ordered or ordering: the executor answers when it is delivered
	}
	r.propose(t, 0)
}

// propose starts the proposal phase of t in epoch as its leader.
func (r *Replica) propose(t *txn.Txn, epoch uint64) {
	e := r.entry(t.ID)
	r.setPayload(e, t)
	p0 := r.nextPos(r.self, r.maxSeen)
	d0 := r.below(r.conflicts(t), p0, t.ID)
	r.maxSeen = max(r.maxSeen, p0)
	now := r.env.NowUs()
	l := &lead{epoch: epoch, phase: proposing, pos0: p0, deps0: d0, replies: make([]reply, r.n), startUs: now, sentUs: now, havePayload: make([]bool, r.n)}
	r.leads[t.ID] = l
	m := &Propose{Tid: t.ID, Epoch: epoch, Pos: p0, Deps: d0, Payload: t}
	for i := range r.n {
		r.send(protocol.NodeID(i), m)
	}
}

func (r *Replica) onPropose(from protocol.NodeID, m *Propose) {
	if _, ok := r.gone[m.Tid]; ok || m.Payload == nil || m.Payload.ID != m.Tid || m.Pos%uint64(r.n) != uint64(from) ||
		(m.Epoch != 0 && m.Epoch%uint64(r.n) != uint64(from)) {
		return
	}
	e := r.entry(m.Tid)
	e.maxEpoch = max(e.maxEpoch, m.Epoch)
	switch {
	case e.status == StableStatus:
		r.send(from, r.stableOf(m.Tid, e))
		return
	case m.Epoch < e.promised || (e.status == Accepted && m.Epoch <= e.accEpoch):
		r.send(from, &Nack{Tid: m.Tid, Promised: e.promised})
		return
	case e.hasProposal && e.proposedEpoch == m.Epoch && e.status == Pending:
		r.send(from, &AckPropose{Tid: m.Tid, Epoch: m.Epoch, Pos: e.pos, Deps: e.deps}) // a duplicate: the same answer
		return
	}
	e.noop = false
	r.setPayload(e, m.Payload)
	e.promised = m.Epoch
	conf := r.conflicts(e.t)
	mx := uint64(0)
	for _, id := range conf {
		mx = max(mx, r.entries[id].pos)
	}
	newPos := max(r.nextPos(from, mx), m.Pos)
	newDeps := r.below(conf, newPos, m.Tid)
	e.pos, e.deps, e.status = newPos, newDeps, Pending
	e.hasProposal, e.proposedEpoch, e.proposedPos, e.proposedDeps = true, m.Epoch, m.Pos, m.Deps
	r.maxSeen = max(r.maxSeen, newPos)
	if m.Epoch > 0 {
		r.backOff(e) // a recoverer restarted it
	}
	r.send(from, &AckPropose{Tid: m.Tid, Epoch: m.Epoch, Pos: newPos, Deps: newDeps})
}

// ---- Decision phase (§3.5) ----

// current returns the instance this node leads for tid in epoch at phase ph, abandoning it if
// this node has since promised a higher epoch.
func (r *Replica) current(tid txn.ID, epoch uint64, ph phase) *lead {
	l := r.leads[tid]
	if l == nil || l.epoch != epoch || l.phase != ph {
		return nil
	}
	if e := r.entries[tid]; e == nil || e.promised > epoch {
		delete(r.leads, tid)
		return nil
	}
	return l
}

func (r *Replica) onAckPropose(from protocol.NodeID, m *AckPropose) {
	l := r.current(m.Tid, m.Epoch, proposing)
	if l == nil || l.replies[from].ok {
		return
	}
	l.replies[from] = reply{ok: true, pos: m.Pos, deps: m.Deps}
	l.havePayload[from] = true
	l.count++
	r.maxSeen = max(r.maxSeen, m.Pos)
	q := r.cq
	if r.fast && l.epoch == 0 {
		q = r.fq
	}
	if l.count >= q {
		r.decide(m.Tid, l)
	}
}

// decide ends the proposal phase with the replies in hand: the fast decision if they are a
// fast quorum of answers identical to the proposal in epoch 0, else the classic path.
func (r *Replica) decide(tid txn.ID, l *lead) {
	if r.fast && l.epoch == 0 && l.count >= r.fq && !r.forceSlow {
		same := true
		for _, rp := range l.replies {
			if rp.ok && (rp.pos != l.pos0 || !sameIDs(rp.deps, l.deps0)) {
				same = false
				break
			}
		}
		if same {
			l.phase, l.pos, l.deps, l.fastDecision = decided, l.pos0, l.deps0, true
			r.stats.FastDecisions++
			r.sendStable(tid, l)
			return
		}
	}
	var pos uint64
	var deps [][]txn.ID
	for _, rp := range l.replies {
		if rp.ok {
			pos = max(pos, rp.pos)
			deps = append(deps, rp.deps)
		}
	}
	r.startAccept(tid, l, pos, union(deps...), false)
}

// startAccept moves l to the accept phase with value (pos, deps, noop) and sends ACCEPT.
func (r *Replica) startAccept(tid txn.ID, l *lead, pos uint64, deps []txn.ID, noop bool) {
	now := r.env.NowUs()
	l.phase, l.pos, l.deps, l.noop = accepting, pos, deps, noop
	l.replies, l.count, l.sentUs = make([]reply, r.n), 0, now
	r.sendAccept(tid, l, false)
}

// sendAccept sends l's ACCEPT to every node that has not acknowledged it (all on the first
// send), with the payload to the nodes not known to hold it (to all when resending).
func (r *Replica) sendAccept(tid txn.ID, l *lead, resend bool) {
	var payload *txn.Txn
	if e := r.entries[tid]; e != nil && !l.noop {
		payload = e.t
	}
	bare := &Accept{Tid: tid, Epoch: l.epoch, Pos: l.pos, Deps: l.deps, NoOp: l.noop}
	full := &Accept{Tid: tid, Epoch: l.epoch, Pos: l.pos, Deps: l.deps, NoOp: l.noop, Payload: payload}
	for i := range r.n {
		switch {
		case l.replies[i].ok:
		case resend || !l.havePayload[i]:
			r.send(protocol.NodeID(i), full)
		default:
			r.send(protocol.NodeID(i), bare)
		}
	}
}

// ---- Accept phase and delivery (§3.6) ----

func (r *Replica) onAccept(from protocol.NodeID, m *Accept) {
	if _, ok := r.gone[m.Tid]; ok || (m.Epoch != 0 && m.Epoch%uint64(r.n) != uint64(from)) ||
		(m.Payload != nil && m.Payload.ID != m.Tid) || (m.NoOp && (m.Payload != nil || len(m.Deps) > 0)) {
		return
	}
	e := r.entry(m.Tid)
	e.maxEpoch = max(e.maxEpoch, m.Epoch)
	if m.Epoch < e.promised {
		r.send(from, &Nack{Tid: m.Tid, Promised: e.promised})
		return
	}
	if e.status == StableStatus {
		r.send(from, &AckAccept{Tid: m.Tid, Epoch: m.Epoch, Pos: e.pos, Deps: e.deps})
		return
	}
	if !m.NoOp && e.t == nil && m.Payload == nil {
		return // the leader resends with the payload
	}
	e.noop = m.NoOp
	r.setPayload(e, m.Payload)
	e.promised, e.accEpoch, e.status = m.Epoch, m.Epoch, Accepted
	e.sinceUs = r.env.NowUs()
	if m.Epoch > 0 {
		r.backOff(e) // a recoverer leads it
	}
	e.pos, e.deps = m.Pos, m.Deps
	r.maxSeen = max(r.maxSeen, m.Pos)
	if m.NoOp {
		r.send(from, &AckAccept{Tid: m.Tid, Epoch: m.Epoch, Pos: m.Pos})
		return
	}
	var delta []txn.ID
	for _, id := range r.conflicts(e.t) {
		if _, in := slices.BinarySearch(m.Deps, id); !in && keyLess(r.entries[id].pos, id, m.Pos, m.Tid) {
			delta = append(delta, id)
		}
	}
	r.send(from, &AckAccept{Tid: m.Tid, Epoch: m.Epoch, Pos: m.Pos, Deps: union(m.Deps, delta)})
}

func (r *Replica) onAckAccept(from protocol.NodeID, m *AckAccept) {
	l := r.current(m.Tid, m.Epoch, accepting)
	if l == nil || l.replies[from].ok || m.Pos != l.pos {
		return
	}
	l.replies[from] = reply{ok: true, pos: m.Pos, deps: m.Deps}
	l.havePayload[from] = true
	l.count++
	if l.count < r.cq {
		return
	}
	if !l.noop {
		deps := [][]txn.ID{l.deps}
		for _, rp := range l.replies {
			if rp.ok {
				deps = append(deps, rp.deps)
			}
		}
		l.deps = union(deps...)
	}
	l.phase = decided
	if l.noop {
		r.stats.NoOps++
	} else {
		r.stats.SlowDecisions++
	}
	r.sendStable(m.Tid, l)
}

// sendStable sends l's decision to every node, with the payload to those not known to hold it.
func (r *Replica) sendStable(id txn.ID, l *lead) {
	var payload *txn.Txn
	if e := r.entries[id]; e != nil && !l.noop {
		payload = e.t
	}
	bare := &Stable{Tid: id, Epoch: l.epoch, Pos: l.pos, Deps: l.deps, NoOp: l.noop}
	full := &Stable{Tid: id, Epoch: l.epoch, Pos: l.pos, Deps: l.deps, NoOp: l.noop, Payload: payload}
	l.sentUs = r.env.NowUs()
	for i := range r.n {
		if l.havePayload[i] {
			r.send(protocol.NodeID(i), bare)
		} else {
			r.send(protocol.NodeID(i), full)
		}
	}
}

// resendStable re-sends l's decision, with the payload, to the nodes that have not reported its
// delivery (§3.9's reports), so that a lost STABLE does not leave a node behind until another
// node's report makes it fetch the decision.
func (r *Replica) resendStable(id txn.ID, l *lead) {
	l.sentUs = r.env.NowUs()
	e := r.entries[id]
	if e == nil || e.status != StableStatus {
		return
	}
	m := r.stableOf(id, e)
	for i := range r.n {
		if e.deliveredBy&(1<<i) == 0 && protocol.NodeID(i) != r.self {
			r.send(protocol.NodeID(i), m)
		}
	}
}

// stableOf is the STABLE message for a stable entry, with its payload.
func (r *Replica) stableOf(id txn.ID, e *entry) *Stable {
	m := &Stable{Tid: id, Epoch: e.promised, Pos: e.pos, Deps: e.deps, NoOp: e.noop}
	if !e.noop {
		m.Payload = e.t
	}
	return m
}

func (r *Replica) onStable(from protocol.NodeID, m *Stable) {
	if _, ok := r.gone[m.Tid]; ok || (m.Payload != nil && m.Payload.ID != m.Tid) || (m.NoOp && (m.Payload != nil || len(m.Deps) > 0)) {
		return
	}
	e := r.entry(m.Tid)
	if e.status == StableStatus {
		if e.t == nil && !e.noop && m.Payload != nil { // the payload of a decision known already
			r.setPayload(e, m.Payload)
			r.ready = append(r.ready, m.Tid)
		}
		return
	}
	e.pos, e.deps, e.status, e.noop = m.Pos, m.Deps, StableStatus, m.NoOp
	r.setPayload(e, m.Payload)
	e.maxEpoch = max(e.maxEpoch, m.Epoch)
	e.promised = max(e.promised, m.Epoch)
	r.maxSeen = max(r.maxSeen, m.Pos)
	if l := r.leads[m.Tid]; l != nil && l.phase != decided {
		delete(r.leads, m.Tid)
	}
	delete(r.recs, m.Tid)
	if e.t == nil && !e.noop {
		r.send(from, &Fetch{Tids: []txn.ID{m.Tid}})
	}
	r.ready = append(r.ready, m.Tid)
	r.wake(m.Tid)
}

// wake queues the transactions waiting on id for another delivery attempt.
func (r *Replica) wake(id txn.ID) {
	r.ready = append(r.ready, r.waiters[id]...)
	delete(r.waiters, id)
}

// done reports whether id is delivered here (or decided NO-OP), or collected.
func (r *Replica) done(id txn.ID) bool {
	if _, ok := r.gone[id]; ok {
		return true
	}
	e := r.entries[id]
	return e != nil && e.delivered
}

// deliverReady tries to deliver every queued transaction (§3.6's delivery rule with the removal
// rule over keys), until none is left.
func (r *Replica) deliverReady() {
	for len(r.ready) > 0 {
		id := r.ready[0]
		r.ready = r.ready[1:]
		r.tryDeliver(id)
	}
	r.ready = nil
}

func (r *Replica) tryDeliver(id txn.ID) {
	e := r.entries[id]
	if e == nil || e.status != StableStatus || e.delivered || (e.t == nil && !e.noop) {
		return
	}
	if !e.noop && !r.ignoreDeps {
		for _, d := range e.deps {
			if d == id || r.done(d) {
				continue
			}
			ed := r.entries[d]
			if ed != nil && ed.status == StableStatus && (ed.noop || keyLess(e.pos, id, ed.pos, d)) {
				continue // the removal rule: d is ordered after id (or is nothing)
			}
			r.entry(d) // an unknown dependency: recovery fetches it
			r.waiters[d] = append(r.waiters[d], id)
			return
		}
	}
	e.delivered = true
	e.deliveredBy |= 1 << r.self
	committed := false
	if e.noop {
		r.exec.Abandon(e.t, ReasonNoOp) // the origin holds the payload, and only there a client waits
	} else {
		committed = r.exec.Deliver(e.t)
	}
	if r.onDeliver != nil {
		r.onDeliver(id, committed)
	}
	r.wake(id)
	r.collect(id, e)
}

// ---- Recovery (§3.7) ----

// backOff postpones this node's next recovery of e, because another node is recovering it or
// preempted this node's instance, by a random delay whose range doubles each time (up to 32
// times recover_after), so that competing recoverers (each preempting the others with a higher
// epoch) do not livelock however slow the network is.
func (r *Replica) backOff(e *entry) {
	e.fetched = true
	e.attempts++
	e.sinceUs = r.env.NowUs() + r.env.Rand().Int64N(r.recoverUs<<min(e.attempts, 5))
}

// recover starts PREPARE for id in the smallest epoch of this node's residue above every epoch
// seen for it.
func (r *Replica) recover(id txn.ID, e *entry) {
	n := uint64(r.n)
	base := max(e.promised, e.maxEpoch) + 1
	epoch := base + (uint64(r.self)+n-base%n)%n
	delete(r.leads, id)
	r.recs[id] = &recovery{epoch: epoch, promises: make([]*Promise, r.n), sentUs: r.env.NowUs()}
	r.stats.Recoveries++
	m := &Prepare{Tid: id, Epoch: epoch}
	for i := range r.n {
		r.send(protocol.NodeID(i), m)
	}
}

func (r *Replica) onPrepare(from protocol.NodeID, m *Prepare) {
	if _, ok := r.gone[m.Tid]; ok || m.Epoch == 0 || m.Epoch%uint64(r.n) != uint64(from) {
		return
	}
	e := r.entry(m.Tid)
	e.maxEpoch = max(e.maxEpoch, m.Epoch)
	if m.Epoch < e.promised {
		r.send(from, &Nack{Tid: m.Tid, Promised: e.promised})
		return
	}
	e.promised = m.Epoch
	r.backOff(e) // another node recovers it
	p := &Promise{Tid: m.Tid, Epoch: m.Epoch, Status: e.status, Pos: e.pos, Deps: e.deps, NoOp: e.noop, AcceptedEpoch: e.accEpoch,
		HasProposal: e.hasProposal, ProposedEpoch: e.proposedEpoch, ProposedPos: e.proposedPos, ProposedDeps: e.proposedDeps, Payload: e.t}
	if e.t == nil && e.status == Unknown {
		p.Pos, p.Deps = 0, nil
	}
	r.send(from, p)
}

func (r *Replica) onPromise(from protocol.NodeID, m *Promise) {
	rec := r.recs[m.Tid]
	if rec == nil || rec.epoch != m.Epoch || rec.promises[from] != nil || (m.Payload != nil && m.Payload.ID != m.Tid) {
		return
	}
	rec.promises[from] = m
	rec.count++
	r.maxSeen = max(r.maxSeen, m.Pos, m.ProposedPos)
	if rec.count >= r.cq {
		r.decideRecovery(m.Tid, rec)
	}
}

// decideRecovery acts on the promises in hand (§3.7), or keeps waiting in the ambiguous case.
func (r *Replica) decideRecovery(id txn.ID, rec *recovery) {
	e := r.entry(id)
	var best *Promise
	for _, p := range rec.promises {
		if p == nil {
			continue
		}
		r.setPayload(e, p.Payload)
		switch {
		case p.Status == StableStatus:
			delete(r.recs, id)
			l := &lead{epoch: rec.epoch, phase: decided, pos: p.Pos, deps: p.Deps, noop: p.NoOp, havePayload: make([]bool, r.n)}
			r.sendStable(id, l)
			return
		case p.Status == Accepted && (best == nil || p.AcceptedEpoch > best.AcceptedEpoch):
			best = p
		}
	}
	if best != nil {
		r.leadAccept(id, rec, best.Pos, best.Deps, best.NoOp)
		return
	}
	if e.t == nil {
		r.leadAccept(id, rec, 0, nil, true)
		return
	}
	if r.fast {
		switch pos0, deps0, verdict := r.fastVerdict(rec); verdict {
		case adopt:
			r.leadAccept(id, rec, pos0, deps0, false)
			return
		case wait:
			return
		}
	}
	delete(r.recs, id)
	r.propose(e.t, rec.epoch)
}

// leadAccept makes this node the leader of id in rec's epoch, accepting (pos, deps, noop).
func (r *Replica) leadAccept(id txn.ID, rec *recovery, pos uint64, deps []txn.ID, noop bool) {
	delete(r.recs, id)
	l := &lead{epoch: rec.epoch, havePayload: make([]bool, r.n)}
	r.leads[id] = l
	r.startAccept(id, l, pos, deps, noop)
}

type verdict uint8

const (
	restart verdict = iota
	adopt
	wait
)

// fastVerdict decides, from promises that show no accepted or stable value, whether epoch 0's
// proposal may have been fast-decided (§3.7 fast mode): adopt it if a fast quorum of identical
// answers is visible, restart if one cannot exist, wait otherwise.
func (r *Replica) fastVerdict(rec *recovery) (uint64, []txn.ID, verdict) {
	var orig *Promise
	for _, p := range rec.promises {
		if p != nil && p.HasProposal && p.ProposedEpoch == 0 {
			orig = p
			break
		}
	}
	if orig == nil {
		return 0, nil, restart // nobody in hand saw epoch 0's proposal (or a recoverer restarted already)
	}
	origin := protocol.NodeID(orig.ProposedPos % uint64(r.n))
	agree, heard := 0, 0
	for i, p := range rec.promises {
		switch {
		case p == nil:
		case protocol.NodeID(i) == origin:
			return 0, nil, restart // the original leader had not decided, and now never will
		case p.HasProposal && p.ProposedEpoch > 0:
			return 0, nil, restart // an earlier recoverer restarted: it proved there was no fast decision
		default:
			heard++
			if p.HasProposal && p.Status == Pending && p.Pos == p.ProposedPos && sameIDs(p.Deps, p.ProposedDeps) {
				agree++
			}
		}
	}
	unheard := r.n - 1 - heard
	switch {
	case agree >= r.fq-1:
		return orig.ProposedPos, orig.ProposedDeps, adopt
	case agree+unheard < r.fq-1:
		return 0, nil, restart
	}
	return 0, nil, wait
}

func (r *Replica) onNack(m *Nack) {
	e := r.entries[m.Tid]
	if e == nil {
		return
	}
	e.maxEpoch = max(e.maxEpoch, m.Promised)
	if l := r.leads[m.Tid]; l != nil && l.phase != decided && l.epoch < m.Promised {
		delete(r.leads, m.Tid)
		r.backOff(e)
	}
	if rec := r.recs[m.Tid]; rec != nil && rec.epoch < m.Promised {
		delete(r.recs, m.Tid)
		r.backOff(e)
	}
}

func (r *Replica) onFetch(from protocol.NodeID, m *Fetch) {
	for _, id := range m.Tids {
		if e := r.entries[id]; e != nil && e.status == StableStatus && (e.t != nil || e.noop) {
			r.send(from, r.stableOf(id, e))
		}
	}
}

// ---- Garbage collection (§3.9) ----

func (r *Replica) onDelivered(from protocol.NodeID, m *Delivered) {
	var fetch []txn.ID
	for _, id := range m.Tids {
		if _, ok := r.gone[id]; ok {
			r.echo[from] = append(r.echo[from], id)
			continue
		}
		e := r.entry(id)
		e.deliveredBy |= 1 << from
		if e.status != StableStatus || (e.t == nil && !e.noop) {
			fetch = append(fetch, id)
		}
		r.collect(id, e)
	}
	for _, id := range m.Gone {
		if e := r.entries[id]; e != nil {
			e.deliveredBy = r.all // the sender collected it: every node delivered it
			r.collect(id, e)
		}
	}
	if len(fetch) > 0 {
		r.send(from, &Fetch{Tids: fetch})
	}
}

// collect forgets e once every node delivered it (§3.9).
func (r *Replica) collect(id txn.ID, e *entry) {
	if !e.delivered || e.deliveredBy&r.all != r.all {
		return
	}
	r.unindex(e)
	delete(r.entries, id)
	delete(r.leads, id)
	delete(r.recs, id)
	r.gone[id] = r.env.NowUs()
	r.goneOrder = append(r.goneOrder, id)
}

// Quiescent implements protocol.Quiescer: this node has nothing left to do once it holds no
// DQueue entry and runs no recovery. An entry stays until every node has reported delivering it
// (collect), and until then its leader re-sends the STABLE and the laggard fetches it; so a
// node that has not delivered a transaction another node delivered, or whose delivery is not yet
// known to all, keeps the end-of-run wait going. Version counts alone cannot tell: two nodes may
// have delivered different non-conflicting transactions and hold as many versions.
func (r *Replica) Quiescent() bool {
	return len(r.entries) == 0 && len(r.leads) == 0 && len(r.recs) == 0 && (r.batcher == nil || r.batcher.Len() == 0)
}

// tick retransmits, times out the fast path, recovers stuck entries, reports deliveries and
// forgets old collected ids, each in a deterministic order.
func (r *Replica) tick() {
	now := r.env.NowUs()
	leadsDue := selectIDs(r.leads, func(_ txn.ID, l *lead) bool {
		return now-l.sentUs >= r.retryUs || (l.phase == proposing && r.fast && l.epoch == 0 && l.count >= r.cq && now-l.startUs >= r.fastTimeoutUs)
	})
	for _, id := range leadsDue {
		l := r.current(id, r.leads[id].epoch, r.leads[id].phase) // nil once a higher epoch was promised here
		switch {
		case l == nil:
		case l.phase == proposing && r.fast && l.epoch == 0 && l.count >= r.cq && now-l.startUs >= r.fastTimeoutUs:
			r.decide(id, l) // A14: fewer than FQ answered in time
		case l.phase == proposing && now-l.sentUs >= r.retryUs:
			l.sentUs = now
			m := &Propose{Tid: id, Epoch: l.epoch, Pos: l.pos0, Deps: l.deps0, Payload: r.entries[id].t}
			for i := range r.n {
				if !l.replies[i].ok {
					r.send(protocol.NodeID(i), m)
				}
			}
		case l.phase == accepting && now-l.sentUs >= r.retryUs:
			l.sentUs = now
			r.sendAccept(id, l, true)
		case l.phase == decided && now-l.sentUs >= r.retryUs:
			r.resendStable(id, l)
		}
	}
	for _, id := range selectIDs(r.recs, func(_ txn.ID, rec *recovery) bool { return now-rec.sentUs >= r.retryUs }) {
		rec := r.recs[id]
		rec.sentUs = now
		m := &Prepare{Tid: id, Epoch: rec.epoch}
		for i := range r.n {
			if rec.promises[i] == nil {
				r.send(protocol.NodeID(i), m)
			}
		}
	}
	var fetch []txn.ID
	stuck := selectIDs(r.entries, func(id txn.ID, e *entry) bool {
		if e.delivered || r.recs[id] != nil || now-e.sinceUs < r.recoverUs || (e.status == StableStatus && (e.t != nil || e.noop)) {
			return false
		}
		l := r.leads[id]
		return l == nil || l.phase == decided
	})
	for _, id := range stuck {
		e := r.entries[id]
		e.sinceUs = now
		if !e.fetched || e.status == StableStatus { // a decision without its payload: fetch only
			e.fetched = true
			fetch = append(fetch, id)
			continue
		}
		e.fetched = false
		r.recover(id, e)
	}
	if len(fetch) > 0 {
		for i := range r.n {
			if protocol.NodeID(i) != r.self {
				r.send(protocol.NodeID(i), &Fetch{Tids: fetch})
			}
		}
	}
	if now >= r.reportAt {
		r.reportAt = now + r.reportUs
		r.report()
	}
	for len(r.goneOrder) > 0 && now-r.gone[r.goneOrder[0]] >= r.forgetUs {
		delete(r.gone, r.goneOrder[0])
		r.goneOrder = r.goneOrder[1:]
	}
}

// report sends every peer the DELIVERED report of §3.9.
func (r *Replica) report() {
	mine := selectIDs(r.entries, func(_ txn.ID, e *entry) bool { return e.delivered })
	for i := range r.n {
		to := protocol.NodeID(i)
		if to == r.self || (len(mine) == 0 && len(r.echo[i]) == 0) {
			continue
		}
		gone := union(r.echo[i])
		r.echo[i] = nil
		r.send(to, &Delivered{Tids: mine, Gone: gone})
	}
}

// sortedIDs returns the keys of m in increasing order: outputs never depend on map iteration.
func sortedIDs[V any](m map[txn.ID]V) []txn.ID { return slices.Sorted(maps.Keys(m)) }

// selectIDs returns, in increasing order, the keys of m whose entries satisfy keep: which keys
// are selected does not depend on map iteration, so neither does what the caller does with them.
func selectIDs[V any](m map[txn.ID]V, keep func(txn.ID, V) bool) []txn.ID {
	var ids []txn.ID
	for id, v := range m {
		if keep(id, v) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
