// Package multipaxos implements Multi-Paxos state-machine replication with sequential
// certification, the ALVIN evaluation's "Paxos-LO" and "Paxos-HI" competitors (spec alvin.md
// §5.1): one full replica per datacenter, one leader for the whole system that orders every
// update transaction's commit request in a log of slots, and every replica validating and
// applying the log strictly in slot order through the shared execution layer (package pcc).
//
// A transaction executes at its origin replica on a multi-version snapshot (pcc.Executor). A
// read-only transaction commits there at once (pcc.ReadOnlyLocal): every snapshot is a prefix
// of the log, so this is serializable. An update transaction's origin forwards it to the leader
// (Forward), which gives it the next slot and sends Accept to every replica; once a majority
// (itself included) answered Accepted the slot is chosen, the leader advances its commit index
// over the contiguous chosen prefix and sends Commit to every replica. Each replica executes the
// chosen slots in order, certifying one transaction at a time with pcc.Executor.Deliver, and the
// origin answers its client. The zero-load latency at origin o is RTT(o, L) + r^L_{CQ−1}, the
// leader's round trip to its closest majority (0 extra when o = L).
//
// # Leader placement
//
// multipaxos-lo places the leader at the datacenter of minimum mean RTT to the others,
// multipaxos-hi at the one of maximum mean RTT (spec §5.1 [R]), computed from the topology's
// matrix; ties go to the datacenter listed first in the topology. The same order (ascending mean
// RTT for LO, descending for HI, ties by position) ranks the replicas for fail-over.
//
// # Ballots, phase 1 and fail-over
//
// Ballots are positive integers, and ballot b belongs to replica b mod n, so two candidates never
// share one and every replica knows the leader of the ballot it promised. The preferred leader
// runs phase 1 (Prepare/Promise) at start. Every replica promises one ballot for the whole log.
// The leader sends Commit (its commit index) every ParamLease/5 as a heartbeat. A replica that
// hears nothing from the leader of its promised ballot for ParamLease, plus ParamLease/4 per rank
// behind the preferred leader (so that candidates rarely duel), doubled for each election it
// started since it last heard an established leader, plus a random jitter of up to half a lease
// (so that rounds of phase 1 stop preempting each other when delays exceed the lease), starts
// phase 1 with the smallest ballot of its own above the one it promised, asking for every
// accepted entry above its commit index. With a majority of promises it becomes leader: for every slot from its commit index up
// to the highest slot any promise reported it proposes the value accepted in the highest ballot,
// or a no-op where nobody in the quorum accepted anything; new transactions take the slots after.
// A replica that learns of a higher ballot (from any message, or a Nack) steps down. A leader
// that has not heard a majority (CommitAck, Accepted) for quorumLeases leases steps down too
// (check-quorum), so that a leader whose incoming messages are lost, while its heartbeats still
// arrive, does not hold its followers forever.
//
// Recovery of a deposed leader's in-flight slots: a slot the old leader proposed and some replica
// of the new leader's promise quorum accepted is re-proposed by the new leader with the same value
// (the highest-ballot rule; a chosen value is always among them), a slot below the highest one
// reported that nobody there accepted becomes a no-op (slots above it are simply reused), and the
// deposed leader's queued, unproposed transactions are dropped. Nothing
// is lost, because every origin keeps each of its update transactions until it executes it, and
// forwards it again to the new leader when it learns of a new ballot (and after ParamResend).
// Nothing is delivered twice: a transaction can so end up in two slots, and replicas skip, at
// execution, a transaction whose id is not above the highest sequence number they executed for
// its client (a client runs one transaction at a time, so its next transaction is submitted only
// once the previous one was executed at its origin and takes a later slot). Every replica skips
// the same duplicates, as they execute the same log.
//
// The leader does not move back to the preferred datacenter after a fail-over.
//
// # Retransmission and catch-up
//
// Messages may be lost. The leader resends Accept to the replicas that have not answered after
// ParamResend, and a candidate its Prepare; an origin resends Forward. A replica that learns from
// a Commit of chosen slots it cannot execute (it never accepted their value in that ballot) sends
// Fetch to the leader, which answers Chosen with up to maxFetchEntries chosen values.
//
// Followers answer Commit with CommitAck (their executed slot), and the leader's Commit tells
// every replica the lowest slot all have executed: every replica drops the slots up to it from
// its log. No replica can need them again, as every replica executed them and a restarted node
// replays its input log. A replica that stays down stops this trimming until it is back (there is
// no snapshot transfer to a replica that lost its state, which the crash model excludes).
//
// # Batching
//
// The registered protocols run behind network-level batching (package batch, spec §5.3): by
// default each replica's messages to one peer leave together every 20/30/40/50 ms for clusters of
// up to 3/5/7/more datacenters, as in the spec's evaluation; batch_window_ms=0 turns it off. Each
// hop of the commit path then waits up to one window: at zero load a non-leader origin waits up
// to 4 windows more (Forward, Accept, Accepted, Commit), the leader's own clients up to 2.
// A slot then holds one transaction: under load, network batching carries many slots' Accepts,
// Accepteds and Forwards in one message instead.
//
// With batch_mode=instance (the spec's §5.3 alternative, and its §5.1 sketch of a slot holding a
// batch of requests) there is no network batching; the leader, the proposer of Multi-Paxos,
// collects the update transactions it receives (its own clients' and forwarded ones) during one
// window (batch_window_ms, same defaults) into a batch (pcc.Batcher) and proposes the batch in
// ONE slot. Executing the slot certifies the members one after the other in batch order, each on
// its own (a conflicting member aborts alone), with the duplicate rule above applied per member.
// A leader that steps down drops its open batch like its queue: the origins forward those
// transactions again. The open batch is in the checkpoint. Each origin still forwards each
// transaction on its own, so a non-leader origin waits for the leader's window only.
package multipaxos

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/protocols/smr/pcc"
	"github.com/meridian-kv/meridian/topology"
)

