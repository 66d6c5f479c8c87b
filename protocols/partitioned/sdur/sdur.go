// Package sdur is S-DUR, Scalable Deferred Update Replication, in geo-replicated settings (spec
// sdur.md, after Sciascia and Pedone, USI-INF-TR-2015-3): the key space is split into
// partitions, each replicated on a few servers; a transaction executes optimistically, reading
// from the nearest replica of each partition it touches, and terminates by one atomic broadcast
// per partition (our own Multi-Paxos, paxos.go), certification per partition in delivery order,
// and, for a global transaction, an exchange of votes between its partitions. Read-only
// transactions read a globally consistent snapshot and commit without certification.
//
// One Replica implements the baseline and the three latency techniques of the spec's §5, chosen
// by parameters (the registered variants set their defaults):
//
//   - sdur: BASE. A certified transaction joins the pending list PL and completes at its head,
//     when (if global) every partition's vote is in: FIFO completion, hence the convoy effect.
//   - sdur-delay: the coordinator abcasts a global to its own partition delay after sending it to
//     the others (Alg. 4, §5.1); locals never wait (§8 B4), and a coordinator always takes part
//     in its transactions (below).
//   - sdur-threshold: a local may jump the pending globals delivered at most K deliveries before
//     it, and a global completes only K deliveries after its own (Alg. 5 with the spec's fixes B2,
//     B3: completion at DC ≥ rt, a jump over g only while DC ≤ g.rt).
//   - sdur-votebcast: locals complete at certification; each global's outcome is ordered in its
//     partitions by a FINAL abcast (Alg. 6 with fix B10).
//
// Choices where the spec leaves room, beside its own [R] items:
//
//   - Snapshots (§3.6) run in the spec's marker+reconcile mode by default (snapshot.go): markers
//     between the partitions' leaders, globals held from SNAPBEGIN to SNAPRESUME in every
//     partition (the source's cost profile, measured by sdur-x6), then the greatest consistent
//     cut of the leaders' reports. snapshot_mode=reconcile-only skips the markers and the hold:
//     the leader of partition 0 asks a server of every partition for its report directly. The
//     cut is ordered in partition 0's broadcast (SnapDecided) before it is published, so
//     snapshots form one monotonic chain across leader changes. unsafe_snapshot_no_reconcile
//     publishes the SCs without reconciliation (with markers: the source's marker-only rule):
//     the negative control the checker catches.
//     unsafe_asymmetric_certification certifies globals with the local test, the source's
//     footnote 2 (scenario SD2's negative control).
//   - THRESHOLD's liveness tick (§5.2, B20) is on by default (tick_noop = 20ms): with it off a
//     global waits for K later deliveries, forever at the end of a run. One tick closes the
//     head global's window (Tick) instead of counting one delivery. Its idle clock is the time
//     since DC last advanced, not since the last delivery: partition 0's broadcast also orders
//     the snapshot decisions, which would otherwise hold the tick off forever when they come at
//     least every tick_noop.
//   - A transaction's coordinator is the server its client sent COMMIT to, which must replicate
//     one of the transaction's partitions; the client library picks the preferred server of its
//     home partition if the transaction touched it, else of its lowest partition.
//   - Votes travel over lossy links, and a crashed server misses those sent meanwhile: a server
//     missing a partition's vote asks that partition's servers for it directly (VoteQuery)
//     every 300 ms, besides abcasting ABORTREQ after τ_vote (§3.5); a server that voted
//     answers.
//   - SC counts the completions of every transaction that passed certification here, committed
//     or aborted by another partition's vote, not only the commits: replicas of a partition
//     learn votes at different times, so at a TERMINATE's delivery one replica may have
//     completed a pending transaction that another has not. The spec's certification (a
//     committed transaction checked against DB(st, SC], a pending one as pending) gives them
//     different answers when that transaction later aborts or is inside the reader's snapshot.
//     Here a TERMINATE with snapshot st waits until SC ≥ st (reads already do, B18), so every
//     completion inside the snapshot happened here too and every other one comes after st; and
//     a transaction that passed certification, completed with abort at slot i > st, still
//     counts as a conflict (abortedRead, abortedWrite). Certification is then a function of the
//     delivery order alone (invariant 1). Aborts take no version, so snapshots see the same
//     data; found by the swarm (seed 1 of TestSwarm/sdur diverged before).
//   - What a replica knows about decided transactions is forgotten after gc_horizon (gc.go): a
//     TERMINATE or ABORTREQ delivered more than the horizon after its COMMIT is ignored, so the
//     records that deduplicate them need not outlive it. The store's versions are kept (the
//     checker needs every version order, protocol/store).
package sdur

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// Mode is the certification and completion rule (spec §5).
type Mode uint8

