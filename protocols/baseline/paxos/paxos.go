// Package paxos implements the two serial-log baselines of the Helios evaluation (spec
// helios-message-futures.md §5.3 and §5.4): the Megastore-style Paxos commit ("paxos-commit",
// the "Paxos" of Ch. 3) and Paxos-CP (Patterson et al., VLDB'12; "paxos-cp").
//
// The whole database is one entity group with one replicated transaction log. Every datacenter
// runs one Replica, which is at once proposer, acceptor and learner; each log position is an
// independent single-decree Paxos instance whose value is a list of transactions (always one
// for paxos-commit). Ballots are round·n + datacenter, so no two proposers ever share one.
//
// Reads are local (protocol.ServeLocalRead). Commit requests queue FIFO at their replica, which
// runs one proposal at a time (GAP-B3: the latency includes the queueing). When a transaction t
// reaches the head of the queue, the replica's applied position p is its read position: t is
// proposed for position p+1 only if every version it read is still the latest at p (otherwise
// it aborts with stale-read at once), which makes "t read at p" true. A proposal is Phase 1
// (prepare to all, a majority of promises; a reported accepted value with the highest ballot
// must be driven instead of t), then Phase 2 (accept to all, a majority of accepts: chosen),
// then a Chosen broadcast (the "apply"). Learners apply positions strictly in order; gaps are
// filled by the periodic Sync heartbeat (a peer that has applied more resends the missing
// Chosen values) and by acceptors answering a Prepare or Accept for a decided position with
// the decision.
//
// Validation: t's fate is decided only by the chosen log. If position p+1 is chosen with a value
// that does not hold t, t lost it: paxos-commit aborts t (lost-position; its reads may be stale,
// §5.3 step 4). Paxos-CP promotes t instead unless some committed transaction at a position
// chosen since p writes a key t reads or writes (then remote-conflict): t goes back to the head
// of the queue and competes for the next position with a fresh Phase 1 (§5.4; the limit is the
// parameter max_promotions, 0 = none, GAP-B4). As a safety net independent of the proposers,
// every replica applies a chosen list in order and installs a transaction (store.Apply) only if
// its reads are still the latest versions at that point of the log; the decision is the same
// at every replica because the logs are. Proposers only ever propose transactions valid against
// the prefix, so in practice every transaction in a chosen list commits.
//
// Combination (paxos-cp, GAP-B4): a proposer whose Phase 1 leaves it a free choice proposes the
// head of its queue together with every other transaction of its own queue (in FIFO order) whose
// reads are still current and which conflicts with no transaction already in the list under the
// bidirectional test (one writes a key the other reads or writes). Transactions seen in promise
// replies are not combined: they belong to other proposers' queues.
//
// Garbage collection: every replica learns from the Sync heartbeats how far each peer has
// applied the log, and drops the prefix that every replica has applied, except the last
// keptPositions of it and never a position at or after its own in-flight proposal's (which
// Paxos-CP's promotion test reads), together with the outcomes of the transactions in it. No peer can ask for a dropped position (each has applied
// it), and a transaction is chosen at one position only (a proposer moves it on only after that
// position is chosen without it), so the outcomes kept for the retained suffix suffice. Memory
// is therefore bounded by the log suffix some replica still lacks.
//
// Liveness: a proposal that stalls (lost messages, frozen or partitioned datacenters) is retried
// with a higher ballot after the retry timeout, doubled on every consecutive retry (up to 64×)
// and randomised with the replica's seeded PRNG; a rejected proposal backs off for a random part
// of the timeout. Safety never depends on delivery. Parameters: retry (duration; default
// 2·max RTT of the datacenter + 20 ms, also the Sync period) and max_promotions (paxos-cp).
package paxos

