// Package epaxos implements Egalitarian Paxos state-machine replication (Moraru, Andersen,
// Kaminsky, "There Is More Consensus in Egalitarian Parliaments", SOSP 2013) as the ALVIN
// evaluation's leaderless competitor (spec alvin.md §5.2), built from the paper and the spec. Each
// command is one transaction's certification request (its read and write sets); execution
// validates and applies it through the shared P-CC layer (package pcc), so EPaxos differs from
// ALVIN and Multi-Paxos only in how it orders transactions. Read-only transactions are ordered
// too (pcc.ReadOnlyOrdered, spec A23).
//
// Every datacenter holds one full replica, and every replica leads the commands its clients
// submit, in its own instance space (Instance: replica, slot):
//
//   - Phase 1 (PreAccept). The leader gives the command seq = 1 + the largest seq of the
//     instances it knows that interfere with it, and deps = those instances, and sends PreAccept
//     to every replica. A replica raises seq and adds the interfering instances it knows, stores
//     the command PreAccepted and answers with its attributes, saying whether they are unchanged.
//   - Fast path. With FQ = f + ⌊(f+1)/2⌋ replies (the leader's included, spec §1.5) all unchanged,
//     at ballot 0 only, the leader commits at once (two message delays).
//   - Phase 2 (Accept). Otherwise, once CQ = f+1 replies are in (or FQ did not arrive within
//     fast_timeout), the leader takes the largest seq and the union of the deps, has a classic
//     quorum accept them, and commits.
//   - Commit. The decided value goes to every replica. A replica holding an instance committed
//     answers any later PreAccept, Accept or Prepare of it with the Commit; nothing changes a
//     committed instance again (a late or duplicated Commit or Accept is ignored). The replica
//     that decided retransmits the Commit until every replica acknowledged it (CommitAck), so a
//     replica that missed it learns it even if nothing it executes depends on the instance.
//   - Execution. A committed instance is executed once every instance reachable through deps is
//     committed: the dependency graph is split into strongly connected components (Tarjan),
//     which run in reverse topological order, each component's members by (seq, replica, slot);
//     each command goes to pcc.Executor.Deliver, which validates, applies, and answers the client
//     at the origin. An instance that blocks execution is watched and recovered if it stays
//     uncommitted.
//
// Interference is the spec's conflict relation (§0): two commands interfere if one writes a key
// the other reads or writes; read-only commands never interfere. Dependencies come from a
// per-key index of the latest instances, which keeps only what a new command must name: an
// instance drops out of a key's index once a committed writer of that key, itself still in the
// index, lists it in its deps, because a new command that touches the key names that writer (or
// what covers it later), and the path through the writer's committed deps reaches the dropped
// instance. This is the paper's "latest interfering instance" optimisation restated so that it
// holds per key with reads and writes and never relies on an instance that may yet become a
// no-op.
//
// Recovery (the paper's Explicit Prepare) with ballots. A replica that needs an instance (its
// execution waits on it, or it is its own leader's and was preempted) and has not seen it
// committed within recover_after sends Prepare at a ballot of its own (b ≡ its index mod N,
// b > 0). With promises from a classic quorum it:
//
//  1. adopts the value of the highest-ballot Accepted reply, and runs Phase 2 with it;
//  2. else, if FQ−1 replicas other than the original leader report that they PreAccepted the
//     ballot-0 proposal unchanged (which, with the leader, is a whole fast quorum of agreement:
//     the evidence a fast commit would have left), runs Phase 2 with those attributes;
//  3. else, if a fast commit is impossible — the original leader itself answered without having
//     committed (it can no longer fast-commit after promising), or some reply was PreAccepted at a
//     ballot above 0 other than by a TryPreAccept (an earlier recoverer found a fast commit
//     impossible), or a TryPreAccept was refused with proof (below), or the unchanged replies
//     plus the replicas not yet heard from cannot reach FQ−1 — restarts Phase 1 at its ballot
//     (no fast path) with the command, starting from the union of every reported attribute set,
//     or decides a no-op if no reply knows the command;
//  4. else (a fast commit of the ballot-0 proposal may have happened, with its remaining
//     evidence at replicas not heard from) TryPreAccept, the EPaxos paper's optimisation: it asks
//     the replicas that promised, itself included, to pre-accept the ballot-0 proposal's value.
//     A replica does unless it knows an interfering command δ that the value does not order: δ is
//     not reachable from the value's deps, and δ is not committed here with the instance
//     reachable from its deps. Once a classic quorum holds the value (the ballot-0 replicas that
//     pre-accepted it unchanged, and those that pre-accepted it now or for an earlier recoverer,
//     "tried"), the recoverer runs Phase 2 with it. That is safe whether or not the value was
//     fast-committed: any command committed without the instance in its deps got its
//     attributes from a quorum, one of whose replicas is such a holder, which saw δ before the
//     instance and so either ordered the two when it pre-accepted the value at ballot 0, or
//     refused the TryPreAccept. A refusal because δ is committed, with both searches over
//     committed instances only, proves the value was never committed (a committed value would
//     be ordered with δ) and sends the recoverer to step 3; a refusal because δ is uncommitted
//     makes the replica watch δ, and the recoverer retries every retry period (and keeps asking
//     the replicas not heard from, whose promises can still settle it by steps 2 and 3).
//
// Step 4 only waits while an uncommitted conflicting command is undecided; two such recoveries
// blocking each other (each instance conflicting with the other's value) wait as before
// TryPreAccept, for the replicas not heard from. A replica's tried value is reported as such in
// its promises, so a later recoverer neither counts it as ballot-0 evidence nor as a proof
// against a fast commit. Steps 2 and 3 are spec §3.7's SAFE-ADOPT and SAFE-RESTART (rule A9).
// A client whose instance ends as a no-op gets an abort (ReasonNoOp).
//
// Durability. The sans-IO replica keeps its state in memory. In the simulator a crashed
// datacenter freezes with its state; the network server logs every input to Pebble and fsyncs
// before it releases the effects of that input (server/loop.go), and a restarted node replays
// the log into a fresh replica. So any reply a replica sent (a PreAcceptReply that counted
// towards a fast path, a promise) is rebuilt after a restart: it never answers a later
// conflicting PreAccept as if it had not seen the first (TestRestartedReplicaRemembersPreAccept).
//
// Garbage collection (gc.go): an instance every replica has executed is forgotten gc_after later.
//
// Batching (spec alvin.md §5.3): by default the registered protocol runs behind network-level
// batching (package batch, batch_mode=network). With batch_mode=instance a replica instead
// collects the commit requests it admits during one window (batch_window_ms, by default
// 20/30/40/50 ms by cluster size) into a batch (pcc.Batcher) and proposes the batch as ONE
// instance whose command is the batch: its read and write sets are the union of its members',
// so its attributes are computed as for any command, and its deps are the union of what
// interferes with any member. Executing the instance hands the members to P-CC one after the
// other in batch order, each validated on its own (a conflicting member aborts alone); a batch
// whose instance ends as a no-op aborts every member. The open batch is in the checkpoint.
package epaxos

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/protocols/smr/pcc"
)

