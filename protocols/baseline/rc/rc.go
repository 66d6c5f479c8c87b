// Package rc implements Replicated Commit (spec helios-message-futures.md §5.1, after Mahmoud et
// al., VLDB'13), the Helios evaluation's majority-quorum baseline: every datacenter holds a full
// replica with its own lock table, reads take shared locks at a majority of datacenters, and a
// transaction commits once a majority of datacenters accepted it (validated its reads and locked
// its writes). Its uncontended commit latency is the RTT to the closest majority, the ⌊n/2⌋-th
// smallest RTT to another datacenter (§5.6: V 78, O 66, C 78, I 175, S 194 on aws-helios).
//
// In Meridian a client talks only to its local replica, so that replica is the Paxos proposer
// (the spec's "client") on the client's behalf, its coordinator:
//
//   - Get (§5.1 step 1): the coordinator sends ReadLock to every replica, itself included, and
//     answers once a majority granted, with the newest version among them. If a majority refused
//     (or did not answer within the timeout), the Get answers with Reply.Err and the transaction
//     is doomed: its Commit aborts at once with reason "read-lock-denied" (or "timeout").
//     Request.TxnID names the lock; a Get without one is a lock-free majority read.
//   - Commit (steps 3–4): Accept to every replica; each validates and locks in one step and
//     votes. The coordinator commits on a majority of accepting votes and aborts ("rejected")
//     once a majority is impossible or ("timeout") when no majority arrived within the timeout.
//     It answers the client and sends the Decision to every replica, retransmitting until each
//     acknowledged. Each replica installs committed writes, then releases the transaction's locks.
//
// Choices where the spec is silent:
//
//   - Lock conflicts are no-wait (GAP-B1): a conflicting ReadLock is denied, a conflicting
//     Accept rejected. A replica that rejects releases the transaction's locks there.
//   - Accept validates each read's version against the replica's latest version of the key, in
//     addition to the shared lock: read locks are leases (param lock_timeout, default 2s) that a
//     replica drops when no Accept or Decision came, so a read lock may have lapsed and been
//     re-taken. Safety therefore rests on the Accept step alone: at the instant a transaction
//     commits, each replica of its accepting majority holds its locks, so two conflicting
//     committed transactions meet at a replica where one installed its writes and released
//     before the other was accepted, and that replica rejects a stale read.
//   - Locks taken by an accepted transaction are held until its decision is installed, never
//     released by a lease: releasing a prepared transaction's locks without its decision would
//     let a conflicting transaction commit through the same replica (the usual 2PC blocking
//     rule). They cannot leak: the coordinator decides within its timeout (param timeout,
//     default 2×max RTT + 1s) and retransmits the decision until every replica acknowledged it.
//   - Version order: all replicas must install a key's versions in one order (INV-2), but a
//     replica outside a writer's majority may receive decisions in any order. So the decision
//     carries each write's position in its key's order: the largest count of installed versions
//     of the key reported by the accepting majority, plus one. Every earlier committed writer of
//     the key was installed, before the acceptance, at some replica of any majority; so this is
//     exact. A replica installs a committed transaction once every written key has reached the
//     position before it, and holds its locks until then. Reads compare versions by this count.
//   - Empty transactions commit at once; ReadSnapshot is the per-datacenter snapshot of
//     protocol.ServeLocalRead.
//   - Garbage collection (param gc_after, default 10s): a participant forgets a decided
//     transaction gc_after after it installed (or released) it, and a coordinator forgets an
//     outcome gc_after after every replica acknowledged the decision. Forgetting t raises a
//     per-client watermark to t's sequence number, and a replica refuses any ReadLock, Accept,
//     Get or Commit of a transaction it does not track whose sequence number is at or below its
//     client's watermark: a denied lock, a rejecting vote, an error reply. Refusing is always
//     safe, so no timing assumption is needed for safety; it is also never wrong for a live
//     transaction, because a client runs one transaction at a time (client.Session), so a later
//     transaction of the same client exists only once the earlier one was answered. A committed
//     Decision that arrives again after its transaction was forgotten is recognised by its
//     positions (the keys have reached them) and only acknowledged. Memory therefore holds the
//     transactions of the last gc_after plus one watermark per client.
package rc

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