import (
	"fmt"
	"slices"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// Abort reasons specific to the serial-log baselines.
const (
	// ReasonLostPosition: another value was chosen for the position t competed for
	// (paxos-commit never retries).
	ReasonLostPosition txn.AbortReason = "lost-position"
	// ReasonPromotionLimit: t lost more positions than max_promotions allows (paxos-cp).
	ReasonPromotionLimit txn.AbortReason = "promotion-limit"
)

func init() {
	registry.Register("paxos-commit", registry.Entry{
		Family:      registry.ReadWrite,
		Description: "Megastore-style Paxos commit: one serial log, Phase 1 + Phase 2 per position, losers abort",
		New:         New(false), Codec: Codec})
	registry.Register("paxos-cp", registry.Entry{
		Family:      registry.ReadWrite,
		Description: "Paxos-CP: the serial Paxos log with promotion of non-conflicting losers and combination",
		New:         New(true), Codec: Codec})
}

const (
	timerSync     protocol.TimerID = 1
	timerProposal protocol.TimerID = 2 // + 4·generation
	syncBatch                      = 64
	maxBackoff                     = 64
	keptPositions                  = 256 // applied everywhere, yet kept (see the package comment)
)

// pending is a commit request waiting at its origin replica.
type pending struct {
	t          *txn.Txn
	client     txn.ClientID
	seq        uint64
	promotions int
}

// acceptor is the acceptor state of one undecided position.
type acceptor struct {
	promised  uint64
	accBallot uint64
	value     []*txn.Txn
}

// proposal is this replica's one in-flight proposal.
type proposal struct {
	pos      uint64
	ballot   uint64
	phase    int // 1, 2, or 0 while backing off after a rejection
	members  []*pending
	free     []*txn.Txn // the value of our free choice, kept across retries
	value    []*txn.Txn // the value driven in Phase 2
	votes    uint64     // bitmask of promises (Phase 1) or accepts (Phase 2)
	best     uint64     // highest accepted ballot reported in Phase 1
	bestVal  []*txn.Txn
	attempts int
}

// Replica is one datacenter's proposer, acceptor and learner.
type Replica struct {
	env           protocol.Env
	combined      bool
	retryUs       int64
	maxPromotions int
	nodeOf        []protocol.NodeID
	self, n       int
	majority      int

	round       uint64                // highest ballot round seen
	acc         map[uint64]*acceptor  // undecided positions
	log         [][]*txn.Txn          // log[i] is the value chosen for position base+i+1; all applied
	base        uint64                // positions every replica has applied, dropped from log
	peerApplied []uint64              // per datacenter: the highest applied position it reported
	chosen      map[uint64][]*txn.Txn // learned but not yet applied (a gap precedes them)
	outcome     map[txn.ID]bool       // transactions applied in log: installed or not
	queue       []*pending
	cur         *proposal
	gen         int
	selfQ       []*Message
}

// New returns the Factory of paxos-commit (combined = false) or paxos-cp (combined = true).
func New(combined bool) protocol.Factory {
	return func(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
		nodeOf, self, err := protocol.FullReplicas(pc)
		if err != nil {
			return nil, err
		}
		if len(nodeOf) > 64 {
			return nil, fmt.Errorf("paxos: at most 64 datacenters, got %d", len(nodeOf))
		}
		if err := pc.Params.CheckKnown([]string{"retry", "max_promotions"}, nil); err != nil {
			return nil, err
		}
		def := int64(2*pc.Topology.MaxRTTMs(self)*1000) + 20_000
		retry, err := pc.Params.Duration("retry", def)
		if err != nil {
			return nil, err
		}
		if retry <= 0 {
			return nil, fmt.Errorf("parameter retry: must be positive, got %v", time.Duration(retry)*time.Microsecond)
		}
		maxProm, err := pc.Params.Int("max_promotions", 0)
		if err != nil {
			return nil, err
		}
		if maxProm < 0 {
			return nil, fmt.Errorf("parameter max_promotions: must be at least 0 (0 = no limit), got %d", maxProm)
		}
		n := len(nodeOf)
		return &Replica{env: env, combined: combined, retryUs: retry, maxPromotions: maxProm,
			nodeOf: nodeOf, self: self, n: n, majority: n/2 + 1,
			acc: map[uint64]*acceptor{}, chosen: map[uint64][]*txn.Txn{}, outcome: map[txn.ID]bool{}, peerApplied: make([]uint64, n)}, nil
	}
}

func (r *Replica) applied() uint64 { return r.base + uint64(len(r.log)) }

// collect drops the log prefix every replica has applied but its last keptPositions, keeping
// the in-flight proposal's position and everything after it, and forgets the outcomes of the
// dropped transactions.
func (r *Replica) collect() {
	r.peerApplied[r.self] = r.applied()
	upTo := slices.Min(r.peerApplied)
	if upTo <= keptPositions {
		return
	}
	upTo -= keptPositions
	if r.cur != nil {
		upTo = min(upTo, r.cur.pos-1)
	}
	if upTo <= r.base {
		return
	}
	for _, v := range r.log[:upTo-r.base] {
		for _, t := range v {
			delete(r.outcome, t.ID)
		}
	}
	r.log = slices.Delete(r.log, 0, int(upTo-r.base))
	r.base = upTo
}

// Start arms the Sync heartbeat.
func (r *Replica) Start() { r.env.SetTimer(r.retryUs, timerSync) }

// HandleRequest serves local reads and queues commit requests.
func (r *Replica) HandleRequest(req protocol.Request) {
	if !protocol.AdmitCommit(r.env, req, "paxos") {
		return
	}
	r.queue = append(r.queue, &pending{t: req.Txn, client: req.Client, seq: req.Seq})
	r.next()
	r.drain()
}

// HandleTimer sends the Sync heartbeat (and collects garbage) or retries a stalled proposal.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	switch {
	case id == timerSync:
		r.collect()
		r.broadcast(&Message{Kind: Sync, From: r.self, Applied: r.applied()}, false)
		r.env.SetTimer(r.retryUs, timerSync)
	case id%4 == timerProposal && int(id/4) == r.gen && r.cur != nil:
		r.phase1()
	}
	r.drain()
}