func init() {
	registry.Register("epaxos", registry.Entry{
		Family:      registry.ReadWrite,
		Description: "EPaxos SMR (Moraru et al., SOSP'13): leaderless PreAccept/Accept/Commit with fast quorum f+⌊(f+1)/2⌋, Explicit Prepare recovery, execution by SCCs with P-CC validation",
		// Network batching, as spec alvin.md §5.3 gives every competitor (window by cluster size,
		// batch_window_ms=0 turns it off).
		New:              batch.Wrap(New),
		Codec:            batch.WrapCodec(Codec),
		ToleratesOutages: 1,
	})
}

// Parameter names EPaxos accepts.
const (
	// ParamRecoverAfter is how long an instance a replica needs may stay uncommitted before the
	// replica recovers it (default 2 × the largest RTT + 200 ms); later attempts back off.
	ParamRecoverAfter = "recover_after"
	// ParamRetry is the retransmission period of a phase's requests to the replicas that have
	// not answered (default 2 × the largest RTT + 20 ms).
	ParamRetry = "retry"
	// ParamFastTimeout is how long an original leader waits for a whole fast quorum once it has
	// a classic quorum, before it takes the slow path (default 2 × its RTT to the (FQ−1)-th
	// closest replica + 10 ms; it matters only where FQ > CQ, N ≥ 7).
	ParamFastTimeout = "fast_timeout"
	// ParamGCAfter is how long after every replica has executed an instance this replica
	// forgets it (default 10s; see gc.go).
	ParamGCAfter = "gc_after"
	// ParamUnsafeFastQuorum overrides the fast-quorum size (leader included): the negative
	// control. 1 lets a leader commit on its own attributes, so conflicting commands of two
	// leaders may commit without either depending on the other.
	ParamUnsafeFastQuorum = protocol.UnsafeParamPrefix + "fast_quorum"
	// ParamUnsafeTryIgnoresConflicts makes a replica pre-accept every TryPreAccept without
	// looking for conflicting commands: the negative control of recovery step 4, under which a
	// recovery may commit a command that no fast quorum chose, unordered with a conflicting one.
	ParamUnsafeTryIgnoresConflicts = protocol.UnsafeParamPrefix + "try_ignores_conflicts"
)

// ReasonNoOp is the abort a client gets when recovery replaced its command by a no-op: the
// command's leader failed before any quorum learned it.
const ReasonNoOp txn.AbortReason = "recovered-as-no-op"

// The replica's timers: housekeeping, and the window of the open batch (instance batching).
const (
	timerTick  protocol.TimerID = 1
	timerBatch protocol.TimerID = 2
)

const tickUs = 5_000 // housekeeping period: retransmissions, fast-path timeouts, recovery

// Quorums returns the classic quorum CQ = ⌊N/2⌋+1 (f+1 for odd N) and the fast quorum
// FQ = f + ⌊(f+1)/2⌋ with f = ⌊(N−1)/2⌋, at least CQ (spec §1.5; both count the leader).
func Quorums(n int) (cq, fq int) {
	f := (n - 1) / 2
	cq = n/2 + 1
	return cq, max(cq, f+(f+1)/2)
}

// entry is one instance at one replica.
type entry struct {
	status  Status
	ballot  uint64 // highest ballot promised or seen
	vballot uint64 // ballot of the value held (PreAccepted or Accepted)
	noop    bool   // the value is the no-op
	// cmd is the instance's command once known, kept when the value becomes a no-op so that the
	// origin can answer its client.
	cmd *txn.Txn
	Attrs
	// unchanged: this replica answered the PreAccept of ballot vballot with the leader's
	// attributes unchanged.
	unchanged bool
	// tried: the value is the ballot-0 proposal's, pre-accepted at vballot > 0 from a
	// TryPreAccept.
	tried   bool
	indexed bool   // cmd is in the per-key index
	drive   *drive // this replica leads the instance (original leader or recoverer)
	// recoverAtUs and backoffUs schedule recovery while the instance is watched.
	recoverAtUs, backoffUs int64
	marks                  visitMarks // the execution algorithm's (exec.go)
}

type phase uint8

const (
	preparing phase = iota + 1
	preAccepting
	accepting
)

// drive is the state of a replica leading one instance at one ballot: collecting PreAccept
// replies, Accept replies, or Prepare promises.
type drive struct {
	ballot  uint64
	phase   phase
	replied []bool
	count   int
	noop    bool
	cmd     *txn.Txn
	// proposal is what Phase 1 sent (retransmitted unchanged); acc the union of the replies
	// (Phase 1) or the value being accepted (Phase 2).
	proposal       Attrs
	acc            Attrs
	allUnchanged   bool
	fastDeadlineUs int64
	retryAtUs      int64
	promises       []*PrepareReply
	// trying: recovery sends TryPreAccept with cmd and acc (the ballot-0 proposal) to the
	// replicas that promised; holders are those that pre-accepted it so; impossible: one
	// refused with a conflict that proves the proposal was never committed.
	trying     bool
	holders    []bool
	impossible bool
}

// announcement is a Commit this replica sent, until every replica acknowledged it.
type announcement struct {
	acked     []bool
	unacked   int
	retryAtUs int64
}

// keyIndex lists the instances of one key that a new interfering command must name.
type keyIndex struct {
	writers, readers []Instance
}

// Replica is one EPaxos replica: its instances, the per-key index, the execution state and the
// P-CC executor.
type Replica struct {
	env  protocol.Env
	exec *pcc.Executor
	// batcher collects the commit requests of one window into a batch (batch_mode=instance);
	// nil: every transaction is proposed on its own.
	batcher *pcc.Batcher
	nodeOf  []protocol.NodeID // replica of each datacenter
	dcOf    map[protocol.NodeID]int
	self    int
	n       int
	cq, fq  int

	recoverAfterUs, retryUs, fastTimeoutUs, gcAfterUs int64
	tryIgnoresConflicts                               bool // ParamUnsafeTryIgnoresConflicts

	insts    map[Instance]*entry
	nextSlot uint64
	keys     map[string]*keyIndex
	// watch holds the uncommitted instances this replica drives or needs; waiters maps an
	// uncommitted instance to the committed ones whose execution waits for it.
	watch   map[Instance]bool
	waiters map[Instance][]Instance
	// announced maps an instance this replica committed and announced to the replicas that have
	// not acknowledged the Commit yet (retransmitted every retry period).
	announced map[Instance]*announcement
	gc        gcState
	search    uint64 // generation of the execution algorithm's last search

	stats counters
}