func init() {
	registry.Register("rc", registry.Entry{
		Family:      registry.ReadWrite,
		Description: "Replicated Commit: majority read locks and majority Paxos accept per transaction (no-wait locks)",
		New:         New,
		Codec:       Codec,
	})
}

// Parameter names Replicated Commit accepts.
const (
	// ParamLockTimeout is how long a replica keeps read locks of a transaction it has not yet
	// been asked to accept (default 2s).
	ParamLockTimeout = "lock_timeout"
	// ParamTimeout is how long a coordinator waits for a majority, for a read or a commit,
	// before failing the read or aborting (default 2 × the largest RTT + 1s).
	ParamTimeout = "timeout"
	// ParamGCAfter is how long a decided transaction's records are kept once no replica needs
	// them (default 10s; see the package comment).
	ParamGCAfter = "gc_after"
)

// Abort reasons Replicated Commit adds to the shared ones.
const (
	// ReasonReadLockDenied: a majority refused a read lock earlier in the transaction.
	ReasonReadLockDenied txn.AbortReason = "read-lock-denied"
	// ReasonRejected: so many replicas rejected the Accept that no majority can accept.
	ReasonRejected txn.AbortReason = "rejected"
	// ReasonTimeout: no majority answered a read or the Accept within the timeout.
	ReasonTimeout txn.AbortReason = "timeout"
)

const timerTick protocol.TimerID = 1

const tickUs = 10_000 // housekeeping period: timeouts, leases, retransmission

// lock is one key's lock table entry: at most one exclusive holder, or shared holders.
type lock struct {
	x txn.ID
	s []txn.ID
}

// vote states of a participant.
const (
	unvoted int8 = iota
	accepted
	rejected
)

// participant is a transaction as one replica's lock table sees it.
type participant struct {
	sKeys   []string // keys this replica holds t's shared locks on
	xKeys   []string // keys this replica holds t's exclusive locks on
	vote    int8
	counts  []uint64 // the accepting vote's counts, for duplicates
	leaseUs int64    // while unvoted: when the read locks lapse
}

// pendingRead is a Get waiting for a majority at its coordinator.
type pendingRead struct {
	txn        txn.ID
	client     txn.ClientID
	seq        uint64
	answered   []bool // per datacenter
	grants     int
	denials    int
	best       *ReadReply
	deadlineUs int64
}

// coordinated is a transaction this replica coordinates, from its Commit request until every
// replica acknowledged the decision.
type coordinated struct {
	t          *txn.Txn
	client     txn.ClientID
	seq        uint64
	deadlineUs int64
	votes      []int8 // per datacenter
	accepts    int
	rejects    int
	maxCounts  []uint64
	decision   *Decision // nil until decided
	acked      []bool
	unacked    int
	resendUs   int64
}

// record is a decided transaction that may be forgotten from atUs on.
type record struct {
	id   txn.ID
	atUs int64
}

// delivery is a message from this replica to itself, handled after the current input.
type delivery struct {
	m protocol.Message
}

// Replica is one Replicated Commit instance: a participant (lock table, store) and the
// coordinator of its local clients' transactions.
type Replica struct {
	env                             protocol.Env
	nodeOf                          []protocol.NodeID // replica of each datacenter
	dcOf                            []int             // datacenter of each node
	self, n                         int
	majority                        int
	lockLeaseUs, timeoutUs, retryUs int64
	gcAfterUs                       int64

	// Participant state.
	locks   map[string]*lock
	parts   map[txn.ID]*participant
	count   map[string]uint64 // versions of each key installed here
	decided map[txn.ID]bool   // decisions received here
	waiting []*Decision       // committed, waiting for earlier versions of their keys
	done    []record          // decided here, in decision order, to forget

	// Coordinator state.
	nextRead uint64
	reads    map[uint64]*pendingRead
	doomed   map[txn.ID]txn.AbortReason
	coords   map[txn.ID]*coordinated
	outcomes map[txn.ID]protocol.Reply // decided here as coordinator: answers repeated commits
	acked    []record                  // outcomes every replica acknowledged, to forget

	// forgot is, per client, the highest sequence number of a transaction this replica forgot.
	forgot map[txn.ClientID]uint32

	inbox []delivery
}