// HandleMessage processes one peer message.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	msg, ok := m.(*Message)
	if !ok || !msg.wellFormed(r.n) || r.nodeOf[msg.From] != from || msg.From == r.self {
		return // not a well-formed Paxos message from that peer: ignore rather than trust it
	}
	r.handle(msg)
	r.drain()
}

// drain delivers the messages this replica sent itself, after the handler that sent them.
func (r *Replica) drain() {
	for len(r.selfQ) > 0 {
		m := r.selfQ[0]
		r.selfQ = r.selfQ[1:]
		r.handle(m)
	}
}

func (r *Replica) send(to int, m *Message) {
	if to == r.self {
		r.selfQ = append(r.selfQ, m)
		return
	}
	r.env.Send(r.nodeOf[to], m)
}

func (r *Replica) broadcast(m *Message, withSelf bool) {
	for i := range r.n {
		if i != r.self || withSelf {
			r.send(i, m)
		}
	}
}

func (r *Replica) handle(m *Message) {
	if b := m.Ballot / uint64(r.n); b > r.round {
		r.round = b
	}
	switch m.Kind {
	case Prepare, Accept:
		r.handleAcceptor(m)
	case Promise:
		r.handlePromise(m)
	case Accepted:
		r.handleAccepted(m)
	case Reject:
		r.handleReject(m)
	case Chosen:
		r.learn(m.Pos, m.Value)
		if m.Pos > r.applied()+1 {
			r.send(m.From, &Message{Kind: Sync, From: r.self, Applied: r.applied()})
		}
	case Sync:
		r.handleSync(m)
	}
}

// handleAcceptor is the acceptor's side of Phase 1 and Phase 2.
func (r *Replica) handleAcceptor(m *Message) {
	if m.Pos <= r.applied() {
		r.sendChosen(m.From, m.Pos, r.applied())
		return
	}
	if v, ok := r.chosen[m.Pos]; ok {
		r.send(m.From, &Message{Kind: Chosen, From: r.self, Pos: m.Pos, Value: v})
		return
	}
	if m.Pos > r.applied()+1 { // the proposer knows positions we have not learned
		r.send(m.From, &Message{Kind: Sync, From: r.self, Applied: r.applied()})
	}
	a := r.acc[m.Pos]
	if a == nil {
		a = &acceptor{}
		r.acc[m.Pos] = a
	}
	if m.Ballot < a.promised {
		r.send(m.From, &Message{Kind: Reject, From: r.self, Pos: m.Pos, Ballot: m.Ballot, AccBallot: a.promised})
		return
	}
	a.promised = m.Ballot
	if m.Kind == Prepare {
		r.send(m.From, &Message{Kind: Promise, From: r.self, Pos: m.Pos, Ballot: m.Ballot, AccBallot: a.accBallot, Value: a.value})
		return
	}
	a.accBallot, a.value = m.Ballot, m.Value
	r.send(m.From, &Message{Kind: Accepted, From: r.self, Pos: m.Pos, Ballot: m.Ballot})
}