// The modes.
const (
	Base Mode = iota
	Threshold
	VoteBcast
)

// Abort reasons of S-DUR.
const (
	// ReasonCertification: the transaction read a key a transaction committed after its
	// snapshot wrote (or, global, wrote a key such a transaction read).
	ReasonCertification txn.AbortReason = "certification"
	// ReasonPending: it conflicts with a certified transaction still pending.
	ReasonPending txn.AbortReason = "pending-conflict"
	// ReasonVote: another partition voted abort (or the transaction was partially terminated).
	ReasonVote txn.AbortReason = "vote-abort"
)

const (
	timerTick protocol.TimerID = iota + 1
	timerBatch
	timerDelay
)

// Replica is one S-DUR server: a replica of one partition.
type Replica struct {
	env  protocol.Env
	cfg  config
	self protocol.NodeID
	part int
	pl   *partitioned.Placement
	ab   *abcast

	sc  uint64   // SC: completions of certified transactions (see the package comment)
	log []txn.ID // the completed transactions, in SC order (log[i-1] took SC i)
	// lastWrite and lastRead: key → SC of the last committed writer and reader; abortedWrite
	// and abortedRead the same for the certified transactions that completed with abort.
	lastWrite, lastRead, abortedWrite, abortedRead map[string]uint64
	// inbox holds delivered payloads whose processing waits: a TERMINATE whose snapshot is
	// ahead of SC, and everything delivered after it.
	inbox    []Payload
	draining bool
	pending  []*pendingTx // PL, in completion order
	votes    map[txn.ID]map[int]bool
	seen     map[txn.ID]*seenTx
	dc       uint64 // THRESHOLD: delivered counter
	dcUs     int64  // THRESHOLD: when DC last advanced (the no-op tick's idle clock)
	globals  []GlobalCommit
	reads    tcc.Waiting[protocol.Request] // reads waiting for SC to reach their snapshot
	delayed  tcc.Waiting[*Terminate]       // DELAY: the coordinator's own-partition TERMINATEs
	snapM    uint64
	snapS    []uint64
	round    *snapRound // partition 0's leader: the snapshot being computed
	lastSnap int64
	snapHold

	// Garbage collection (gc.go): stampUs is the greatest submission time of the TERMINATEs
	// and ABORTREQs processed (a function of the delivery order), voteUs when each pending
	// vote entry was made, gcUs the last collection, logBase the completions trimmed from log.
	stampUs, gcUs int64
	voteUs        map[txn.ID]int64
	logBase       uint64
}

type pendingTx struct {
	t         *Terminate
	global    bool
	rt        uint64 // THRESHOLD: the global's reorder threshold
	since     int64  // delivery time
	askedUs   int64  // last ABORTREQ
	queriedUs int64  // last VoteQuery
	finalUs   int64  // VOTEBCAST: last FINAL proposal
	allVoteUs int64  // VOTEBCAST: when the votes were all in
}