// New builds a Replicated Commit replica. It needs exactly one replica per datacenter and
// accepts the parameters lock_timeout, timeout and gc_after (Go durations).
func New(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
	nodeOf, self, err := protocol.FullReplicas(pc)
	if err != nil {
		return nil, err
	}
	p := pc.Params
	if err := p.CheckKnown([]string{ParamLockTimeout, ParamTimeout, ParamGCAfter}, nil); err != nil {
		return nil, fmt.Errorf("rc: %w", err)
	}
	n := len(nodeOf)
	maxRTTUs := int64(0)
	for dc := range n {
		maxRTTUs = max(maxRTTUs, int64(pc.Topology.MaxRTTMs(dc)*1000))
	}
	lease, err := p.Duration(ParamLockTimeout, 2_000_000)
	if err != nil {
		return nil, fmt.Errorf("rc: %w", err)
	}
	timeout, err := p.Duration(ParamTimeout, 2*maxRTTUs+1_000_000)
	if err != nil {
		return nil, fmt.Errorf("rc: %w", err)
	}
	gcAfter, err := p.Duration(ParamGCAfter, 10_000_000)
	if err != nil {
		return nil, fmt.Errorf("rc: %w", err)
	}
	if lease <= 0 || timeout <= 0 || gcAfter <= 0 {
		return nil, fmt.Errorf("rc: parameters %s, %s and %s must be positive", ParamLockTimeout, ParamTimeout, ParamGCAfter)
	}
	dcOf := make([]int, len(pc.Nodes))
	for i, nd := range pc.Nodes {
		dcOf[i] = nd.DC
	}
	return &Replica{
		env: env, nodeOf: nodeOf, dcOf: dcOf, self: self, n: n, majority: n/2 + 1,
		lockLeaseUs: lease, timeoutUs: timeout, retryUs: max(2*maxRTTUs, 10_000), gcAfterUs: gcAfter,
		locks: map[string]*lock{}, parts: map[txn.ID]*participant{}, count: map[string]uint64{},
		decided: map[txn.ID]bool{}, reads: map[uint64]*pendingRead{}, doomed: map[txn.ID]txn.AbortReason{},
		coords: map[txn.ID]*coordinated{}, outcomes: map[txn.ID]protocol.Reply{}, forgot: map[txn.ClientID]uint32{},
	}, nil
}

// Start arms the housekeeping timer.
func (r *Replica) Start() { r.env.SetTimer(tickUs, timerTick) }

// send delivers m to datacenter dc's replica; to itself it is handled after the current input.
func (r *Replica) send(dc int, m protocol.Message) {
	if dc == r.self {
		r.inbox = append(r.inbox, delivery{m: m})
		return
	}
	r.env.Send(r.nodeOf[dc], m)
}

func (r *Replica) broadcast(m protocol.Message) {
	for dc := range r.n {
		r.send(dc, m)
	}
}

// drain handles the messages this replica sent itself, in order.
func (r *Replica) drain() {
	for len(r.inbox) > 0 {
		d := r.inbox[0]
		r.inbox = r.inbox[1:]
		r.handle(r.self, d.m)
	}
	r.inbox = nil
}

// HandleMessage processes one peer message; malformed ones are ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	if from < 0 || int(from) >= len(r.dcOf) || r.nodeOf[r.dcOf[from]] != from {
		return
	}
	r.handle(r.dcOf[from], m)
	r.drain()
}