// Placement chooses the preferred leader's datacenter from the RTT matrix.
type Placement uint8

// The placements of spec §5.1.
const (
	// LowestMeanRTT places the leader at the datacenter of minimum mean RTT (Paxos-LO).
	LowestMeanRTT Placement = iota
	// HighestMeanRTT places it at the datacenter of maximum mean RTT (Paxos-HI).
	HighestMeanRTT
)

func init() {
	for _, v := range []struct {
		name, desc string
		p          Placement
	}{
		{"multipaxos-lo", "Multi-Paxos SMR, leader at the datacenter of lowest mean RTT; sequential certification, local read-only transactions (ALVIN spec §5.1 Paxos-LO)", LowestMeanRTT},
		{"multipaxos-hi", "Multi-Paxos SMR, leader at the datacenter of highest mean RTT; sequential certification, local read-only transactions (ALVIN spec §5.1 Paxos-HI)", HighestMeanRTT},
	} {
		registry.Register(v.name, registry.Entry{
			Family:           registry.ReadWrite,
			Description:      v.desc,
			New:              batch.Wrap(Factory(v.p)),
			Codec:            batch.WrapCodec(Codec),
			ToleratesOutages: 1,
			RandomParams:     randomParams,
		})
	}
}

// Parameter names Multi-Paxos accepts.
const (
	// ParamLease is how long a replica waits without hearing the leader before it starts phase 1
	// (default 3 × the largest RTT + 100ms); the leader's heartbeat period is a fifth of it.
	ParamLease = "lease"
	// ParamResend is how long a leader, candidate or origin waits for an answer before sending
	// again (default 2 × the largest RTT + 20ms).
	ParamResend = "resend"
	// ParamUnsafeCommitWithoutMajority makes the leader count a slot chosen as soon as it accepted
	// it itself: the negative control that the checker must catch.
	ParamUnsafeCommitWithoutMajority = protocol.UnsafeParamPrefix + "commit_without_majority"
)

// The replica's timers: the periodic duties, and the window of the leader's open batch (instance
// batching).
const (
	timerTick  protocol.TimerID = 1
	timerBatch protocol.TimerID = 2
)

// quorumLeases is the leader's check-quorum window, in leases (see hasQuorum).
const quorumLeases = 4

// maxFetchEntries bounds the chosen entries of one Chosen message.
const maxFetchEntries = 256

type role uint8

const (
	follower role = iota
	candidate
	leader
)

// entry is one slot of a replica's log.
type entry struct {
	ballot    uint64   // the ballot the value was accepted in
	txn       *txn.Txn // nil: no-op
	committed bool
	// At the leader, for a slot of its ballot not yet chosen: who accepted, and when Accept last
	// went out.
	acks   []bool
	nAcks  int
	sentUs int64
}

