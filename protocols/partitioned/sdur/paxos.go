package sdur

import (
	"math/bits"

	"github.com/meridian-kv/meridian/protocol"
)

// abcast is one server's part of its partition's atomic broadcast (spec §3.7): Multi-Paxos with
// a stable leader, every server of the group an acceptor and a learner.
//
//   - Ballot b belongs to replica b mod R; ballot 0 to replica 0, the preferred server, which
//     leads from the start without a phase 1.
//   - A payload submitted at any server is kept there (held) until delivered. The leader
//     proposes it; a follower forwards it to the leader it believes in, again every
//     forwardUs until it is delivered, so that neither a lost message nor a leader crash loses
//     it. Payloads are named (Payload.Key): one proposed or delivered already is not proposed
//     again.
//   - The leader proposes a batch of up to maxBatch held payloads at once when no slot of its
//     is undecided, else when the batch is full or batchUs after the first one waited (spec:
//     1 ms / 64), sends P2a to every acceptor, and resends it every retryUs until the slot is
//     decided. Acceptors send P2b to every server; a server decides a slot on a majority of
//     P2bs of one ballot with the value of that ballot, and delivers slots in order.
//   - The leader sends a heartbeat with its delivered frontier every heartbeatUs; a learner
//     behind it asks for the decided slots it lacks (CatchUp, Decide). A follower that has heard
//     no leader for electionUs (longer for the later replicas, so that candidates rarely duel)
//     runs phase 1 with its next ballot, re-proposes the highest-ballot value of every slot a
//     majority reports (a no-op batch for a gap), and leads. The preferred server takes the
//     leadership back whenever it does not hold it, at most once per electionUs (spec §3.7: a
//     stable leader at the preferred server; a restarted leader, or nodes that start at
//     different times on a real cluster, would otherwise leave it in another region).
//
// Decided slots and the keys of delivered payloads are forgotten once their payloads have expired
// (gc.go); floor is the last slot forgotten. An acceptor reports its floor in P1b: a candidate
// that has not delivered up to it cannot learn those slots and gives up its candidacy.
//
// Nothing here is persisted separately: the simulator's crashes keep a node's state, and the
// real server replays its input log.
type abcast struct {
	r        *Replica
	group    int
	members  []protocol.NodeID
	me       int // my index in members
	majority int

	promised uint64 // highest ballot promised (or accepted in)
	leading  bool   // I own promised and have finished its phase 1
	lastUs   int64  // when the leader of promised was last heard from (or I became a candidate)
	// claimedUs is when the preferred server last ran phase 1 to take the leadership back.
	claimedUs int64

	slots     map[uint64]*slot
	next      uint64 // leader: next slot to propose
	delivered uint64 // slots 1..delivered are delivered
	decidedTo uint64 // highest slot known decided (for the heartbeat's frontier)

	held     []*heldPayload
	heldKeys map[string]*heldPayload
	done     map[string]int64 // keys delivered, with the stamp they may be forgotten after (gc.go)
	batchDue bool             // a batch timer is armed
	floor    uint64           // slots 1..floor are forgotten

	// phase 1 in progress for ballot promised
	p1From map[int]bool
	p1Acc  map[uint64]Accepted

	delivering bool
}

type slot struct {
	accBallot uint64 // ballot this server accepted value in (acceptor)
	value     []Payload
	hasValue  bool
	decided   bool
	ackBallot uint64 // ballot the P2b acks count
	acks      uint64 // bitmask of members that sent P2b for ackBallot
	sentUs    int64  // leader: when P2a was last sent
	stampUs   int64  // the partition's stamp after its delivery (gc.go)
}

type heldPayload struct {
	p        Payload
	proposed bool // proposed by me as leader in the current ballot
	sentUs   int64
	gone     bool // delivered
}

func newAbcast(r *Replica, group int, members []protocol.NodeID, me int) *abcast {
	return &abcast{r: r, group: group, members: members, me: me, majority: len(members)/2 + 1,
		leading: me == 0, slots: map[uint64]*slot{}, next: 1, heldKeys: map[string]*heldPayload{}, done: map[string]int64{}}
}