type seenTx struct {
	delivered, abortRequested, completed, committed bool
	vote                                            int8  // 0 none, 1 commit, -1 abort
	submitUs                                        int64 // the transaction's COMMIT time (gc.go)
}

type snapRound struct {
	m       uint64
	prev    []uint64
	reports map[int]*Report
	startUs int64
}

// Partition returns the partition the replica serves.
func (r *Replica) Partition() int { return r.part }

// SC returns the replica's snapshot counter (see the package comment).
func (r *Replica) SC() uint64 { return r.sc }

// Snapshot returns the latest snapshot the replica knows: its number and one SC per partition.
func (r *Replica) Snapshot() (uint64, []uint64) { return r.snapM, r.snapS }

// Quiescent implements protocol.Quiescer: the replica has no work in progress, no transaction
// pending or waiting to be certified and no payload held for its broadcast. Drivers wait for
// every replica to be quiescent before they check a run (bench: quiescence).
func (r *Replica) Quiescent() bool {
	return len(r.pending) == 0 && len(r.inbox) == 0 && len(r.ab.held) == 0 && len(r.heldGlobals) == 0
}

// Leading reports whether the replica leads its partition's Paxos group.
func (r *Replica) Leading() bool { return r.ab.leading }

func newReplica(cfg protocol.Config, env protocol.Env, c config) (*Replica, error) {
	pl, err := partitioned.NewPlacement(cfg.Nodes, cfg.Topology.N())
	if err != nil {
		return nil, fmt.Errorf("sdur: %w", err)
	}
	if int(cfg.Self) < 0 || int(cfg.Self) >= len(cfg.Nodes) {
		return nil, fmt.Errorf("sdur: self node %d out of range", cfg.Self)
	}
	if len(pl.Node[0]) > 63 {
		return nil, fmt.Errorf("sdur: at most 63 replicas per partition, got %d", len(pl.Node[0]))
	}
	r := &Replica{env: env, cfg: c, self: cfg.Self, part: cfg.Nodes[cfg.Self].Partition, pl: pl,
		lastWrite: map[string]uint64{}, lastRead: map[string]uint64{}, abortedWrite: map[string]uint64{}, abortedRead: map[string]uint64{},
		votes: map[txn.ID]map[int]bool{}, voteUs: map[txn.ID]int64{},
		seen: map[txn.ID]*seenTx{}, snapS: make([]uint64, pl.Partitions())}
	members := pl.Node[r.part]
	r.ab = newAbcast(r, r.part, members, slices.Index(members, cfg.Self))
	return r, nil
}

// Start arms the periodic tick.
func (r *Replica) Start() { r.env.SetTimer(r.cfg.tickUs, timerTick) }

// HandleTimer runs the tick, a batch flush or the delayed broadcasts.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	now := r.env.NowUs()
	switch id {
	case timerTick:
		r.env.SetTimer(r.cfg.tickUs, timerTick)
		r.ab.tick(now)
		r.tick(now)
	case timerBatch:
		r.ab.batchDue = false
		if r.ab.leading {
			r.ab.propose()
			r.ab.maybePropose()
		}
	case timerDelay:
		r.delayed.Release(now, func(t *Terminate) { r.ab.submit(t) })
	}
}

// HandleMessage dispatches a peer message; anything malformed or from a stranger is ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	if int(from) < 0 || int(from) >= len(r.pl.DC) {
		return
	}
	switch m := m.(type) {
	case *Paxos:
		if i := slices.Index(r.ab.members, from); i >= 0 && m.Group == r.part && r.validPaxos(m) {
			r.ab.handle(i, m)
		}
	case *Submit:
		if m.Group == r.part && m.Payload != nil && r.validPayload(m.Payload) {
			r.ab.submit(m.Payload)
		}
	case *Vote:
		if m.Part >= 0 && m.Part < r.pl.Partitions() {
			r.onVote(m)
		}
	case *VoteQuery:
		if s := r.seen[m.Tx]; s != nil && s.vote != 0 {
			r.env.Send(from, &Vote{Tx: m.Tx, Part: r.part, Commit: s.vote > 0})
		}
	case *SnapAsk:
		r.onSnapAsk(from, m)
	case *Marker:
		r.onMarker(from, m)
	case *Report:
		r.onReport(m)
	case *SnapPublish:
		if m.M > r.snapM && len(m.S) == r.pl.Partitions() {
			r.snapM, r.snapS = m.M, m.S
			r.pruneGlobals()
		}
	}
}