func (r *Replica) handle(dc int, m protocol.Message) {
	switch m := m.(type) {
	case *ReadLock:
		if m != nil {
			r.onReadLock(dc, m)
		}
	case *ReadReply:
		if m != nil {
			r.onReadReply(dc, m)
		}
	case *Accept:
		if m != nil && m.Txn != nil {
			r.onAccept(dc, m.Txn)
		}
	case *Vote:
		if m != nil {
			r.onVote(dc, m)
		}
	case *Decision:
		if m != nil && (!m.Committed || len(m.Positions) == len(m.Writes)) {
			r.onDecision(dc, m)
		}
	case *DecisionAck:
		if m != nil {
			r.onDecisionAck(dc, m)
		}
	}
}

// HandleRequest serves Get through a majority of read locks, Commit through a majority of
// accepts, and ReadSnapshot from the local store.
func (r *Replica) HandleRequest(req protocol.Request) {
	switch req.Kind {
	case protocol.Get:
		r.get(req)
	case protocol.Commit:
		r.commit(req)
	case protocol.ReadSnapshot:
		protocol.ServeLocalRead(r.env, req)
	default:
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: fmt.Sprintf("rc: unknown request kind %d", req.Kind)})
	}
	r.drain()
}

// HandleTimer runs housekeeping: read and commit timeouts, decision retransmission, read-lock
// leases and garbage collection, each in a deterministic order.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id != timerTick {
		return
	}
	now := r.env.NowUs()
	for _, id := range sortedKeys(r.reads) {
		if pr := r.reads[id]; now >= pr.deadlineUs {
			r.failRead(id, pr, ReasonTimeout, "rc: read timed out without a majority")
		}
	}
	for _, id := range sortedKeys(r.coords) {
		c := r.coords[id]
		switch {
		case c.decision == nil && now >= c.deadlineUs:
			r.decide(c, false, ReasonTimeout)
		case c.decision != nil && now >= c.resendUs:
			c.resendUs = now + r.retryUs
			for dc := range r.n {
				if !c.acked[dc] {
					r.send(dc, c.decision)
				}
			}
		}
	}
	for _, id := range sortedKeys(r.parts) {
		if p := r.parts[id]; p.vote == unvoted && now >= p.leaseUs {
			r.release(id, p)
			delete(r.parts, id)
		}
	}
	r.collect(now)
	r.drain()
	r.env.SetTimer(tickUs, timerTick)
}

// collect forgets the decided transactions and the acknowledged outcomes older than gc_after
// (package comment), oldest first; a committed transaction still waiting to be installed is
// kept, and so is everything decided after it.
func (r *Replica) collect(now int64) {
	for len(r.done) > 0 && now >= r.done[0].atUs {
		id := r.done[0].id
		if slices.ContainsFunc(r.waiting, func(d *Decision) bool { return d.Txn == id }) {
			break
		}
		r.done = r.done[1:]
		delete(r.decided, id)
		r.forget(id)
	}
	for len(r.acked) > 0 && now >= r.acked[0].atUs {
		id := r.acked[0].id
		r.acked = r.acked[1:]
		delete(r.outcomes, id)
		r.forget(id)
	}
}

func (r *Replica) forget(id txn.ID) {
	if c := id.Client(); id.Seq() > r.forgot[c] {
		r.forgot[c] = id.Seq()
	}
}

// forgotten reports whether id is at or below its client's watermark: unless this replica
// still tracks it, it was forgotten or belongs to a client that has moved on.
func (r *Replica) forgotten(id txn.ID) bool {
	w, ok := r.forgot[id.Client()]
	return ok && id.Seq() <= w
}