// New builds an EPaxos replica. It needs exactly one replica per datacenter and accepts the
// parameters recover_after, retry, fast_timeout, gc_after (Go durations), unsafe_fast_quorum and
// unsafe_try_ignores_conflicts.
func New(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
	nodeOf, self, err := protocol.FullReplicas(pc)
	if err != nil {
		return nil, err
	}
	p := pc.Params
	known := append([]string{ParamRecoverAfter, ParamRetry, ParamFastTimeout, ParamGCAfter, ParamUnsafeFastQuorum, ParamUnsafeTryIgnoresConflicts}, batch.Params...)
	if err := p.CheckKnown(known, nil); err != nil {
		return nil, fmt.Errorf("epaxos: %w", err)
	}
	n := len(nodeOf)
	maxRTTUs := int64(0)
	for dc := range n {
		maxRTTUs = max(maxRTTUs, int64(pc.Topology.MaxRTTMs(dc)*1000))
	}
	cq, fq := Quorums(n)
	rtts := make([]float64, 0, n)
	for dc := range n {
		if dc != self {
			rtts = append(rtts, pc.Topology.RTTMs[self][dc])
		}
	}
	slices.Sort(rtts)
	fastDefault := int64(10_000)
	if fq >= 2 {
		fastDefault += int64(2 * rtts[fq-2] * 1000)
	}
	r := &Replica{env: env, nodeOf: nodeOf, dcOf: map[protocol.NodeID]int{}, self: self, n: n, cq: cq, fq: fq,
		insts: map[Instance]*entry{}, keys: map[string]*keyIndex{}, watch: map[Instance]bool{},
		waiters: map[Instance][]Instance{}, announced: map[Instance]*announcement{}, stats: counters{SCCSizes: map[int]int{}}, gc: newGCState(n)}
	for dc, id := range nodeOf {
		r.dcOf[id] = dc
	}
	for _, x := range []struct {
		name string
		def  int64
		dst  *int64
	}{
		{ParamRecoverAfter, 2*maxRTTUs + 200_000, &r.recoverAfterUs},
		{ParamRetry, 2*maxRTTUs + 20_000, &r.retryUs},
		{ParamFastTimeout, fastDefault, &r.fastTimeoutUs},
		{ParamGCAfter, 10_000_000, &r.gcAfterUs},
	} {
		v, err := p.Duration(x.name, x.def)
		if err != nil {
			return nil, fmt.Errorf("epaxos: %w", err)
		}
		if v <= 0 {
			return nil, fmt.Errorf("epaxos: parameter %s must be positive", x.name)
		}
		*x.dst = v
	}
	if r.fq, err = p.Int(ParamUnsafeFastQuorum, fq); err != nil {
		return nil, fmt.Errorf("epaxos: %w", err)
	}
	if r.fq < 1 || r.fq > n {
		return nil, fmt.Errorf("epaxos: parameter %s must lie in [1, %d]", ParamUnsafeFastQuorum, n)
	}
	if r.tryIgnoresConflicts, err = p.Bool(ParamUnsafeTryIgnoresConflicts, false); err != nil {
		return nil, fmt.Errorf("epaxos: %w", err)
	}
	r.exec = pcc.New(env, "epaxos", pcc.ReadOnlyOrdered)
	windowUs, err := batch.InstanceWindowUs(pc)
	if err != nil {
		return nil, fmt.Errorf("epaxos: %w", err)
	}
	if windowUs > 0 {
		r.batcher = pcc.NewBatcher(env, self, windowUs, timerBatch)
	}
	return r, nil
}

// Start arms the housekeeping timer.
func (r *Replica) Start() { r.env.SetTimer(tickUs, timerTick) }

// HandleRequest serves reads at the transaction's snapshot (pcc) and orders commit requests
// (with instance batching, puts them in the open batch, which is proposed when it is full).
func (r *Replica) HandleRequest(req protocol.Request) {
	if t, ok := r.exec.Admit(req); ok {
		if r.batcher != nil {
			t = r.batcher.Add(t)
		}
		if t != nil {
			r.propose(t)
		}
	}
}

// HandleMessage processes one peer message; malformed ones are ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	dc, ok := r.dcOf[from]
	if !ok || dc == r.self || !r.wellFormed(dc, m) {
		return
	}
	if inst, ok := instanceOf(m); ok && r.forgotten(inst) {
		if _, commit := m.(*Commit); commit {
			r.send(dc, &CommitAck{Inst: inst})
		}
		return // executed everywhere and forgotten: nothing to change, nobody to tell
	}
	switch m := m.(type) {
	case *PreAccept:
		r.onPreAccept(dc, m)
	case *PreAcceptReply:
		r.onPreAcceptReply(dc, m)
	case *Accept:
		r.onAccept(dc, m)
	case *AcceptReply:
		r.onAcceptReply(dc, m)
	case *Commit:
		r.commit(m.Inst, r.entry(m.Inst), m.NoOp, m.Cmd, m.Attrs, false)
		r.send(dc, &CommitAck{Inst: m.Inst})
	case *CommitAck:
		r.onCommitAck(dc, m.Inst)
	case *Progress:
		r.onProgress(dc, m.UpTo)
	case *Prepare:
		r.onPrepare(dc, m)
	case *PrepareReply:
		r.onPrepareReply(dc, m)
	case *TryPreAccept:
		r.onTryPreAccept(dc, m)
	case *TryPreAcceptReply:
		r.onTryPreAcceptReply(dc, m)
	}
}

// HandleTimer runs housekeeping over the watched instances, in instance order: the original
// leader's fast-path timeout, retransmission of every phase's requests, and recovery; or
// proposes the open batch when its window ends.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id == timerBatch && r.batcher != nil {
		if b := r.batcher.Fire(); b != nil {
			r.propose(b)
		}
		return
	}
	if id != timerTick {
		return
	}
	now := r.env.NowUs()
	watched := make([]Instance, 0, len(r.watch))
	for inst := range r.watch {
		watched = append(watched, inst)
	}
	slices.SortFunc(watched, Instance.cmp)
	for _, inst := range watched {
		e := r.insts[inst]
		if e.status >= Committed {
			delete(r.watch, inst)
			continue
		}
		d := e.drive
		switch {
		case d != nil && d.phase == preAccepting && d.ballot == 0 && d.count >= r.cq && now >= d.fastDeadlineUs:
			r.startAccept(inst, e, d.ballot, false, d.cmd, d.acc)
		case d != nil && now >= d.retryAtUs:
			d.retryAtUs = now + r.retryUs
			r.retransmit(inst, e)
		case d == nil && now >= e.recoverAtUs:
			r.backOff(e)
			r.startRecovery(inst, e)
		}
	}
	r.reannounce(now)
	r.collect(now)
	r.env.SetTimer(tickUs, timerTick)
}