// owner is the member index that owns ballot b.
func (a *abcast) owner(b uint64) int { return int(b % uint64(len(a.members))) }

// leader is the node believed to lead.
func (a *abcast) leader() protocol.NodeID { return a.members[a.owner(a.promised)] }

func (a *abcast) slot(i uint64) *slot {
	s := a.slots[i]
	if s == nil {
		s = &slot{}
		a.slots[i] = s
	}
	return s
}

// send sends m to member i, handling it at once if i is me.
func (a *abcast) send(i int, m *Paxos) {
	m.Group = a.group
	if i == a.me {
		a.handle(a.me, m)
		return
	}
	a.r.env.Send(a.members[i], m)
}

func (a *abcast) sendAll(m *Paxos) {
	for i := range a.members {
		if i != a.me {
			a.send(i, m)
		}
	}
	a.send(a.me, m)
}

// submit holds p until it is delivered and makes sure the leader proposes it.
func (a *abcast) submit(p Payload) {
	k := p.Key()
	if _, delivered := a.done[k]; delivered || a.heldKeys[k] != nil {
		return
	}
	h := &heldPayload{p: p}
	a.held = append(a.held, h)
	a.heldKeys[k] = h
	if a.leading {
		a.maybePropose()
		return
	}
	if l := a.owner(a.promised); l != a.me {
		h.sentUs = a.r.env.NowUs()
		a.r.env.Send(a.members[l], &Submit{Group: a.group, Payload: p})
	}
}

// inFlight reports whether a slot I proposed is undecided.
func (a *abcast) inFlight() bool {
	for i := a.delivered + 1; i < a.next; i++ {
		if s := a.slots[i]; s == nil || !s.decided {
			return true
		}
	}
	return false
}

// maybePropose proposes at once when nothing of mine is in flight or a batch is full, and arms
// the batch timer otherwise.
func (a *abcast) maybePropose() {
	waiting := 0
	for _, h := range a.held {
		if !h.gone && !h.proposed {
			waiting++
		}
	}
	switch {
	case waiting == 0:
	case !a.inFlight() || waiting >= a.r.cfg.maxBatch:
		a.propose()
	case !a.batchDue:
		a.batchDue = true
		a.r.env.SetTimer(a.r.cfg.batchUs, timerBatch)
	}
}

// propose puts up to maxBatch held payloads into the next slot.
func (a *abcast) propose() {
	var v []Payload
	for _, h := range a.held {
		if !h.gone && !h.proposed && len(v) < a.r.cfg.maxBatch {
			h.proposed = true
			v = append(v, h.p)
		}
	}
	if len(v) > 0 {
		inst := a.next
		a.next++ // first: with one replica the slot is decided and delivered within proposeAt
		a.proposeAt(inst, v)
	}
}

func (a *abcast) proposeAt(inst uint64, v []Payload) {
	a.slot(inst).sentUs = a.r.env.NowUs()
	a.sendAll(&Paxos{Kind: P2a, Ballot: a.promised, Inst: inst, Value: v})
}