func sortedKeys[K txn.ID | uint64, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ---- Coordinator: reads ----

func (r *Replica) get(req protocol.Request) {
	reply := func(msg string) {
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: msg})
	}
	switch {
	case req.Key == "":
		reply("rc: empty key")
		return
	case req.TxnID != txn.None && r.doomed[req.TxnID] != "":
		reply("rc: transaction " + req.TxnID.String() + " already failed a read")
		return
	case req.TxnID != txn.None && (r.coords[req.TxnID] != nil || r.outcomes[req.TxnID].Status != 0):
		reply("rc: transaction " + req.TxnID.String() + " already submitted for commit")
		return
	case req.TxnID != txn.None && r.forgotten(req.TxnID) && r.parts[req.TxnID] == nil:
		reply("rc: transaction " + req.TxnID.String() + " is older than its client's last forgotten one")
		return
	}
	r.nextRead++
	r.reads[r.nextRead] = &pendingRead{txn: req.TxnID, client: req.Client, seq: req.Seq,
		answered: make([]bool, r.n), deadlineUs: r.env.NowUs() + r.timeoutUs}
	r.broadcast(&ReadLock{Txn: req.TxnID, Read: r.nextRead, Key: req.Key})
}

func (r *Replica) onReadReply(dc int, m *ReadReply) {
	pr := r.reads[m.Read]
	if pr == nil || pr.txn != m.Txn || pr.answered[dc] {
		return
	}
	pr.answered[dc] = true
	if !m.Granted {
		pr.denials++
		if pr.denials > r.n-r.majority {
			r.failRead(m.Read, pr, ReasonReadLockDenied, "rc: read lock denied by a majority")
		}
		return
	}
	pr.grants++
	if pr.best == nil || m.Count > pr.best.Count {
		pr.best = m
	}
	if pr.grants >= r.majority {
		delete(r.reads, m.Read)
		r.env.Reply(protocol.Reply{Client: pr.client, Seq: pr.seq, Value: pr.best.Value, Version: pr.best.Version})
	}
}

// failRead answers a read that cannot reach a majority and dooms its transaction.
func (r *Replica) failRead(id uint64, pr *pendingRead, reason txn.AbortReason, msg string) {
	delete(r.reads, id)
	if pr.txn != txn.None && r.doomed[pr.txn] == "" {
		r.doomed[pr.txn] = reason
	}
	r.env.Reply(protocol.Reply{Client: pr.client, Seq: pr.seq, Err: msg})
}

// ---- Coordinator: commit ----

func (r *Replica) commit(req protocol.Request) {
	if msg := protocol.ValidateCommit(req); msg != "" {
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "rc: " + msg})
		return
	}
	t := req.Txn
	if out, ok := r.outcomes[t.ID]; ok { // a repeated request: the same answer
		out.Client, out.Seq = req.Client, req.Seq
		r.env.Reply(out)
		return
	}
	if c := r.coords[t.ID]; c != nil {
		c.client, c.seq = req.Client, req.Seq // answer the latest request
		return
	}
	if r.forgotten(t.ID) && r.parts[t.ID] == nil && r.doomed[t.ID] == "" {
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "rc: the outcome of " + t.ID.String() + " is no longer known"})
		return
	}
	c := &coordinated{t: t, client: req.Client, seq: req.Seq, deadlineUs: r.env.NowUs() + r.timeoutUs,
		votes: make([]int8, r.n), maxCounts: make([]uint64, len(t.Writes))}
	r.coords[t.ID] = c
	if reason := r.doomed[t.ID]; reason != "" {
		r.decide(c, false, reason)
		return
	}
	if len(t.Reads) == 0 && len(t.Writes) == 0 {
		r.decide(c, true, "")
		return
	}
	r.broadcast(&Accept{Txn: t})
}

func (r *Replica) onVote(dc int, m *Vote) {
	c := r.coords[m.Txn]
	if c == nil || c.decision != nil || c.votes[dc] != unvoted {
		return
	}
	if !m.Accepted {
		c.votes[dc] = rejected
		c.rejects++
		if c.rejects > r.n-r.majority {
			r.decide(c, false, ReasonRejected)
		}
		return
	}
	if len(m.Counts) != len(c.t.Writes) {
		return // malformed
	}
	c.votes[dc] = accepted
	c.accepts++
	for i, n := range m.Counts {
		c.maxCounts[i] = max(c.maxCounts[i], n)
	}
	if c.accepts >= r.majority {
		r.decide(c, true, "")
	}
}