// Quiescent reports whether this replica has nothing in flight: every Commit it announced was
// acknowledged, and no instance it knows is waiting to be decided or executed
// (protocol.Quiescer).
func (r *Replica) Quiescent() bool {
	return len(r.announced) == 0 && len(r.watch) == 0 && len(r.waiters) == 0 && (r.batcher == nil || r.batcher.Len() == 0)
}

// counters are a replica's ordering figures: how the instances it led at ballot 0 were decided,
// how often it recovered, and the sizes of the strongly connected components it executed (spec
// §5.2 "instrument").
type counters struct {
	FastCommits int
	SlowCommits int
	// Recoveries counts the Prepare rounds this replica started; NoOps the instances it
	// committed as no-ops.
	Recoveries int
	NoOps      int
	// Tries counts the recoveries that sent TryPreAccept (recovery step 4).
	Tries int
	// SCCSizes counts executed components by their number of instances.
	SCCSizes map[int]int
}

// OrderingStats reports the fast and slow decisions of the instances this replica led at
// ballot 0 and the sizes of the components it executed (protocol.OrderingReporter).
func (r *Replica) OrderingStats() protocol.OrderingStats {
	s := protocol.OrderingStats{FastDecisions: r.stats.FastCommits, SlowDecisions: r.stats.SlowCommits}
	s.Add(protocol.OrderingStats{ComponentSizes: r.stats.SCCSizes})
	return s
}

// ---- Phase 1 ----

// propose starts Phase 1 for t in this replica's next instance, at ballot 0.
func (r *Replica) propose(t *txn.Txn) {
	r.nextSlot++
	inst := Instance{Replica: uint32(r.self), Slot: r.nextSlot}
	e := r.entry(inst)
	r.watchInstance(inst, e)
	r.startPreAccept(inst, e, 0, t, Attrs{})
}

// startPreAccept makes this replica the leader of inst at ballot b with command t: its
// attributes are hint raised by what interferes with t here; it pre-accepts them itself and
// asks every other replica.
func (r *Replica) startPreAccept(inst Instance, e *entry, b uint64, t *txn.Txn, hint Attrs) {
	e.cmd = t
	r.index(inst, e)
	attrs := r.attributes(inst, t, hint)
	e.status, e.ballot, e.vballot, e.noop, e.Attrs, e.unchanged, e.tried = PreAccepted, b, b, false, attrs, true, false
	now := r.env.NowUs()
	d := &drive{ballot: b, phase: preAccepting, replied: make([]bool, r.n), count: 1, cmd: t, proposal: attrs,
		acc: attrs, allUnchanged: true, fastDeadlineUs: now + r.fastTimeoutUs, retryAtUs: now + r.retryUs}
	d.replied[r.self] = true
	e.drive = d
	r.broadcast(&PreAccept{Inst: inst, Ballot: b, Cmd: t, Attrs: attrs})
	r.decidePreAccept(inst, e)
}

// refuse answers a request about inst at ballot b that this replica must not act on, and
// reports whether it did: with the Commit if inst is committed here (nothing changes it again),
// or with nack(promised ballot) if b is below the ballot it promised.
func (r *Replica) refuse(from int, inst Instance, e *entry, b uint64, nack func(promised uint64) protocol.Message) bool {
	switch {
	case e.status >= Committed:
		r.send(from, r.commitOf(inst, e))
	case b < e.ballot:
		r.send(from, nack(e.ballot))
	default:
		return false
	}
	return true
}

func (r *Replica) onPreAccept(from int, m *PreAccept) {
	e := r.entry(m.Inst)
	if r.refuse(from, m.Inst, e, m.Ballot, func(b uint64) protocol.Message { return &PreAcceptReply{Inst: m.Inst, Ballot: b} }) {
		return
	}
	switch {
	case e.vballot == m.Ballot && e.status == Accepted:
		return // the leader of this ballot is past Phase 1
	case e.vballot == m.Ballot && e.status == PreAccepted && !e.tried:
		// A retransmission or duplicate: the same answer, never a recomputed one.
		r.send(from, &PreAcceptReply{Inst: m.Inst, Ballot: m.Ballot, OK: true, Unchanged: e.unchanged, Attrs: e.Attrs})
		return
	}
	r.preempt(e, m.Ballot)
	e.cmd = m.Cmd
	r.index(m.Inst, e)
	attrs := r.attributes(m.Inst, m.Cmd, m.Attrs)
	unchanged := attrs.Seq == m.Seq && len(attrs.Deps) == len(m.Deps)
	e.status, e.ballot, e.vballot, e.noop, e.Attrs, e.unchanged, e.tried = PreAccepted, m.Ballot, m.Ballot, false, attrs, unchanged, false
	r.send(from, &PreAcceptReply{Inst: m.Inst, Ballot: m.Ballot, OK: true, Unchanged: unchanged, Attrs: attrs})
}

func (r *Replica) onPreAcceptReply(from int, m *PreAcceptReply) {
	e, d := r.driven(m.Inst, m.Ballot, m.OK)
	if d == nil || d.phase != preAccepting || d.replied[from] {
		return
	}
	d.replied[from] = true
	d.count++
	d.acc = Attrs{Seq: max(d.acc.Seq, m.Seq), Deps: union(d.acc.Deps, m.Deps)}
	d.allUnchanged = d.allUnchanged && m.Unchanged
	r.decidePreAccept(m.Inst, e)
}

// decidePreAccept takes the fast path (ballot 0, FQ unchanged replies) or the slow path (CQ
// replies, not all unchanged or at a recovery ballot) once the replies allow it.
func (r *Replica) decidePreAccept(inst Instance, e *entry) {
	d := e.drive
	switch {
	case d.ballot == 0 && d.allUnchanged && d.count >= r.fq:
		r.stats.FastCommits++
		r.commit(inst, e, false, d.cmd, d.proposal, true)
	case d.count >= r.cq && (d.ballot > 0 || !d.allUnchanged):
		r.startAccept(inst, e, d.ballot, false, d.cmd, d.acc)
	}
}

// ---- Phase 2 ----