// pending is an update transaction that originated here and is not executed yet.
type pending struct {
	t      *txn.Txn
	sentUs int64
}

// Replica is one Multi-Paxos replica: acceptor, learner and executor of the log, possibly leader
// or candidate, and origin of its clients' transactions.
type Replica struct {
	env  protocol.Env
	exec *pcc.Executor
	// batcher collects, at the leader, the transactions of one window into a batch
	// (batch_mode=instance); nil: every transaction takes a slot of its own.
	batcher  *pcc.Batcher
	nodeOf   []protocol.NodeID // replica of each datacenter
	dcOf     map[protocol.NodeID]int
	self, n  int
	majority int // phase 1 quorum
	// commitQuorum is the phase 2 quorum: a majority, or 1 under ParamUnsafeCommitWithoutMajority.
	commitQuorum int
	rank         int // position in the fail-over order (0: preferred leader)
	leaseUs      int64
	beatUs       int64
	resendUs     int64

	promised    uint64 // highest ballot promised; leader(promised) is the leader this replica follows
	preferred   int
	role        role
	lastHeardUs int64 // last message from leader(promised), or this replica's last election start
	// failedElections counts the elections this replica started since it last heard an
	// established leader (an Accept or Commit): each doubles its wait before the next one.
	failedElections int
	waitJitterUs    int64 // random part of the current wait, drawn at each election
	lastBeatUs      int64
	lastFetchUs     int64
	lastAckUs       int64

	// Candidate state.
	promisedBy []bool
	promises   int
	prepareUs  int64
	best       map[uint64]Entry // highest-ballot accepted entry per slot among the promises

	// Leader state.
	nextSlot uint64
	// heardUs is when the leader last heard each replica in its ballot (Accepted, CommitAck),
	// and executedOf the highest executed slot each reported.
	heardUs    []int64
	executedOf []uint64
	queue      []*txn.Txn        // forwarded while this replica was a candidate
	inflight   map[txn.ID]uint64 // transactions proposed in this ballot and not yet executed here, and their slots

	log       map[uint64]*entry
	commitIdx uint64 // every slot up to it is chosen and executed here
	trimmed   uint64 // every slot up to it is executed everywhere and dropped from log
	// executed is, per client, the highest sequence number of its transactions executed here:
	// a transaction at or below it is a duplicate (see the package comment).
	executed map[txn.ClientID]uint32

	pending map[txn.ID]*pending // update transactions of this origin, until executed
}

// Factory returns the factory of the Multi-Paxos variant with the leader placed by p.
func Factory(p Placement) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) { return New(cfg, env, p) }
}

// New builds a Multi-Paxos replica with its leader placed by p.
func New(cfg protocol.Config, env protocol.Env, p Placement) (*Replica, error) {
	nodeOf, self, err := protocol.FullReplicas(cfg)
	if err != nil {
		return nil, fmt.Errorf("multipaxos: %w", err)
	}
	if err := cfg.Params.CheckKnown(append([]string{ParamLease, ParamResend, ParamUnsafeCommitWithoutMajority}, batch.Params...), nil); err != nil {
		return nil, fmt.Errorf("multipaxos: %w", err)
	}
	topo := cfg.Topology
	maxRTTUs := int64(0)
	for dc := range topo.N() {
		maxRTTUs = max(maxRTTUs, int64(topo.MaxRTTMs(dc)*1000))
	}
	r := &Replica{env: env, exec: pcc.New(env, "multipaxos", pcc.ReadOnlyLocal), nodeOf: nodeOf,
		dcOf: make(map[protocol.NodeID]int), self: self, n: topo.N(), majority: topo.N()/2 + 1,
		log: make(map[uint64]*entry), executed: make(map[txn.ClientID]uint32), pending: make(map[txn.ID]*pending),
		inflight: make(map[txn.ID]uint64), nextSlot: 1}
	for dc, id := range nodeOf {
		r.dcOf[id] = dc
	}
	if r.leaseUs, err = cfg.Params.Duration(ParamLease, 3*maxRTTUs+100_000); err != nil {
		return nil, fmt.Errorf("multipaxos: %w", err)
	}
	if r.resendUs, err = cfg.Params.Duration(ParamResend, 2*maxRTTUs+20_000); err != nil {
		return nil, fmt.Errorf("multipaxos: %w", err)
	}
	if r.leaseUs <= 0 || r.resendUs <= 0 {
		return nil, fmt.Errorf("multipaxos: %s and %s must be positive", ParamLease, ParamResend)
	}
	unsafe, err := cfg.Params.Bool(ParamUnsafeCommitWithoutMajority, false)
	if err != nil {
		return nil, fmt.Errorf("multipaxos: %w", err)
	}
	r.commitQuorum = r.majority
	if unsafe {
		r.commitQuorum = 1
	}
	r.beatUs = max(r.leaseUs/5, 1)
	windowUs, err := batch.InstanceWindowUs(cfg)
	if err != nil {
		return nil, fmt.Errorf("multipaxos: %w", err)
	}
	if windowUs > 0 {
		r.batcher = pcc.NewBatcher(env, self, windowUs, timerBatch)
	}
	order := FailoverOrder(topo, p)
	r.preferred, r.rank = order[0], slices.Index(order, self)
	return r, nil
}