// decide fixes c's outcome, answers the client and sends the decision to every replica.
func (r *Replica) decide(c *coordinated, commit bool, reason txn.AbortReason) {
	d := &Decision{Txn: c.t.ID, Committed: commit}
	out := protocol.Reply{Client: c.client, Seq: c.seq, Status: txn.Aborted, Reason: reason}
	if commit {
		out.Status, out.Reason = txn.Committed, ""
		d.Writes = c.t.Writes
		d.Positions = make([]uint64, len(c.maxCounts))
		for i, n := range c.maxCounts {
			d.Positions[i] = n + 1
		}
	}
	c.decision = d
	c.acked = make([]bool, r.n)
	c.unacked = r.n
	c.resendUs = r.env.NowUs() + r.retryUs
	delete(r.doomed, c.t.ID)
	r.outcomes[c.t.ID] = out
	r.env.Reply(out)
	r.broadcast(d)
}

func (r *Replica) onDecisionAck(dc int, m *DecisionAck) {
	c := r.coords[m.Txn]
	if c == nil || c.decision == nil || c.acked[dc] {
		return
	}
	c.acked[dc] = true
	c.unacked--
	if c.unacked == 0 {
		delete(r.coords, m.Txn)
		r.acked = append(r.acked, record{id: m.Txn, atUs: r.env.NowUs() + r.gcAfterUs})
	}
}

// ---- Participant ----

func (r *Replica) lockOf(key string) *lock {
	l := r.locks[key]
	if l == nil {
		l = &lock{}
		r.locks[key] = l
	}
	return l
}

// sharedByOthers reports whether a transaction other than id holds a shared lock in l.
func sharedByOthers(l *lock, id txn.ID) bool {
	for _, h := range l.s {
		if h != id {
			return true
		}
	}
	return false
}

func (r *Replica) onReadLock(dc int, m *ReadLock) {
	deny := &ReadReply{Txn: m.Txn, Read: m.Read}
	if m.Key == "" {
		return
	}
	if m.Txn != txn.None {
		p := r.parts[m.Txn]
		if r.decided[m.Txn] || (p != nil && p.vote != unvoted) || (p == nil && r.forgotten(m.Txn)) {
			r.send(dc, deny) // too late: the transaction is past its read phase here
			return
		}
	}
	if l := r.locks[m.Key]; l != nil && l.x != txn.None && l.x != m.Txn {
		r.send(dc, deny) // no-wait (GAP-B1)
		return
	}
	if m.Txn != txn.None {
		p := r.parts[m.Txn]
		if p == nil {
			p = &participant{}
			r.parts[m.Txn] = p
		}
		p.leaseUs = r.env.NowUs() + r.lockLeaseUs
		if !slices.Contains(p.sKeys, m.Key) {
			l := r.lockOf(m.Key)
			l.s = append(l.s, m.Txn)
			p.sKeys = append(p.sKeys, m.Key)
		}
	}
	v := r.env.Store().Get(m.Key)
	r.send(dc, &ReadReply{Txn: m.Txn, Read: m.Read, Granted: true, Value: v.Value, Version: v.Writer, Count: r.count[m.Key]})
}