// startAccept makes this replica run Phase 2 of inst at ballot b with the given value.
func (r *Replica) startAccept(inst Instance, e *entry, b uint64, noop bool, t *txn.Txn, attrs Attrs) {
	if noop {
		t = nil
	}
	r.accept(inst, e, b, noop, t, attrs)
	d := &drive{ballot: b, phase: accepting, replied: make([]bool, r.n), count: 1, noop: noop, cmd: t, acc: attrs,
		retryAtUs: r.env.NowUs() + r.retryUs}
	d.replied[r.self] = true
	e.drive = d
	r.broadcast(&Accept{Inst: inst, Ballot: b, NoOp: noop, Cmd: t, Attrs: attrs})
	r.decideAccept(inst, e)
}

// accept stores an accepted value at ballot b.
func (r *Replica) accept(inst Instance, e *entry, b uint64, noop bool, t *txn.Txn, attrs Attrs) {
	r.preempt(e, b)
	if t != nil {
		e.cmd = t
		r.index(inst, e)
	}
	e.status, e.ballot, e.vballot, e.noop, e.Attrs, e.unchanged, e.tried = Accepted, b, b, noop, attrs, false, false
}

func (r *Replica) onAccept(from int, m *Accept) {
	e := r.entry(m.Inst)
	if r.refuse(from, m.Inst, e, m.Ballot, func(b uint64) protocol.Message { return &AcceptReply{Inst: m.Inst, Ballot: b} }) {
		return
	}
	r.accept(m.Inst, e, m.Ballot, m.NoOp, m.Cmd, m.Attrs)
	r.send(from, &AcceptReply{Inst: m.Inst, Ballot: m.Ballot, OK: true})
}

func (r *Replica) onAcceptReply(from int, m *AcceptReply) {
	e, d := r.driven(m.Inst, m.Ballot, m.OK)
	if d == nil || d.phase != accepting || d.replied[from] {
		return
	}
	d.replied[from] = true
	d.count++
	r.decideAccept(m.Inst, e)
}

func (r *Replica) decideAccept(inst Instance, e *entry) {
	if d := e.drive; d.count >= r.cq {
		if d.ballot == 0 {
			r.stats.SlowCommits++
		}
		r.commit(inst, e, d.noop, d.cmd, d.acc, true)
	}
}

// ---- Commit ----

// commit decides inst here (once: a committed instance never changes) and, if announce, sends
// the Commit to every other replica; then executes what it can.
func (r *Replica) commit(inst Instance, e *entry, noop bool, t *txn.Txn, attrs Attrs, announce bool) {
	if e.status >= Committed {
		return
	}
	if announce {
		a := &announcement{acked: make([]bool, r.n), unacked: r.n - 1, retryAtUs: r.env.NowUs() + r.retryUs}
		a.acked[r.self] = true
		if a.unacked > 0 {
			r.announced[inst] = a
		}
		r.broadcast(&Commit{Inst: inst, NoOp: noop, Cmd: t, Attrs: attrs})
	}
	known := e.cmd
	e.status, e.noop, e.Attrs, e.drive = Committed, noop, attrs, nil
	delete(r.watch, inst)
	if noop {
		r.stats.NoOps++
		r.unindex(inst, e)
		if known != nil {
			r.exec.Abandon(known, ReasonNoOp)
		}
	} else {
		e.cmd = t
		r.index(inst, e)
		r.cover(inst, e)
	}
	roots := append([]Instance{inst}, r.waiters[inst]...)
	delete(r.waiters, inst)
	for _, root := range roots {
		r.execute(root)
	}
}

func (r *Replica) onCommitAck(from int, inst Instance) {
	a := r.announced[inst]
	if a == nil || a.acked[from] {
		return
	}
	a.acked[from] = true
	if a.unacked--; a.unacked == 0 {
		delete(r.announced, inst)
	}
}

// reannounce retransmits, in instance order, every Commit not yet acknowledged whose retry time
// has come.
func (r *Replica) reannounce(now int64) {
	insts := make([]Instance, 0, len(r.announced))
	for inst, a := range r.announced {
		if now >= a.retryAtUs {
			insts = append(insts, inst)
		}
	}
	slices.SortFunc(insts, Instance.cmp)
	for _, inst := range insts {
		a := r.announced[inst]
		a.retryAtUs = now + r.retryUs
		c := r.commitOf(inst, r.insts[inst])
		for dc, ok := range a.acked {
			if !ok {
				r.send(dc, c)
			}
		}
	}
}

// commitOf is the Commit message for a committed instance.
func (r *Replica) commitOf(inst Instance, e *entry) *Commit {
	c := &Commit{Inst: inst, NoOp: e.noop, Attrs: e.Attrs}
	if !e.noop {
		c.Cmd = e.cmd
	}
	return c
}

// ---- Recovery ----

// startRecovery sends Prepare for inst at this replica's next ballot, promising it itself.
func (r *Replica) startRecovery(inst Instance, e *entry) {
	n := uint64(r.n)
	b := (e.ballot/n+1)*n + uint64(r.self) // > e.ballot, ≡ self (mod N), > 0
	e.ballot = b
	r.stats.Recoveries++
	d := &drive{ballot: b, phase: preparing, replied: make([]bool, r.n), count: 1, promises: make([]*PrepareReply, r.n),
		retryAtUs: r.env.NowUs() + r.retryUs}
	d.replied[r.self] = true
	d.promises[r.self] = r.promise(inst, e, b)
	e.drive = d
	r.broadcast(&Prepare{Inst: inst, Ballot: b})
	r.decidePrepare(inst, e)
}

// promise is this replica's report of inst to the recoverer of ballot b.
func (r *Replica) promise(inst Instance, e *entry, b uint64) *PrepareReply {
	p := &PrepareReply{Inst: inst, Ballot: b, OK: true, Status: e.status, VBallot: e.vballot}
	if e.status == PreAccepted || e.status == Accepted {
		p.NoOp, p.Attrs = e.noop, e.Attrs
		p.Unchanged = e.status == PreAccepted && e.unchanged
		p.Tried = e.status == PreAccepted && e.tried
		if !e.noop {
			p.Cmd = e.cmd
		}
	}
	return p
}

func (r *Replica) onPrepare(from int, m *Prepare) {
	e := r.entry(m.Inst)
	if r.refuse(from, m.Inst, e, m.Ballot, func(b uint64) protocol.Message { return &PrepareReply{Inst: m.Inst, Ballot: b} }) {
		return
	}
	r.preempt(e, m.Ballot)
	e.ballot = m.Ballot
	r.send(from, r.promise(m.Inst, e, m.Ballot))
}