// handle processes a Paxos message from member i.
func (a *abcast) handle(from int, m *Paxos) {
	now := a.r.env.NowUs()
	if m.Inst != 0 && m.Inst <= a.floor && (m.Kind == P2a || m.Kind == P2b || m.Kind == Decide) {
		return // a slot forgotten long after its delivery
	}
	switch m.Kind {
	case P1a:
		if m.Ballot <= a.promised && !(m.Ballot == a.promised && from == a.owner(m.Ballot)) {
			a.send(from, &Paxos{Kind: Nack, Ballot: a.promised})
			return
		}
		a.adopt(m.Ballot, now)
		var acc []Accepted
		for i := m.Frontier + 1; i <= a.maxSlot(); i++ {
			if s := a.slots[i]; s != nil && (s.hasValue || s.decided) {
				acc = append(acc, Accepted{Inst: i, Ballot: s.accBallot, Decided: s.decided, Value: s.value})
			}
		}
		a.send(from, &Paxos{Kind: P1b, Ballot: m.Ballot, Frontier: a.floor, Accepted: acc})
	case P1b:
		if m.Ballot != a.promised || a.leading || a.owner(m.Ballot) != a.me || a.p1From == nil {
			return
		}
		if m.Frontier > a.delivered { // the acceptor forgot slots I lack: I cannot lead
			a.p1From, a.p1Acc, a.lastUs = nil, nil, now
			return
		}
		a.p1From[from] = true
		for _, acc := range m.Accepted {
			old, ok := a.p1Acc[acc.Inst]
			if !ok || (!old.Decided && (acc.Decided || acc.Ballot > old.Ballot)) {
				a.p1Acc[acc.Inst] = acc
			}
		}
		if len(a.p1From) >= a.majority {
			a.becomeLeader()
		}
	case P2a:
		if m.Ballot < a.promised {
			a.send(from, &Paxos{Kind: Nack, Ballot: a.promised})
			return
		}
		a.adopt(m.Ballot, now)
		s := a.slot(m.Inst)
		if !s.decided {
			s.accBallot, s.value, s.hasValue = m.Ballot, m.Value, true
		}
		a.sendAll(&Paxos{Kind: P2b, Ballot: m.Ballot, Inst: m.Inst})
	case P2b:
		s := a.slot(m.Inst)
		if s.decided || m.Ballot < s.ackBallot {
			return
		}
		if m.Ballot > s.ackBallot {
			s.ackBallot, s.acks = m.Ballot, 0
		}
		s.acks |= 1 << uint(from)
		if bits.OnesCount64(s.acks) >= a.majority && s.hasValue && s.accBallot == s.ackBallot {
			a.decide(m.Inst, s.value)
		}
	case Nack:
		if m.Ballot > a.promised {
			a.adopt(m.Ballot, now)
		}
	case Heartbeat:
		if m.Ballot < a.promised {
			a.send(from, &Paxos{Kind: Nack, Ballot: a.promised})
			return
		}
		a.adopt(m.Ballot, now)
		if m.Frontier > a.delivered {
			a.send(from, &Paxos{Kind: CatchUp, Frontier: a.delivered})
		}
	case CatchUp:
		for i := m.Frontier + 1; i <= a.decidedTo && i <= m.Frontier+uint64(a.r.cfg.maxBatch); i++ {
			if s := a.slots[i]; s != nil && s.decided {
				a.send(from, &Paxos{Kind: Decide, Inst: i, Value: s.value})
			}
		}
	case Decide:
		a.decide(m.Inst, m.Value)
	}
}

// adopt follows ballot b (≥ promised), stepping down if it is another's.
func (a *abcast) adopt(b uint64, now int64) {
	if b > a.promised {
		a.promised = b
		a.leading = false
		a.p1From, a.p1Acc = nil, nil
		for _, h := range a.held {
			h.proposed, h.sentUs = false, 0 // forward everything to the new leader
		}
	}
	if a.owner(b) != a.me || a.leading {
		a.lastUs = now
	}
}

func (a *abcast) maxSlot() uint64 {
	m := a.delivered
	for i := range a.slots {
		m = max(m, i)
	}
	return m
}

func (a *abcast) decide(inst uint64, v []Payload) {
	s := a.slot(inst)
	if s.decided || inst <= a.delivered {
		return
	}
	s.decided, s.value, s.hasValue = true, v, true
	a.decidedTo = max(a.decidedTo, inst)
	a.deliverReady()
}

// deliverReady delivers decided slots in order; a delivery that submits more (a FINAL, a vote
// request) re-enters through submit, never here.
func (a *abcast) deliverReady() {
	if a.delivering {
		return
	}
	a.delivering = true
	for {
		s := a.slots[a.delivered+1]
		if s == nil || !s.decided {
			break
		}
		a.delivered++
		for _, p := range s.value {
			k := p.Key()
			if _, dup := a.done[k]; dup {
				continue
			}
			a.done[k] = a.r.stampOf(p)
			if h := a.heldKeys[k]; h != nil {
				h.gone = true
				delete(a.heldKeys, k)
			}
			a.r.deliver(p)
		}
		s.stampUs = a.r.stampUs
	}
	a.delivering = false
	live := a.held[:0]
	for _, h := range a.held {
		if !h.gone {
			live = append(live, h)
		}
	}
	clear(a.held[len(live):])
	a.held = live
	if a.leading {
		a.maybePropose()
	}
}