// MeanRTTMs returns each datacenter's mean RTT to the other datacenters (0 for a single one).
func MeanRTTMs(topo *topology.Topology) []float64 {
	means := make([]float64, topo.N())
	if topo.N() < 2 {
		return means
	}
	for i, row := range topo.RTTMs {
		for j, v := range row {
			if j != i {
				means[i] += v
			}
		}
		means[i] /= float64(topo.N() - 1)
	}
	return means
}

// FailoverOrder ranks the datacenters for leadership under placement p: by ascending mean RTT
// (LowestMeanRTT) or descending (HighestMeanRTT), ties by position in the topology. The first is
// the preferred leader.
func FailoverOrder(topo *topology.Topology, p Placement) []int {
	means := MeanRTTMs(topo)
	order := make([]int, topo.N())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case means[a] == means[b]:
			return 0
		case (means[a] < means[b]) == (p == LowestMeanRTT):
			return -1
		}
		return 1
	})
	return order
}

// Leader returns the datacenter index this replica currently follows (or leads).
func (r *Replica) Leader() int {
	if r.promised == 0 {
		return r.preferred
	}
	return int(r.promised % uint64(r.n))
}

// IsLeader reports whether this replica has completed phase 1 and leads.
func (r *Replica) IsLeader() bool { return r.role == leader }

// CommitIndex returns the highest slot up to which this replica has executed the log.
func (r *Replica) CommitIndex() uint64 { return r.commitIdx }

// Pending reports how many update transactions that originated here wait for their execution.
func (r *Replica) Pending() int { return len(r.pending) }

// Start arms the tick and, at the preferred leader, starts phase 1.
func (r *Replica) Start() {
	r.lastHeardUs = r.env.NowUs()
	r.env.SetTimer(r.tickUs(), timerTick)
	if r.self == r.preferred {
		r.startElection()
	}
}

func (r *Replica) tickUs() int64 { return max(min(r.beatUs, r.resendUs)/2, 1000) }

// HandleRequest serves reads and read-only commits locally and orders update transactions.
func (r *Replica) HandleRequest(req protocol.Request) {
	t, ok := r.exec.Admit(req)
	if !ok {
		return
	}
	r.pending[t.ID] = &pending{t: t, sentUs: r.env.NowUs()}
	r.submit(t)
}

// submit hands an update transaction of this origin to the leader it follows.
func (r *Replica) submit(t *txn.Txn) {
	if l := r.Leader(); l != r.self {
		r.env.Send(r.nodeOf[l], &Forward{Txn: t})
		return
	}
	r.propose(t)
}