func (r *Replica) onPrepareReply(from int, m *PrepareReply) {
	e, d := r.driven(m.Inst, m.Ballot, m.OK)
	if d == nil || d.phase != preparing || d.replied[from] {
		return
	}
	d.replied[from] = true
	d.count++
	d.promises[from] = m
	r.decidePrepare(m.Inst, e)
}

// decidePrepare applies the recovery rules of the package comment once a classic quorum has
// promised; it re-runs on every later promise and TryPreAccept reply while it waits.
func (r *Replica) decidePrepare(inst Instance, e *entry) {
	d := e.drive
	if d.count < r.cq {
		return
	}
	leader := int(inst.Replica)
	var accepted, evidence, known *PrepareReply
	unchanged, higherPreAccept := 0, false
	hint := Attrs{}
	for dc, p := range d.promises {
		if p == nil {
			continue
		}
		switch p.Status {
		case Accepted:
			if accepted == nil || p.VBallot > accepted.VBallot {
				accepted = p
			}
		case PreAccepted:
			// A tried value is the ballot-0 proposal again: no proof that it was not committed.
			higherPreAccept = higherPreAccept || (p.VBallot > 0 && !p.Tried)
			if dc != leader && ((p.VBallot == 0 && p.Unchanged) || p.Tried) {
				evidence = p
			}
			if dc != leader && p.VBallot == 0 && p.Unchanged {
				unchanged++
			}
			hint = Attrs{Seq: max(hint.Seq, p.Seq), Deps: union(hint.Deps, p.Deps)}
		}
		if p.Cmd != nil && known == nil {
			known = p
		}
	}
	unheard := 0
	for dc, ok := range d.replied {
		if !ok && dc != leader {
			unheard++
		}
	}
	// With FQ = 1 (one replica, or the unsafe control) the leader alone decides a fast commit,
	// so no other replica can hold its evidence.
	mayHaveFastCommitted := r.fq > 1 && !higherPreAccept && !d.impossible && !d.replied[leader] && unchanged+unheard >= r.fq-1
	switch {
	case accepted != nil:
		r.startAccept(inst, e, d.ballot, accepted.NoOp, accepted.Cmd, accepted.Attrs)
	case evidence != nil && unchanged >= r.fq-1:
		r.startAccept(inst, e, d.ballot, false, evidence.Cmd, evidence.Attrs)
	case mayHaveFastCommitted && evidence != nil:
		r.tryPreAccept(inst, e, evidence)
	case mayHaveFastCommitted:
		// Its evidence may be with a replica not heard from yet: wait for more promises.
	case known == nil:
		r.startAccept(inst, e, d.ballot, true, nil, Attrs{})
	default:
		r.startPreAccept(inst, e, d.ballot, known.Cmd, hint)
	}
}

// tryPreAccept is recovery step 4 (package comment): the ballot-0 proposal (evidence's value)
// may have been committed on the fast path, and the promises cannot tell. A classic quorum of
// holders of it makes it safe to accept whether it was or not: the ballot-0 replicas that
// pre-accepted it unchanged, those that report it tried, and those that pre-accept it now from
// a TryPreAccept. The first call starts asking the replicas that promised and hold it not;
// later calls (every promise and reply) count.
func (r *Replica) tryPreAccept(inst Instance, e *entry, evidence *PrepareReply) {
	d := e.drive
	if !d.trying {
		d.trying, d.holders, d.cmd, d.acc = true, make([]bool, r.n), evidence.Cmd, evidence.Attrs
		r.stats.Tries++
		if r.sendTryPreAccepts(inst, e); d.impossible {
			r.decidePrepare(inst, e) // this replica's own conflict proves no fast commit
			return
		}
	}
	holders := 0
	for dc, p := range d.promises {
		if dc != int(inst.Replica) && (d.holders[dc] || (p != nil && p.Status == PreAccepted && ((p.VBallot == 0 && p.Unchanged) || p.Tried))) {
			holders++
		}
	}
	if holders >= r.cq {
		r.startAccept(inst, e, d.ballot, false, d.cmd, d.acc)
	}
}

// sendTryPreAccepts tries the drive's value here, if this replica does not hold it yet, and
// asks every other replica that promised and does not hold it.
func (r *Replica) sendTryPreAccepts(inst Instance, e *entry) {
	d := e.drive
	m := &TryPreAccept{Inst: inst, Ballot: d.ballot, Cmd: d.cmd, Attrs: d.acc}
	for dc, p := range d.promises {
		switch {
		case p == nil || d.holders[dc] || dc == int(inst.Replica):
		case dc == r.self:
			if ok, impossible := r.tryHere(inst, e, m); ok {
				d.holders[dc] = true
			} else {
				d.impossible = d.impossible || impossible
			}
		default:
			r.send(dc, m)
		}
	}
}

func (r *Replica) onTryPreAccept(from int, m *TryPreAccept) {
	e := r.entry(m.Inst)
	if r.refuse(from, m.Inst, e, m.Ballot, func(b uint64) protocol.Message { return &TryPreAcceptReply{Inst: m.Inst, Ballot: b} }) {
		return
	}
	r.preempt(e, m.Ballot)
	ok, impossible := r.tryHere(m.Inst, e, m)
	r.send(from, &TryPreAcceptReply{Inst: m.Inst, Ballot: m.Ballot, OK: ok, Conflict: !ok, Impossible: impossible})
}

// tryHere pre-accepts m's value here at m's ballot unless it conflicts with an interfering
// command this replica knows, and reports whether it did, and whether a conflict proves the
// value was never committed. The value is ordered with such a command δ if δ is reachable from
// the value's deps through committed deps here, or δ is committed here and reaches the instance
// the same way (an uncommitted δ's deps are not final, so they do not count); any other δ is a
// conflict, and proves the value never committed if δ is committed and both searches passed only
// committed instances (a committed value would be ordered with δ: the dependency invariant).
// This replica already holds the value if it pre-accepted the ballot-0 proposal unchanged or
// tried it at this ballot; it refuses if it holds another value at this ballot or an accepted
// one. It watches an uncommitted conflicting command, so that it gets decided and a retried
// TryPreAccept can succeed.
func (r *Replica) tryHere(inst Instance, e *entry, m *TryPreAccept) (ok, impossible bool) {
	switch {
	case e.status == PreAccepted && e.vballot == 0 && e.unchanged, e.status == PreAccepted && e.vballot == m.Ballot && e.tried:
		return true, false
	case e.status == Accepted, e.vballot == m.Ballot:
		return false, false
	}
	var others []Instance
	for other, o := range r.insts {
		if other != inst && o.cmd != nil && !o.noop && o.status != Unknown && interferes(m.Cmd, o.cmd) {
			others = append(others, other)
		}
	}
	slices.SortFunc(others, Instance.cmp)
	value, valueFinal := r.closure(m.Deps)
	var toInst, unsure map[Instance]bool // computed once, if needed
	conflict := false
	for _, other := range others {
		o := r.insts[other]
		switch {
		case value[other]:
			continue
		case o.status < Committed:
			conflict = true
			r.watchInstance(other, o)
			continue
		case toInst == nil:
			toInst, unsure = r.reachingCommitted(inst)
		}
		if !toInst[other] {
			conflict = true
			impossible = impossible || (valueFinal && !unsure[other])
		}
	}
	if conflict && !r.tryIgnoresConflicts {
		return false, impossible
	}
	e.cmd = m.Cmd
	r.index(inst, e)
	e.status, e.ballot, e.vballot, e.noop, e.Attrs, e.unchanged, e.tried = PreAccepted, m.Ballot, m.Ballot, false, m.Attrs, false, true
	return true, false
}