// HandleRequest serves READ, the snapshot request and COMMIT.
func (r *Replica) HandleRequest(req protocol.Request) {
	if req.Kind != protocol.Operation {
		r.fail(req, fmt.Sprintf("request kind %d (S-DUR speaks its own operations)", req.Kind))
		return
	}
	switch op := req.Op.(type) {
	case *ReadReq:
		if partitioned.PartitionOf(op.Key, r.pl.Partitions()) != r.part {
			r.fail(req, "key "+op.Key+" is not in this partition")
			return
		}
		if !op.HasSt {
			op = &ReadReq{Tx: op.Tx, Key: op.Key, St: r.sc, HasSt: true}
			req.Op = op
		}
		if op.St > r.sc {
			r.reads.Add(int64(op.St), req)
			return
		}
		r.serveRead(req)
	case *SnapReq:
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Op: &SnapReply{M: r.snapM, S: r.snapS}})
	case *CommitReq:
		if msg := r.validCommit(op); msg != "" {
			r.fail(req, msg)
			return
		}
		r.coordinate(req, op)
	default:
		r.fail(req, fmt.Sprintf("unknown operation %T", req.Op))
	}
}

func (r *Replica) fail(req protocol.Request, msg string) {
	r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "sdur: " + msg})
}

func (r *Replica) serveRead(req protocol.Request) {
	op := req.Op.(*ReadReq)
	v := r.env.Store().GetAt(op.Key, op.St)
	r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Op: &ReadReply{Value: v.Value, Version: v.Writer, St: op.St}})
}

// validCommit describes what is wrong with a COMMIT, or returns "".
func (r *Replica) validCommit(op *CommitReq) string {
	if len(op.Slices) == 0 || op.Tx == txn.None {
		return "commit without a transaction"
	}
	mine := false
	for i, s := range op.Slices {
		if s.Part < 0 || s.Part >= r.pl.Partitions() || (i > 0 && s.Part <= op.Slices[i-1].Part) {
			return "slices out of order or of unknown partitions"
		}
		if msg := r.validSlice(s); msg != "" {
			return msg
		}
		mine = mine || s.Part == r.part
	}
	if !mine {
		return "the coordinator must replicate one of the transaction's partitions"
	}
	return ""
}

// validSlice checks that s's keys belong to its partition, are distinct, and that it writes
// only keys it read (no blind writes, spec invariant 5).
func (r *Replica) validSlice(s Slice) string {
	for i, k := range s.RS {
		if partitioned.PartitionOf(k, r.pl.Partitions()) != s.Part || slices.Contains(s.RS[:i], k) {
			return "read set key " + k + " repeated or not in partition"
		}
	}
	for i, w := range s.WS {
		if !slices.Contains(s.RS, w.Key) || slices.ContainsFunc(s.WS[:i], func(o txn.Write) bool { return o.Key == w.Key }) {
			return "blind or repeated write of " + w.Key
		}
	}
	return ""
}