// HandleTimer runs the periodic duties: heartbeats and retransmission at the leader, Prepare
// retransmission at a candidate, the lease at the others, and Forward retransmission.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id == timerBatch && r.batcher != nil {
		if b := r.batcher.Fire(); b != nil && r.role == leader {
			r.proposeNext(b)
		}
		return
	}
	if id != timerTick {
		return
	}
	now := r.env.NowUs()
	r.env.SetTimer(r.tickUs(), timerTick)
	switch r.role {
	case leader:
		if !r.hasQuorum(now) {
			r.stepDown()
			break
		}
		if now-r.lastBeatUs >= r.beatUs {
			r.sendCommit()
		}
		r.resendAccepts(now)
	case candidate:
		if now-r.prepareUs >= r.resendUs {
			r.prepareUs = now
			for dc, ok := range r.promisedBy {
				if !ok {
					r.env.Send(r.nodeOf[dc], &Prepare{Ballot: r.promised, From: r.commitIdx + 1})
				}
			}
		}
	}
	if r.role != leader && now-r.lastHeardUs > r.electionWaitUs() {
		r.startElection()
	}
	for _, id := range r.pendingIDs() {
		if p := r.pending[id]; now-p.sentUs >= r.resendUs {
			p.sentUs = now
			r.submit(p.t)
		}
	}
}