// closure returns the instances reachable from from (themselves included) through the deps of
// instances committed here, and whether it is final: every instance it reached is committed here
// (an uncommitted or forgotten one may yet lead further).
func (r *Replica) closure(from []Instance) (reached map[Instance]bool, final bool) {
	reached, final = map[Instance]bool{}, true
	stack := slices.Clone(from)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if reached[v] {
			continue
		}
		reached[v] = true
		if e := r.insts[v]; e != nil && e.status >= Committed {
			stack = append(stack, e.Deps...)
		} else {
			final = false
		}
	}
	return reached, final
}

// reachingCommitted returns the instances committed here from which target is reachable through
// committed deps (toTarget), and those from which an instance not committed here (or forgotten)
// is reachable so (unsure: their closure is not final).
func (r *Replica) reachingCommitted(target Instance) (toTarget, unsure map[Instance]bool) {
	users := map[Instance][]Instance{} // dep → the committed instances naming it
	var open []Instance
	for inst, e := range r.insts {
		if e.status < Committed {
			continue
		}
		for _, d := range e.Deps {
			users[d] = append(users[d], inst)
			if de := r.insts[d]; de == nil || de.status < Committed {
				open = append(open, d)
			}
		}
	}
	back := func(from []Instance) map[Instance]bool {
		seen := map[Instance]bool{}
		for stack := from; len(stack) > 0; {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, u := range users[v] {
				if !seen[u] {
					seen[u] = true
					stack = append(stack, u)
				}
			}
		}
		return seen
	}
	return back([]Instance{target}), back(open)
}

func (r *Replica) onTryPreAcceptReply(from int, m *TryPreAcceptReply) {
	e, d := r.driven(m.Inst, m.Ballot, m.OK || m.Conflict)
	if d == nil || d.phase != preparing || !d.trying || d.holders[from] {
		return
	}
	d.holders[from] = m.OK
	d.impossible = d.impossible || m.Impossible
	r.decidePrepare(m.Inst, e)
}

// interferes reports whether two commands conflict (spec §0): one writes a key the other reads
// or writes.
func interferes(a, b *txn.Txn) bool {
	for _, w := range a.Writes {
		if b.Accesses(w.Key) {
			return true
		}
	}
	for _, w := range b.Writes {
		if a.Accesses(w.Key) {
			return true
		}
	}
	return false
}

// ---- Shared machinery ----

// entry returns inst's entry, creating an Unknown one.
func (r *Replica) entry(inst Instance) *entry {
	e := r.insts[inst]
	if e == nil {
		e = &entry{}
		r.insts[inst] = e
	}
	return e
}

// driven returns inst's entry and drive if this replica drives inst at ballot b; a refusal
// naming a higher ballot ends the drive (the instance stays watched and will be recovered).
func (r *Replica) driven(inst Instance, b uint64, ok bool) (*entry, *drive) {
	e := r.insts[inst]
	if e == nil || e.drive == nil {
		return nil, nil
	}
	if !ok {
		if b > e.drive.ballot {
			r.preempt(e, b)
			r.watchInstance(inst, e)
			r.backOff(e)
		}
		return nil, nil
	}
	if e.drive.ballot != b {
		return nil, nil
	}
	return e, e.drive
}

// preempt records ballot b, seen on a request, and ends this replica's drive of a lower ballot.
// A recovery ballot (b > 0) means a recoverer is at work, so this replica's own recovery of the
// instance, if it is watched, backs off.
func (r *Replica) preempt(e *entry, b uint64) {
	if e.drive != nil && e.drive.ballot < b {
		e.drive = nil
	}
	if b > e.ballot && b > 0 && e.backoffUs > 0 {
		r.backOff(e)
	}
	e.ballot = max(e.ballot, b)
}

// watchInstance schedules inst for recovery after recover_after, unless it is watched already
// or committed.
func (r *Replica) watchInstance(inst Instance, e *entry) {
	if r.watch[inst] || e.status >= Committed || r.forgotten(inst) {
		return
	}
	r.watch[inst] = true
	e.backoffUs = r.recoverAfterUs
	e.recoverAtUs = r.env.NowUs() + r.recoverAfterUs + r.env.Rand().Int64N(r.retryUs+1)
}

// backOff postpones this replica's next recovery of e: another recoverer is at work (or this
// replica's own attempt just started), so competing Prepares would only preempt each other. The
// wait doubles each time, up to eight recover_after or eight retry periods, and is randomized
// between one and two waits so that competing replicas spread out.
func (r *Replica) backOff(e *entry) {
	e.backoffUs = min(2*e.backoffUs, 8*max(r.recoverAfterUs, r.retryUs))
	e.recoverAtUs = max(e.recoverAtUs, r.env.NowUs()+e.backoffUs+r.env.Rand().Int64N(e.backoffUs+1))
}

// retransmit resends the current phase's request to the replicas that have not answered.
func (r *Replica) retransmit(inst Instance, e *entry) {
	d := e.drive
	var m protocol.Message
	switch d.phase {
	case preparing:
		m = &Prepare{Inst: inst, Ballot: d.ballot}
		if d.trying {
			r.sendTryPreAccepts(inst, e)
			r.decidePrepare(inst, e)
			if e.drive != d {
				return
			}
		}
	case preAccepting:
		m = &PreAccept{Inst: inst, Ballot: d.ballot, Cmd: d.cmd, Attrs: d.proposal}
	case accepting:
		m = &Accept{Inst: inst, Ballot: d.ballot, NoOp: d.noop, Cmd: d.cmd, Attrs: d.acc}
	}
	for dc, ok := range d.replied {
		if !ok {
			r.send(dc, m)
		}
	}
}

func (r *Replica) send(dc int, m protocol.Message) { r.env.Send(r.nodeOf[dc], m) }