// sendChosen sends to the decided positions from..min(to, from+syncBatch-1) that are still in
// the log (a dropped position has been applied everywhere: only a stale message asks for it).
func (r *Replica) sendChosen(dc int, from, to uint64) {
	for p := max(from, r.base+1); p <= to && p < from+syncBatch; p++ {
		r.send(dc, &Message{Kind: Chosen, From: r.self, Pos: p, Value: r.log[p-1-r.base]})
	}
}

func (r *Replica) handleSync(m *Message) {
	r.peerApplied[m.From] = max(r.peerApplied[m.From], m.Applied)
	switch {
	case r.applied() > m.Applied:
		r.sendChosen(m.From, m.Applied+1, r.applied())
	case r.applied() < m.Applied:
		r.send(m.From, &Message{Kind: Sync, From: r.self, Applied: r.applied()})
	}
}

// current reports whether m answers the in-flight proposal's current ballot in phase.
func (r *Replica) current(m *Message, phase int) bool {
	p := r.cur
	return p != nil && p.phase == phase && p.pos == m.Pos && p.ballot == m.Ballot
}

func (r *Replica) handlePromise(m *Message) {
	if !r.current(m, 1) {
		return
	}
	p := r.cur
	if m.AccBallot > p.best {
		p.best, p.bestVal = m.AccBallot, m.Value
	}
	if !r.vote(p, m.From) {
		return
	}
	// Phase 2: drive the reported value with the highest ballot, or our own (free choice).
	p.value = p.bestVal
	if p.value == nil {
		p.value = r.freeChoice(p)
	}
	p.phase, p.votes = 2, 0
	r.armTimer(r.timeout(p))
	r.broadcast(&Message{Kind: Accept, From: r.self, Pos: p.pos, Ballot: p.ballot, Value: p.value}, true)
}

func (r *Replica) handleAccepted(m *Message) {
	if !r.current(m, 2) {
		return
	}
	p := r.cur
	if !r.vote(p, m.From) {
		return
	}
	pos, v := p.pos, p.value
	r.broadcast(&Message{Kind: Chosen, From: r.self, Pos: pos, Value: v}, false)
	r.learn(pos, v)
}

func (r *Replica) handleReject(m *Message) {
	p := r.cur
	if p == nil || p.phase == 0 || p.pos != m.Pos || p.ballot != m.Ballot {
		return
	}
	if b := m.AccBallot / uint64(r.n); b > r.round {
		r.round = b
	}
	p.phase = 0
	r.armTimer(1 + r.env.Rand().Int64N(r.timeout(p)))
}

// vote records dc's vote for the current phase and reports whether it completed a majority.
func (r *Replica) vote(p *proposal, dc int) bool {
	before := countBits(p.votes)
	p.votes |= 1 << dc
	after := countBits(p.votes)
	return after >= r.majority && before < r.majority
}

func countBits(x uint64) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// freeChoice is the value of a proposal whose Phase 1 found nothing accepted: its head
// transaction, and for paxos-cp every other queued transaction still valid against the log
// prefix that conflicts with no transaction already in the list (combination).
func (r *Replica) freeChoice(p *proposal) []*txn.Txn {
	if p.free != nil {
		return p.free
	}
	if r.combined {
		st := r.env.Store()
		rest := r.queue[:0:0]
		for _, c := range r.queue {
			ok := !st.Stale(c.t.Reads)
			for _, m := range p.members {
				if ok && conflict(c.t, m.t) {
					ok = false
				}
			}
			if ok {
				p.members = append(p.members, c)
			} else {
				rest = append(rest, c)
			}
		}
		r.queue = rest
	}
	v := make([]*txn.Txn, len(p.members))
	for i, m := range p.members {
		v[i] = m.t
	}
	p.free = v
	return v
}

// conflict is the bidirectional conflict test: one writes a key the other reads or writes.
func conflict(a, b *txn.Txn) bool { return a.WriteConflicts(b) || b.WriteConflicts(a) }