// onAccept is §5.1 step 3 at one replica: in one step, check every read against the latest
// version and the lock table, check every write against the lock table, then lock everything
// and accept, or release everything and reject.
func (r *Replica) onAccept(dc int, t *txn.Txn) {
	if r.decided[t.ID] {
		return // the coordinator has decided already and ignores votes
	}
	p := r.parts[t.ID]
	if p != nil && p.vote != unvoted { // a duplicate: repeat the vote
		r.send(dc, &Vote{Txn: t.ID, Accepted: p.vote == accepted, Counts: p.counts})
		return
	}
	if p == nil && r.forgotten(t.ID) {
		r.send(dc, &Vote{Txn: t.ID}) // decided and forgotten here, or its client has moved on
		return
	}
	if p == nil {
		p = &participant{}
		r.parts[t.ID] = p
	}
	ok := true
	for _, rd := range t.Reads {
		l := r.locks[rd.Key]
		if r.env.Store().Get(rd.Key).Writer != rd.Version || (l != nil && l.x != txn.None && l.x != t.ID) {
			ok = false
			break
		}
	}
	for _, w := range t.Writes {
		if !ok {
			break
		}
		if l := r.locks[w.Key]; l != nil && ((l.x != txn.None && l.x != t.ID) || sharedByOthers(l, t.ID)) {
			ok = false
		}
	}
	if !ok {
		r.release(t.ID, p)
		p.vote = rejected
		r.send(dc, &Vote{Txn: t.ID})
		return
	}
	for _, rd := range t.Reads {
		if !slices.Contains(p.sKeys, rd.Key) {
			l := r.lockOf(rd.Key)
			l.s = append(l.s, t.ID)
			p.sKeys = append(p.sKeys, rd.Key)
		}
	}
	p.counts = make([]uint64, len(t.Writes))
	for i, w := range t.Writes {
		r.lockOf(w.Key).x = t.ID
		p.xKeys = append(p.xKeys, w.Key)
		p.counts[i] = r.count[w.Key]
	}
	p.vote = accepted
	r.send(dc, &Vote{Txn: t.ID, Accepted: true, Counts: p.counts})
}

// release drops every lock id holds here.
func (r *Replica) release(id txn.ID, p *participant) {
	for _, k := range p.sKeys {
		if l := r.locks[k]; l != nil {
			if i := slices.Index(l.s, id); i >= 0 {
				l.s = slices.Delete(l.s, i, i+1)
			}
			r.dropIfFree(k, l)
		}
	}
	for _, k := range p.xKeys {
		if l := r.locks[k]; l != nil && l.x == id {
			l.x = txn.None
			r.dropIfFree(k, l)
		}
	}
	p.sKeys, p.xKeys = nil, nil
}

func (r *Replica) dropIfFree(key string, l *lock) {
	if l.x == txn.None && len(l.s) == 0 {
		delete(r.locks, key)
	}
}

// onDecision records a decision (once), acknowledges it (always), and installs or releases.
func (r *Replica) onDecision(dc int, d *Decision) {
	r.send(dc, &DecisionAck{Txn: d.Txn})
	if r.decided[d.Txn] || (d.Committed && len(d.Writes) > 0 && r.count[d.Writes[0].Key] >= d.Positions[0]) {
		return // known, or installed and forgotten
	}
	r.decided[d.Txn] = true
	r.done = append(r.done, record{id: d.Txn, atUs: r.env.NowUs() + r.gcAfterUs})
	if !d.Committed {
		if p := r.parts[d.Txn]; p != nil {
			r.release(d.Txn, p)
			delete(r.parts, d.Txn)
		}
		return
	}
	r.waiting = append(r.waiting, d)
	r.installReady()
}

// installReady installs every waiting committed transaction whose keys have reached the
// position before its versions, until none is ready; installing one may ready another.
func (r *Replica) installReady() {
	for progress := true; progress; {
		progress = false
		for i := 0; i < len(r.waiting); i++ {
			d := r.waiting[i]
			if !r.ready(d) {
				continue
			}
			r.waiting = slices.Delete(r.waiting, i, i+1)
			i--
			r.env.Store().Apply(d.Txn, d.Writes)
			for _, w := range d.Writes {
				r.count[w.Key]++
			}
			if p := r.parts[d.Txn]; p != nil {
				r.release(d.Txn, p)
				delete(r.parts, d.Txn)
			}
			progress = true
		}
	}
}

func (r *Replica) ready(d *Decision) bool {
	for i, w := range d.Writes {
		if r.count[w.Key]+1 != d.Positions[i] {
			return false
		}
	}
	return true
}