// coordinate abcasts each slice of the transaction to its partition (Alg. 2, and Alg. 4 for
// DELAY: a global's own-partition broadcast waits delay).
func (r *Replica) coordinate(req protocol.Request, op *CommitReq) {
	parts := make([]int, len(op.Slices))
	for i, s := range op.Slices {
		parts[i] = s.Part
	}
	for _, s := range op.Slices {
		t := &Terminate{Tx: op.Tx, Slice: s, Parts: parts, Coord: r.self, Client: req.Client, Seq: req.Seq, SubmitUs: r.env.NowUs()}
		switch {
		case s.Part != r.part:
			r.submitTo(s.Part, t)
		case len(parts) > 1 && r.cfg.delayUs > 0:
			r.delayed.Add(r.env.NowUs()+r.cfg.delayUs, t)
			r.env.SetTimer(r.cfg.delayUs, timerDelay)
		default:
			r.ab.submit(t)
		}
	}
}

// submitTo hands p to partition q's broadcast: through every server of q, so that one crashed
// server or lost message does not lose it (each server forwards to its leader until delivery).
func (r *Replica) submitTo(q int, p Payload) {
	if q == r.part {
		r.ab.submit(p)
		return
	}
	for _, n := range r.pl.Node[q] {
		r.env.Send(n, &Submit{Group: q, Payload: p})
	}
}

// sendAllOf sends m to every server of the partitions parts but me.
func (r *Replica) sendAllOf(parts []int, m protocol.Message) {
	for _, q := range parts {
		for _, n := range r.pl.Node[q] {
			if n != r.self {
				r.env.Send(n, m)
			}
		}
	}
}

func (r *Replica) seenOf(id txn.ID, submitUs int64) *seenTx {
	s := r.seen[id]
	if s == nil {
		s = &seenTx{submitUs: submitUs}
		r.seen[id] = s
	}
	return s
}

// deliver is adeliver: one payload of the partition's broadcast, in order. A TERMINATE whose
// snapshot this replica has not reached waits, and everything delivered after it with it, until
// SC reaches the snapshot: then every transaction inside the snapshot has completed here, and
// those that are not will complete after SC (see the package comment).
func (r *Replica) deliver(p Payload) {
	r.inbox = append(r.inbox, p)
	r.drain()
}

// drain processes the inbox's payloads in order while the first one may be processed.
func (r *Replica) drain() {
	if r.draining {
		return
	}
	r.draining = true
	for len(r.inbox) > 0 {
		if t, ok := r.inbox[0].(*Terminate); ok && t.Slice.St > r.sc {
			break
		}
		p := r.inbox[0]
		r.inbox[0] = nil
		r.inbox = r.inbox[1:]
		r.process(p)
	}
	r.draining = false
}

// process is the delivery of one payload.
func (r *Replica) process(p Payload) {
	switch p := p.(type) {
	case *Terminate:
		r.onTerminate(p)
	case *AbortReq:
		r.onAbortReq(p)
	case *Final:
		if i := r.indexOf(p.Tx); i >= 0 {
			r.complete(r.pending[i].t, p.Commit, ReasonVote)
		}
	case *Tick:
		if p.To > r.dc {
			r.dc, r.dcUs = p.To, r.env.NowUs()
		}
		r.checkHead()
	case *SnapBegin:
		r.onSnapBegin(p)
	case *SnapResume:
		r.onSnapResume(p)
	case *SnapDecided:
		if p.M == r.snapM+1 && len(p.S) == r.pl.Partitions() {
			r.snapM, r.snapS = p.M, p.S
			if r.round != nil && r.round.m <= p.M {
				r.round = nil
			}
			if r.ab.leading {
				r.sendAllOf(allParts(r.pl.Partitions()), &SnapPublish{M: p.M, S: p.S})
			}
			r.pruneGlobals()
		}
	}
}

func allParts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func (r *Replica) indexOf(id txn.ID) int {
	return slices.IndexFunc(r.pending, func(p *pendingTx) bool { return p.t.Tx == id })
}