// next starts a proposal for the head of the queue if none is in flight.
func (r *Replica) next() {
	if r.cur != nil {
		return
	}
	st := r.env.Store()
	for len(r.queue) > 0 {
		head := r.queue[0]
		r.queue = r.queue[1:]
		if st.Stale(head.t.Reads) {
			r.reply(head, txn.Aborted, txn.ReasonStaleRead)
			continue
		}
		r.cur = &proposal{pos: r.applied() + 1, members: []*pending{head}}
		r.phase1()
		return
	}
}

// phase1 (re)starts the in-flight proposal's Phase 1 with a fresh, higher ballot.
func (r *Replica) phase1() {
	p := r.cur
	r.round++
	p.ballot = r.round*uint64(r.n) + uint64(r.self)
	p.phase, p.votes, p.best, p.bestVal, p.value = 1, 0, 0, nil, nil
	r.armTimer(r.timeout(p))
	p.attempts++
	r.broadcast(&Message{Kind: Prepare, From: r.self, Pos: p.pos, Ballot: p.ballot}, true)
}

// timeout is the retry timeout of p's current attempt: retry doubled per earlier attempt (at
// most maxBackoff times), plus up to as much again at random.
func (r *Replica) timeout(p *proposal) int64 {
	base := r.retryUs * int64(min(1<<min(p.attempts, 6), maxBackoff))
	return base + r.env.Rand().Int64N(base)
}

func (r *Replica) armTimer(afterUs int64) {
	r.gen++
	r.env.SetTimer(afterUs, timerProposal+protocol.TimerID(4*r.gen))
}

// learn records that v was chosen for pos and applies every position now contiguous.
func (r *Replica) learn(pos uint64, v []*txn.Txn) {
	if pos <= r.applied() {
		return
	}
	if _, ok := r.chosen[pos]; !ok {
		r.chosen[pos] = v
	}
	progressed := false
	for {
		next := r.applied() + 1
		v, ok := r.chosen[next]
		if !ok {
			break
		}
		delete(r.chosen, next)
		delete(r.acc, next)
		r.apply(v)
		r.log = append(r.log, v)
		progressed = true
	}
	if progressed {
		r.resolve()
		r.next()
	}
}

// apply installs a chosen list in order, each transaction only if its reads are still the latest
// versions (the replica-independent safety net), and each transaction id at most once.
func (r *Replica) apply(v []*txn.Txn) {
	st := r.env.Store()
	for _, t := range v {
		if _, done := r.outcome[t.ID]; done {
			continue
		}
		ok := !st.Stale(t.Reads)
		if ok {
			st.Apply(t.ID, t.Writes)
		}
		r.outcome[t.ID] = ok
	}
}

// resolve decides the in-flight proposal's transactions once its position is chosen: those in
// the chosen value are answered; losers abort (paxos-commit) or are promoted (paxos-cp).
func (r *Replica) resolve() {
	p := r.cur
	if p == nil || p.pos > r.applied() {
		return
	}
	r.cur = nil
	var promoted []*pending
	for _, m := range p.members {
		if ok, done := r.outcome[m.t.ID]; done {
			if ok {
				r.reply(m, txn.Committed, "")
			} else {
				r.reply(m, txn.Aborted, txn.ReasonStaleRead)
			}
			continue
		}
		switch {
		case !r.combined:
			r.reply(m, txn.Aborted, ReasonLostPosition)
		case r.conflictsSince(m.t, p.pos):
			r.reply(m, txn.Aborted, txn.ReasonRemoteConflict)
		case r.maxPromotions > 0 && m.promotions >= r.maxPromotions:
			r.reply(m, txn.Aborted, ReasonPromotionLimit)
		default:
			m.promotions++
			promoted = append(promoted, m)
		}
	}
	r.queue = append(promoted, r.queue...)
}

// conflictsSince reports whether a transaction installed at a position from pos on writes a key
// t reads or writes (the promotion test of §5.4).
func (r *Replica) conflictsSince(t *txn.Txn, pos uint64) bool {
	for _, v := range r.log[pos-1-r.base:] {
		for _, w := range v {
			if r.outcome[w.ID] && t.WriteConflicts(w) {
				return true
			}
		}
	}
	return false
}

func (r *Replica) reply(p *pending, s txn.Status, reason txn.AbortReason) {
	r.env.Reply(protocol.Reply{Client: p.client, Seq: p.seq, Status: s, Reason: reason})
}