// broadcast sends m to every other replica.
func (r *Replica) broadcast(m protocol.Message) {
	for dc := range r.n {
		if dc != r.self {
			r.send(dc, m)
		}
	}
}

// ---- Interference and the per-key index ----

// attributes returns hint raised by the instances this replica knows that interfere with t
// (other than inst): seq above all of theirs, deps including them.
func (r *Replica) attributes(inst Instance, t *txn.Txn, hint Attrs) Attrs {
	var found []Instance
	add := func(list []Instance) {
		for _, d := range list {
			if d != inst {
				found = append(found, d)
			}
		}
	}
	for _, w := range t.Writes {
		if ki := r.keys[w.Key]; ki != nil {
			add(ki.writers)
			add(ki.readers)
		}
	}
	for _, rd := range t.Reads {
		if ki := r.keys[rd.Key]; ki != nil && !t.WritesKey(rd.Key) {
			add(ki.writers)
		}
	}
	slices.SortFunc(found, Instance.cmp)
	found = slices.Compact(found)
	seq := hint.Seq
	for _, d := range found {
		seq = max(seq, r.insts[d].Seq+1)
	}
	return Attrs{Seq: seq, Deps: union(hint.Deps, found)}
}

// index adds e's command to the per-key index, once.
func (r *Replica) index(inst Instance, e *entry) {
	if e.indexed || e.cmd == nil {
		return
	}
	e.indexed = true
	for _, w := range e.cmd.Writes {
		r.keyIndex(w.Key).writers = append(r.keyIndex(w.Key).writers, inst)
	}
	for _, rd := range e.cmd.Reads {
		if !e.cmd.WritesKey(rd.Key) {
			r.keyIndex(rd.Key).readers = append(r.keyIndex(rd.Key).readers, inst)
		}
	}
}

func (r *Replica) keyIndex(key string) *keyIndex {
	ki := r.keys[key]
	if ki == nil {
		ki = &keyIndex{}
		r.keys[key] = ki
	}
	return ki
}

// unindex removes a no-op'd instance's command from the index: a no-op interferes with nothing.
func (r *Replica) unindex(inst Instance, e *entry) {
	if !e.indexed {
		return
	}
	e.indexed = false
	drop := func(i Instance) bool { return i == inst }
	for _, w := range e.cmd.Writes {
		r.filter(w.Key, drop)
	}
	for _, rd := range e.cmd.Reads {
		r.filter(rd.Key, drop)
	}
}

// cover drops from the index of every key the committed command of inst writes the instances
// its deps name: a later command touching the key names inst (or whatever covers inst later),
// and reaches them through inst's committed deps (package comment). Only an instance still in
// the key's index covers: the index of every key keeps the invariant that each instance ever
// indexed for the key and dropped since is reachable, through committed deps, from one still
// there. Without that condition two committed writers that depend on each other (a cycle) would
// drop each other and leave the key's index empty.
func (r *Replica) cover(inst Instance, e *entry) {
	if len(e.Deps) == 0 {
		return
	}
	inDeps := func(i Instance) bool {
		_, found := slices.BinarySearchFunc(e.Deps, i, Instance.cmp)
		return found
	}
	for _, w := range e.cmd.Writes {
		if ki := r.keys[w.Key]; ki != nil && slices.Contains(ki.writers, inst) {
			r.filter(w.Key, inDeps)
		}
	}
}

// filter removes the instances drop selects from key's index.
func (r *Replica) filter(key string, drop func(Instance) bool) {
	ki := r.keys[key]
	if ki == nil {
		return
	}
	ki.writers = slices.DeleteFunc(ki.writers, drop)
	ki.readers = slices.DeleteFunc(ki.readers, drop)
	if len(ki.writers) == 0 && len(ki.readers) == 0 {
		delete(r.keys, key)
	}
}

// union merges two sorted dependency lists.
func union(a, b []Instance) []Instance {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]Instance, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].less(b[j])):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].less(a[i]):
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// wellFormed checks a message from datacenter from: instances inside the instance spaces,
// sorted dependency lists without the instance itself, values present exactly when they should
// be, and ballots owned by their sender (0: the instance's original leader; b > 0: replica
// b mod N).
func (r *Replica) wellFormed(from int, m protocol.Message) bool {
	owns := func(inst Instance, b uint64) bool {
		if b == 0 {
			return int(inst.Replica) == from
		}
		return int(b%uint64(r.n)) == from
	}
	switch m := m.(type) {
	case *PreAccept:
		return m != nil && r.validAttrs(m.Inst, m.Attrs) && m.Cmd != nil && owns(m.Inst, m.Ballot)
	case *PreAcceptReply:
		return m != nil && r.validAttrs(m.Inst, m.Attrs)
	case *Accept:
		return m != nil && r.validAttrs(m.Inst, m.Attrs) && m.NoOp == (m.Cmd == nil) && owns(m.Inst, m.Ballot)
	case *AcceptReply:
		return m != nil && r.validInst(m.Inst)
	case *Commit:
		return m != nil && r.validAttrs(m.Inst, m.Attrs) && m.NoOp == (m.Cmd == nil)
	case *CommitAck:
		return m != nil && r.validInst(m.Inst)
	case *Progress:
		return m != nil && len(m.UpTo) == r.n
	case *Prepare:
		return m != nil && r.validInst(m.Inst) && m.Ballot > 0 && owns(m.Inst, m.Ballot)
	case *TryPreAccept:
		return m != nil && r.validAttrs(m.Inst, m.Attrs) && m.Cmd != nil && m.Ballot > 0 && owns(m.Inst, m.Ballot)
	case *TryPreAcceptReply:
		return m != nil && r.validInst(m.Inst) && !(m.OK && m.Conflict) && (m.Conflict || !m.Impossible)
	case *PrepareReply:
		if m == nil || !r.validAttrs(m.Inst, m.Attrs) {
			return false
		}
		switch m.Status {
		case Unknown:
			return m.Cmd == nil && !m.NoOp && !m.Unchanged && !m.Tried
		case PreAccepted:
			return m.Cmd != nil && !m.NoOp && !(m.Tried && (m.Unchanged || m.VBallot == 0))
		case Accepted:
			return m.NoOp == (m.Cmd == nil) && !m.Unchanged && !m.Tried
		}
		return false
	}
	return false
}

func (r *Replica) validInst(i Instance) bool { return int(i.Replica) < r.n && i.Slot > 0 }

func (r *Replica) validAttrs(inst Instance, a Attrs) bool {
	if !r.validInst(inst) {
		return false
	}
	for k, d := range a.Deps {
		if !r.validInst(d) || d == inst || (k > 0 && !a.Deps[k-1].less(d)) {
			return false
		}
	}
	return true
}