// onTerminate is a TERMINATE's delivery: ignored if it is a duplicate, if ABORTREQ won the race
// (§3.5, B16) or if it expired (gc.go); an abort request if it is late; held if it is a global
// delivered during a snapshot's hold; else certified.
func (r *Replica) onTerminate(t *Terminate) {
	switch r.admit(t.SubmitUs) {
	case expired:
		return
	case late:
		r.abortRequest(&AbortReq{Tx: t.Tx, Parts: t.Parts, Coord: t.Coord, Client: t.Client, Seq: t.Seq, SubmitUs: t.SubmitUs})
		return
	}
	s := r.seenOf(t.Tx, t.SubmitUs)
	if s.delivered || s.abortRequested {
		return
	}
	s.delivered = true
	if len(t.Parts) > 1 && r.holdM != 0 {
		r.heldGlobals = append(r.heldGlobals, t)
		return
	}
	r.terminate(t, s)
}

// terminate certifies a delivered slice, votes if it is global, and completes what it can.
func (r *Replica) terminate(t *Terminate, s *seenTx) {
	global := len(t.Parts) > 1
	ok, reason := r.certify(t, global)
	if global {
		s.vote = -1
		if ok {
			s.vote = 1
		}
		r.addVote(t.Tx, r.part, ok)
		r.sendAllOf(t.Parts, &Vote{Tx: t.Tx, Part: r.part, Commit: ok})
	}
	switch {
	case !ok:
		r.complete(t, false, reason)
	case r.cfg.mode == VoteBcast:
		if !global {
			r.complete(t, true, "")
		} else {
			r.maybeFinal(t.Tx)
		}
	}
	r.checkHead()
}

// certify runs the mode's certification of t and, if it passes, places t in PL (VOTEBCAST
// places only globals there; the caller completes its locals at once).
func (r *Replica) certify(t *Terminate, global bool) (bool, txn.AbortReason) {
	if r.cfg.mode == Threshold {
		r.dc++ // every certified delivery counts, aborted or not (B25)
		r.dcUs = r.env.NowUs()
	}
	sl := &t.Slice
	symmetric := global && !r.cfg.asymmetric
	for _, k := range sl.RS {
		if r.lastWrite[k] > sl.St || r.abortedWrite[k] > sl.St {
			return false, ReasonCertification
		}
	}
	if symmetric {
		for _, w := range sl.WS {
			if r.lastRead[w.Key] > sl.St || r.abortedRead[w.Key] > sl.St {
				return false, ReasonCertification
			}
		}
	}
	p := &pendingTx{t: t, global: global, since: r.env.NowUs()}
	switch {
	case r.cfg.mode == VoteBcast:
		for _, q := range r.pending {
			if readsWrites(sl, &q.t.Slice) || readsWrites(&q.t.Slice, sl) {
				return false, ReasonPending
			}
		}
		if global {
			r.pending = append(r.pending, p)
		}
		return true, ""
	case r.cfg.mode == Threshold && !global:
		i := r.jumpSlot(sl)
		if i < 0 {
			return false, ReasonPending
		}
		r.pending = slices.Insert(r.pending, i, p)
		return true, ""
	}
	for _, q := range r.pending {
		if !ctest(sl, symmetric, &q.t.Slice) {
			return false, ReasonPending
		}
	}
	if global && r.cfg.mode == Threshold {
		p.rt = r.dc + uint64(r.cfg.k)
	}
	r.pending = append(r.pending, p)
	return true, ""
}

// jumpSlot is THRESHOLD's placement of a local (Alg. 5 with fixes B3): the leftmost i such that
// nothing before i wrote what t read, and everything from i on is a global still inside its
// window that t neither reads from nor writes under; -1 if none (append is a candidate as long
// as nothing pending wrote what t read).
func (r *Replica) jumpSlot(sl *Slice) int {
	n := len(r.pending)
	// suffix[i]: every PL[k], k ≥ i, may be jumped.
	suffix := make([]bool, n+1)
	suffix[n] = true
	for k := n - 1; k >= 0; k-- {
		q := r.pending[k]
		suffix[k] = suffix[k+1] && q.global && r.dc <= q.rt && !readsWrites(&q.t.Slice, sl) && !readsWrites(sl, &q.t.Slice)
	}
	for i := 0; i <= n; i++ {
		if suffix[i] {
			return i
		}
		if readsWrites(sl, &r.pending[i].t.Slice) { // PL[i] wrote what t reads: t cannot pass it
			return -1
		}
	}
	return -1
}