// startElection runs phase 1 with my next ballot.
func (a *abcast) startElection(now int64) {
	n := uint64(len(a.members))
	b := (a.promised/n+1)*n + uint64(a.me)
	a.promised, a.leading, a.lastUs = b, false, now
	a.p1From, a.p1Acc = map[int]bool{}, map[uint64]Accepted{}
	a.sendAll(&Paxos{Kind: P1a, Ballot: b, Frontier: a.delivered})
}

// becomeLeader ends phase 1: every slot after my frontier that a majority reported is proposed
// again in my ballot (no-op batches fill gaps), then my held payloads.
func (a *abcast) becomeLeader() {
	from, top := a.delivered, a.delivered
	for i := range a.p1Acc {
		top = max(top, i)
	}
	acc := a.p1Acc
	a.p1From, a.p1Acc = nil, nil
	a.next = top + 1
	for i := from + 1; i <= top; i++ {
		if r, ok := acc[i]; ok && r.Decided {
			a.decide(i, r.Value)
		}
	}
	a.leading = true
	for i := from + 1; i <= top; i++ {
		if s := a.slots[i]; s != nil && s.decided {
			continue
		}
		a.proposeAt(i, acc[i].Value)
	}
	for _, h := range a.held {
		h.proposed = false
	}
	a.maybePropose()
}

// tick runs the periodic duties: the leader's heartbeat and P2a retries, a follower's election
// timeout and forwarding of held payloads.
func (a *abcast) tick(now int64) {
	cfg := a.r.cfg
	if a.leading {
		a.sendAll(&Paxos{Kind: Heartbeat, Ballot: a.promised, Frontier: a.decidedTo})
		for i := a.delivered + 1; i < a.next; i++ {
			if s := a.slot(i); !s.decided && now-s.sentUs >= cfg.retryUs {
				a.proposeAt(i, s.value)
			}
		}
		a.maybePropose()
		return
	}
	if a.p1From != nil && now-a.lastUs >= cfg.retryUs { // phase 1 stalled: ask again
		a.lastUs = now
		a.sendAll(&Paxos{Kind: P1a, Ballot: a.promised, Frontier: a.delivered})
	}
	rank := (a.me - a.owner(a.promised) + len(a.members)) % len(a.members)
	reclaim := a.me == 0 && now-a.claimedUs >= cfg.electionUs
	if a.p1From == nil && (reclaim || now-a.lastUs >= cfg.electionUs*int64(1+rank)/2+cfg.electionUs/2) {
		if a.me == 0 {
			a.claimedUs = now
		}
		a.startElection(now)
		return
	}
	a.forwardHeld(now)
}

// forwardHeld resends to the leader the held payloads last sent forwardUs ago (or never).
func (a *abcast) forwardHeld(now int64) {
	if a.leading || a.p1From != nil {
		return
	}
	for _, h := range a.held {
		if !h.gone && (h.sentUs == 0 || now-h.sentUs >= a.r.cfg.forwardUs) {
			h.sentUs = now
			a.r.env.Send(a.leader(), &Submit{Group: a.group, Payload: h.p})
		}
	}
}

// collect forgets the delivered keys and the delivered slots whose stamps are below floorUs
// (gc.go).
func (a *abcast) collect(floorUs int64) {
	for k, at := range a.done {
		if at < floorUs {
			delete(a.done, k)
		}
	}
	for i, s := range a.slots {
		if i <= a.delivered && s.decided && s.stampUs < floorUs {
			delete(a.slots, i)
			a.floor = max(a.floor, i)
		}
	}
}