func (r *Replica) pendingIDs() []txn.ID {
	ids := make([]txn.ID, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// HandleMessage processes one peer message; messages from unknown senders and of unknown types
// are ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	dc, ok := r.dcOf[from]
	if !ok || dc == r.self {
		return
	}
	switch m := m.(type) {
	case *Forward:
		if m.Txn != nil {
			r.onForward(m.Txn)
		}
	case *Prepare:
		r.onPrepare(dc, m)
	case *Promise:
		r.onPromise(dc, m)
	case *Nack:
		r.observe(m.Ballot)
	case *Accept:
		r.onAccept(dc, m)
	case *Accepted:
		r.onAccepted(dc, m)
	case *Commit:
		r.onCommit(dc, m)
	case *CommitAck:
		r.onCommitAck(dc, m)
	case *Fetch:
		r.onFetch(dc, m)
	case *Chosen:
		r.onChosen(m)
	}
}

// observe adopts ballot b if it is above the promised one: this replica follows b's leader,
// stepping down if it led or ran for leadership, and forwards its pending transactions there.
// It reports whether b is at least the promised ballot (a message of b may be processed).
func (r *Replica) observe(b uint64) bool {
	if b < r.promised {
		return false
	}
	if b > r.promised {
		r.promised = b
		r.stepDown()
		r.resendPending()
	}
	return true
}

// stepDown makes this replica a follower that has just heard from the leader: a leader or
// candidate drops its queued transactions and bookkeeping (their origins will send them again).
func (r *Replica) stepDown() {
	r.lastHeardUs = r.env.NowUs()
	if r.role != follower {
		r.role = follower
		r.queue, r.promisedBy, r.best, r.heardUs, r.executedOf = nil, nil, nil, nil, nil
		clear(r.inflight)
		if r.batcher != nil {
			r.batcher.Drop()
		}
	}
}

// hasQuorum reports whether the leader heard a majority (itself included) within the last
// quorumLeases leases. A leader that did not steps down (check-quorum): under asymmetric loss it
// might otherwise keep renewing its followers' leases with heartbeats they receive while it hears
// nobody and commits nothing. The window is several leases so that slow links (whose delays may
// exceed a lease) do not depose a leader that still has its majority.
func (r *Replica) hasQuorum(now int64) bool {
	heard := 1
	for dc, at := range r.heardUs {
		if dc != r.self && now-at <= quorumLeases*r.leaseUs {
			heard++
		}
	}
	return heard >= r.majority
}

// sendCommit sends the leader's commit index, and the slots every replica executed, which it
// drops from its own log too.
func (r *Replica) sendCommit() {
	r.lastBeatUs = r.env.NowUs()
	trimTo := r.commitIdx
	for dc, x := range r.executedOf {
		if dc != r.self {
			trimTo = min(trimTo, x)
		}
	}
	r.trim(trimTo)
	r.broadcast(&Commit{Ballot: r.promised, UpTo: r.commitIdx, TrimTo: trimTo})
}

// trim drops the log's slots up to to (at most the commit index).
func (r *Replica) trim(to uint64) {
	for ; r.trimmed < min(to, r.commitIdx); r.trimmed++ {
		delete(r.log, r.trimmed+1)
	}
}

// resendPending forwards every pending transaction of this origin to the leader it follows.
func (r *Replica) resendPending() {
	now := r.env.NowUs()
	for _, id := range r.pendingIDs() {
		p := r.pending[id]
		p.sentUs = now
		r.submit(p.t)
	}
}

func (r *Replica) broadcast(m protocol.Message) {
	for dc, id := range r.nodeOf {
		if dc != r.self {
			r.env.Send(id, m)
		}
	}
}

// electionWaitUs is how long this replica waits without hearing the leader before it runs for
// leadership: the lease plus a quarter lease per rank behind the preferred leader, doubled per
// election it started in vain (at most 64 times; when message delays exceed the lease, rounds of
// phase 1 would otherwise preempt each other forever), plus the jitter drawn at its last election.
func (r *Replica) electionWaitUs() int64 {
	return (r.leaseUs+int64(r.rank)*r.leaseUs/4)<<min(r.failedElections, 6) + r.waitJitterUs
}

// heardLeader notes a message of the established leader of the promised ballot.
func (r *Replica) heardLeader() {
	r.lastHeardUs = r.env.NowUs()
	r.failedElections, r.waitJitterUs = 0, 0
}

// startElection runs phase 1 with the smallest ballot of this replica above the promised one.
func (r *Replica) startElection() {
	n := uint64(r.n)
	b := r.promised/n*n + uint64(r.self)
	for b <= r.promised || b == 0 {
		b += n
	}
	now := r.env.NowUs()
	r.promised, r.role, r.lastHeardUs, r.prepareUs = b, candidate, now, now
	r.failedElections++
	r.waitJitterUs = r.env.Rand().Int64N(r.leaseUs/2 + 1)
	r.promisedBy, r.promises = make([]bool, r.n), 0
	r.best = make(map[uint64]Entry)
	clear(r.inflight)
	r.addPromise(r.self, r.acceptedFrom(r.commitIdx+1))
	if r.role == candidate {
		r.broadcast(&Prepare{Ballot: b, From: r.commitIdx + 1})
	}
	r.resendPending()
}

// acceptedFrom lists this replica's entries from slot from on, in slot order.
func (r *Replica) acceptedFrom(from uint64) []Entry {
	var slots []uint64
	for s := range r.log {
		if s >= from {
			slots = append(slots, s)
		}
	}
	if len(slots) == 0 {
		return nil
	}
	slices.Sort(slots)
	out := make([]Entry, len(slots))
	for i, s := range slots {
		e := r.log[s]
		out[i] = Entry{Slot: s, Ballot: e.ballot, Txn: e.txn}
	}
	return out
}

func (r *Replica) onPrepare(dc int, m *Prepare) {
	if m.Ballot < r.promised || m.Ballot%uint64(r.n) != uint64(dc) {
		if m.Ballot < r.promised {
			r.env.Send(r.nodeOf[dc], &Nack{Ballot: r.promised})
		}
		return
	}
	r.observe(m.Ballot) // a new ballot gives its candidate one wait to win; a repeated Prepare does not
	r.env.Send(r.nodeOf[dc], &Promise{Ballot: m.Ballot, Entries: r.acceptedFrom(max(m.From, 1))})
}

func (r *Replica) onPromise(dc int, m *Promise) {
	if r.role != candidate || m.Ballot != r.promised || r.promisedBy[dc] {
		return
	}
	r.addPromise(dc, m.Entries)
}

// addPromise records dc's promise and, with a majority, makes this replica the leader.
func (r *Replica) addPromise(dc int, entries []Entry) {
	r.promisedBy[dc] = true
	r.promises++
	for _, e := range entries {
		if e.Slot <= r.commitIdx {
			continue
		}
		if b, ok := r.best[e.Slot]; !ok || e.Ballot > b.Ballot {
			r.best[e.Slot] = e
		}
	}
	if r.promises >= r.majority {
		r.failedElections, r.waitJitterUs = 0, 0
		r.becomeLeader()
	}
}

// becomeLeader ends phase 1: it re-proposes, in its ballot, every slot above its commit index up
// to the highest one its quorum reported, with the highest-ballot value or a no-op, then the
// transactions queued meanwhile.
func (r *Replica) becomeLeader() {
	r.role = leader
	top := r.commitIdx
	for s := range r.best {
		top = max(top, s)
	}
	best := r.best
	r.promisedBy, r.best = nil, nil
	r.nextSlot = top + 1
	for s := r.commitIdx + 1; s <= top; s++ {
		if e, ok := r.log[s]; ok && e.committed {
			continue
		}
		r.proposeAt(s, best[s].Txn)
	}
	r.heardUs, r.executedOf = make([]int64, r.n), make([]uint64, r.n)
	for dc := range r.heardUs {
		r.heardUs[dc] = r.env.NowUs()
	}
	r.sendCommit()
	queue := r.queue
	r.queue = nil
	for _, t := range queue {
		r.propose(t)
	}
}

// onForward proposes a forwarded transaction if this replica leads (or queues it while it runs
// for leadership); elsewhere it is dropped, and its origin will send it again.
func (r *Replica) onForward(t *txn.Txn) {
	if r.Leader() == r.self {
		r.propose(t)
	}
}

// propose gives t the next slot (with instance batching, puts it in the open batch, which takes
// the next slot when it closes), unless it was executed here already or is in flight in this
// ballot. A candidate queues it.
func (r *Replica) propose(t *txn.Txn) {
	switch {
	case r.role == candidate:
		if !slices.Contains(r.queue, t) {
			r.queue = append(r.queue, t)
		}
		return
	case r.role != leader || r.isExecuted(t.ID):
		return
	}
	if _, dup := r.inflight[t.ID]; dup {
		return
	}
	if r.batcher != nil {
		t = r.batcher.Add(t)
	}
	if t != nil {
		r.proposeNext(t)
	}
}

// proposeNext gives t (a transaction or a batch) the next slot.
func (r *Replica) proposeNext(t *txn.Txn) {
	s := r.nextSlot
	r.nextSlot++
	r.proposeAt(s, t)
}

// proposeAt accepts t (nil: no-op; or a batch) for slot s in this leader's ballot and sends
// Accept.
func (r *Replica) proposeAt(s uint64, t *txn.Txn) {
	e := &entry{ballot: r.promised, txn: t, acks: make([]bool, r.n), sentUs: r.env.NowUs()}
	r.log[s] = e
	if t != nil {
		for _, m := range txn.Unbatch(t) {
			r.inflight[m.ID] = s
		}
	}
	r.broadcast(&Accept{Ballot: r.promised, Slot: s, Txn: t})
	r.ack(s, e, r.self)
}

// resendAccepts sends Accept again to the replicas that have not answered for a while.
func (r *Replica) resendAccepts(now int64) {
	for s := r.commitIdx + 1; s < r.nextSlot; s++ {
		e, ok := r.log[s]
		if !ok || e.committed || e.ballot != r.promised || now-e.sentUs < r.resendUs {
			continue
		}
		e.sentUs = now
		for dc, acked := range e.acks {
			if !acked && dc != r.self {
				r.env.Send(r.nodeOf[dc], &Accept{Ballot: e.ballot, Slot: s, Txn: e.txn})
			}
		}
	}
}

func (r *Replica) onAccept(dc int, m *Accept) {
	if m.Slot == 0 || m.Ballot%uint64(r.n) != uint64(dc) {
		return
	}
	if !r.observe(m.Ballot) {
		r.env.Send(r.nodeOf[dc], &Nack{Ballot: r.promised})
		return
	}
	r.heardLeader()
	if e, ok := r.log[m.Slot]; m.Slot > r.trimmed && (!ok || !e.committed) {
		r.log[m.Slot] = &entry{ballot: m.Ballot, txn: m.Txn}
	}
	r.env.Send(r.nodeOf[dc], &Accepted{Ballot: m.Ballot, Slot: m.Slot})
}

func (r *Replica) onAccepted(dc int, m *Accepted) {
	if m.Ballot > r.promised {
		r.observe(m.Ballot)
		return
	}
	if r.role != leader || m.Ballot != r.promised {
		return
	}
	r.heardUs[dc] = r.env.NowUs()
	if e, ok := r.log[m.Slot]; ok && e.ballot == m.Ballot && e.acks != nil {
		r.ack(m.Slot, e, dc)
	}
}

// ack counts dc's acceptance of slot s; with a majority the slot is chosen, and if the commit
// index advances the leader executes and sends Commit.
func (r *Replica) ack(s uint64, e *entry, dc int) {
	if e.committed || e.acks[dc] {
		return
	}
	e.acks[dc] = true
	e.nAcks++
	if e.nAcks < r.commitQuorum {
		return
	}
	r.choose(e)
	if before := r.commitIdx; r.advance() > before && r.role == leader {
		r.sendCommit()
	}
}

// choose marks e chosen and drops its leader bookkeeping.
func (r *Replica) choose(e *entry) { e.committed, e.acks = true, nil }

func (r *Replica) onCommit(dc int, m *Commit) {
	if m.Ballot%uint64(r.n) != uint64(dc) {
		return
	}
	if !r.observe(m.Ballot) {
		r.env.Send(r.nodeOf[dc], &Nack{Ballot: r.promised})
		return
	}
	r.heardLeader()
	r.chooseUpTo(m.Ballot, m.UpTo)
	if r.advance() < m.UpTo {
		r.fetch(dc)
	}
	r.trim(m.TrimTo)
	if now := r.env.NowUs(); now-r.lastAckUs >= r.beatUs/2 {
		r.lastAckUs = now
		r.env.Send(r.nodeOf[dc], &CommitAck{Ballot: m.Ballot, Executed: r.commitIdx})
	}
}

// chooseUpTo marks chosen every entry above the commit index and up to upTo accepted in ballot b.
// A replica far behind holds far fewer entries than the slots it lacks, so it visits whichever
// is fewer: its entries (in any order: marking is order-independent) or the slots.
func (r *Replica) chooseUpTo(b, upTo uint64) {
	if upTo <= r.commitIdx {
		return
	}
	if upTo-r.commitIdx > uint64(len(r.log)) {
		for s, e := range r.log {
			if s > r.commitIdx && s <= upTo && e.ballot == b {
				r.choose(e)
			}
		}
		return
	}
	for s := r.commitIdx + 1; s <= upTo; s++ {
		if e, ok := r.log[s]; ok && e.ballot == b {
			r.choose(e)
		}
	}
}

func (r *Replica) onCommitAck(dc int, m *CommitAck) {
	if m.Ballot > r.promised {
		r.observe(m.Ballot)
		return
	}
	if r.role == leader && m.Ballot == r.promised {
		r.heardUs[dc] = r.env.NowUs()
		r.executedOf[dc] = max(r.executedOf[dc], m.Executed)
	}
}

// fetch asks dc for the chosen values this replica lacks, at most once per half resend period.
func (r *Replica) fetch(dc int) {
	if now := r.env.NowUs(); now-r.lastFetchUs >= r.resendUs/2 {
		r.lastFetchUs = now
		r.env.Send(r.nodeOf[dc], &Fetch{From: r.commitIdx + 1})
	}
}

func (r *Replica) onFetch(dc int, m *Fetch) {
	var out []Entry
	for s := max(m.From, r.trimmed+1); s <= r.commitIdx && len(out) < maxFetchEntries; s++ {
		e := r.log[s]
		out = append(out, Entry{Slot: s, Ballot: e.ballot, Txn: e.txn})
	}
	if len(out) > 0 {
		r.env.Send(r.nodeOf[dc], &Chosen{Entries: out})
	}
}

func (r *Replica) onChosen(m *Chosen) {
	for _, c := range m.Entries {
		if c.Slot <= r.commitIdx {
			continue
		}
		if e, ok := r.log[c.Slot]; ok && e.committed {
			continue
		}
		r.log[c.Slot] = &entry{ballot: c.Ballot, txn: c.Txn, committed: true}
	}
	r.advance()
}

// advance executes the chosen slots after the commit index, in order, and returns the new commit
// index.
func (r *Replica) advance() uint64 {
	for {
		e, ok := r.log[r.commitIdx+1]
		if !ok || !e.committed {
			return r.commitIdx
		}
		r.commitIdx++
		if r.nextSlot <= r.commitIdx {
			r.nextSlot = r.commitIdx + 1
		}
		r.execute(e.txn)
	}
}

// execute certifies and applies t (sequential certification, spec §5.1), or each member of a
// batch in batch order, skipping a no-op and duplicates of transactions executed already.
func (r *Replica) execute(t *txn.Txn) {
	if t == nil {
		return
	}
	for _, m := range txn.Unbatch(t) {
		if r.isExecuted(m.ID) {
			continue
		}
		r.executed[m.ID.Client()] = m.ID.Seq()
		delete(r.inflight, m.ID)
		delete(r.pending, m.ID)
		r.exec.Deliver(m)
	}
}

// isExecuted reports whether id, or a later transaction of its client, was executed here.
func (r *Replica) isExecuted(id txn.ID) bool {
	seq, ok := r.executed[id.Client()]
	return ok && id.Seq() <= seq
}