// readsWrites reports whether a reads a key b writes.
func readsWrites(a, b *Slice) bool {
	for _, w := range b.WS {
		if slices.Contains(a.RS, w.Key) {
			return true
		}
	}
	return false
}

// ctest is the spec's ctest(t, t'): t read nothing t' writes and, if t is global, t' read
// nothing t writes (the symmetric test, §3.4).
func ctest(t *Slice, global bool, other *Slice) bool {
	return !readsWrites(t, other) && (!global || !readsWrites(other, t))
}

func (r *Replica) addVote(id txn.ID, part int, commit bool) {
	v := r.votes[id]
	if v == nil {
		v = map[int]bool{}
		r.votes[id] = v
		r.voteUs[id] = r.env.NowUs()
	}
	if _, dup := v[part]; !dup {
		v[part] = commit
	}
}

func (r *Replica) onVote(m *Vote) {
	if s := r.seen[m.Tx]; s != nil && s.completed {
		return
	}
	r.addVote(m.Tx, m.Part, m.Commit)
	if r.cfg.mode == VoteBcast {
		r.maybeFinal(m.Tx)
		return
	}
	r.checkHead()
}

// allVotes reports whether every partition of p voted, and whether all voted commit.
func (r *Replica) allVotes(p *pendingTx) (bool, bool) {
	v := r.votes[p.t.Tx]
	commit := true
	for _, q := range p.t.Parts {
		c, ok := v[q]
		if !ok {
			return false, false
		}
		commit = commit && c
	}
	return true, commit
}

// checkHead completes PL's head while it is ready (BASE, THRESHOLD).
func (r *Replica) checkHead() {
	if r.cfg.mode == VoteBcast {
		return
	}
	for len(r.pending) > 0 {
		p := r.pending[0]
		commit := true
		if p.global {
			all, c := r.allVotes(p)
			if !all || (r.cfg.mode == Threshold && r.dc < p.rt) {
				return
			}
			commit = c
		}
		r.complete(p.t, commit, ReasonVote)
	}
}

// maybeFinal proposes FINAL for a pending global whose votes are all in: the leader at once, a
// follower finalTimeout later (tick), in case the leader crashed (B10).
func (r *Replica) maybeFinal(id txn.ID) {
	i := r.indexOf(id)
	if i < 0 {
		return
	}
	p := r.pending[i]
	all, commit := r.allVotes(p)
	if !all {
		return
	}
	now := r.env.NowUs()
	if p.allVoteUs == 0 {
		p.allVoteUs = now
	}
	if (r.ab.leading && p.finalUs == 0) || (p.finalUs == 0 && now-p.allVoteUs >= r.cfg.finalTimeoutUs) ||
		(p.finalUs > 0 && now-p.finalUs >= r.cfg.finalTimeoutUs) {
		p.finalUs = now
		r.ab.submit(&Final{Tx: id, Commit: commit})
	}
}

// complete ends t at this partition (Alg. 2's complete): a commit, or the abort of a transaction
// that had passed certification here, takes the next SC slot; a commit installs the writes. The
// coordinator answers the client either way.
func (r *Replica) complete(t *Terminate, commit bool, reason txn.AbortReason) {
	certified := false
	if i := r.indexOf(t.Tx); i >= 0 {
		r.pending = slices.Delete(r.pending, i, i+1)
		certified = true
	}
	s := r.seenOf(t.Tx, t.SubmitUs)
	if s.completed {
		return
	}
	s.completed, s.committed = true, commit
	delete(r.votes, t.Tx)
	delete(r.voteUs, t.Tx)
	if commit || certified {
		r.sc++
		r.appendLog(t.Tx)
		reads, writes, installed := r.lastRead, r.lastWrite, t.Slice.WS
		if !commit {
			reads, writes, installed = r.abortedRead, r.abortedWrite, nil
		}
		r.env.Store().Apply(t.Tx, installed)
		for _, k := range t.Slice.RS {
			reads[k] = r.sc
		}
		for _, w := range t.Slice.WS {
			writes[w.Key] = r.sc
		}
		if commit && len(t.Parts) > 1 && r.cfg.snapshotUs > 0 {
			r.globals = append(r.globals, GlobalCommit{Tx: t.Tx, SC: r.sc, Parts: t.Parts})
		}
		r.reads.Release(int64(r.sc), r.serveRead)
	}
	if t.Coord == r.self {
		out := &CommitReply{Status: txn.Committed}
		if !commit {
			out.Status, out.Reason = txn.Aborted, reason
		}
		r.env.Reply(protocol.Reply{Client: t.Client, Seq: t.Seq, Op: out})
	}
	r.drain()
}

// onAbortReq is ABORTREQ's delivery (§3.5): it takes effect unless the transaction was
// delivered first or the request expired (gc.go).
func (r *Replica) onAbortReq(a *AbortReq) {
	if r.admit(a.SubmitUs) != expired {
		r.abortRequest(a)
	}
}

// abortRequest votes abort for a transaction this partition has not delivered, for good.
func (r *Replica) abortRequest(a *AbortReq) {
	s := r.seenOf(a.Tx, a.SubmitUs)
	if s.delivered || s.abortRequested {
		return
	}
	s.abortRequested, s.vote, s.completed = true, -1, true
	r.sendAllOf(a.Parts, &Vote{Tx: a.Tx, Part: r.part, Commit: false})
	if a.Coord == r.self {
		r.env.Reply(protocol.Reply{Client: a.Client, Seq: a.Seq, Op: &CommitReply{Status: txn.Aborted, Reason: ReasonVote}})
	}
}

// tick runs the replica's periodic duties: ABORTREQs for globals missing votes (§3.5), FINALs a
// follower proposes for a silent leader (VOTEBCAST), THRESHOLD's no-op tick, and snapshots.
func (r *Replica) tick(now int64) {
	for _, p := range r.pending {
		if !p.global {
			continue
		}
		if r.cfg.mode == VoteBcast {
			r.maybeFinal(p.t.Tx)
		}
		v := r.votes[p.t.Tx]
		if now-p.since >= r.cfg.retryUs && now-p.queriedUs >= r.cfg.retryUs {
			p.queriedUs = now
			for _, q := range p.t.Parts {
				if _, ok := v[q]; !ok {
					r.sendAllOf([]int{q}, &VoteQuery{Tx: p.t.Tx})
				}
			}
		}
		if now-p.since < r.cfg.voteTimeoutUs || now-p.askedUs < r.cfg.voteTimeoutUs {
			continue
		}
		p.askedUs = now
		for _, q := range p.t.Parts {
			if _, ok := v[q]; !ok {
				r.submitTo(q, &AbortReq{Tx: p.t.Tx, Parts: p.t.Parts, Coord: p.t.Coord, Client: p.t.Client, Seq: p.t.Seq, SubmitUs: p.t.SubmitUs})
			}
		}
	}
	if r.cfg.mode == Threshold && r.cfg.tickNoopUs > 0 && r.ab.leading && len(r.pending) > 0 && now-r.dcUs >= r.cfg.tickNoopUs {
		if p := r.pending[0]; p.global && r.dc < p.rt {
			if all, _ := r.allVotes(p); all {
				r.ab.submit(&Tick{To: p.rt})
			}
		}
	}
	r.snapshotTick(now)
	r.holdTick(now)
	r.collect(now)
}
