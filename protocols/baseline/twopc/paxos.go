package twopc

import (
	"math"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// This file holds the Multi-Paxos log every replica takes part in, the coordinator's lease and
// the fail-over.
//
// Terms. A ballot is round<<ballotBits | leader datacenter, so every term has one leader. All
// replicas start having promised round 1 of the initial coordinator, which therefore needs no
// phase 1 (the classic Multi-Paxos shortcut for a designated first leader).
//
// Lease (drift bound ρ = max_drift_ppm). An acceptor that receives an Accept (or grants a
// Prepare) of the term it promised refuses every other candidate's Prepare until leaseUs has
// passed on its own clock, at least leaseUs/(1+ρ) of real time after the message was sent. The
// coordinator stamps each Accept with its clock; once a majority (itself included) acknowledged
// messages sent at or after s, it holds the lease until s + leaseUs·(1−ρ)/(1+ρ) on its clock,
// at most leaseUs/(1+ρ) of real time after s. So while the coordinator believes its lease valid,
// a majority refuses any other candidate, no other coordinator can finish phase 1, and the old
// coordinator stops serving before a new one starts. The assumption is that every clock's rate
// is within ρ of real time (offsets do not matter: only durations on one clock are compared);
// the simulator's drifts are ±100 ppm, the default bound 1000 ppm. The replicas are assumed to
// start together, so that the initial coordinator holds a lease from its start. Safety of the
// log and of the transactions does not depend on the lease or on any clock (see recover and
// the package comment); a violated drift bound could only let two coordinators answer Gets at
// once, and the one whose term is over can get nothing chosen, so its transactions abort.
//
// The coordinator's own acceptor refuses every rival. A coordinator serves only while its lease
// is valid, so the lease must exceed the round trip to the closest majority by a margin: under
// delays longer than the lease, a coordinator keeps its term but serves little.
//
// Fail-over. A follower that has not heard from the coordinator of its promised term for
// leaseUs + heartbeatUs + rank·leaseUs (rank: its place in the fail-over order without that
// coordinator) becomes a candidate: it sends Prepare with a higher ballot, and becomes the
// coordinator once a majority (itself included) promised, then recovers the log (recover).
// Its own promise comes last, so a candidate that cannot win (the others still hear the
// coordinator) disturbs nobody; refused, it follows the term the refusers grant. Every
// election a replica starts without hearing a coordinator in between doubles its timeouts (up
// to 2^maxBackoff), so that duelling candidates under long delays settle. A replica whose ticks
// stopped (its datacenter was down) listens for a lease before suspecting anyone. A coordinator
// that learns of a later term from a refusal re-runs phase 1 at once if its lease is still valid
// (the later term came from a candidate that cannot have won) and keeps its lock table if the
// recovered log is its own; otherwise it steps down and follows.

const (
	ballotBits   = 10
	chosenBallot = math.MaxUint64 // reported for entries the acceptor knows are chosen
	maxAhead     = 1 << 20        // most positions an acceptor holds beyond its applied prefix
	maxBackoff   = 5              // election timeouts grow up to 2^maxBackoff times
)

func makeBallot(round uint64, dc int) uint64 { return round<<ballotBits | uint64(dc) }
func leaderOf(b uint64) int                  { return int(b & (1<<ballotBits - 1)) }
func roundOf(b uint64) uint64                { return b >> ballotBits }

// noop fills a log position a new coordinator found no value for.
var noop = &txn.Txn{ID: txn.None}

type role uint8

const (
	follower role = iota
	candidate
	leader
)

// slot is one log position held by an acceptor: the value and the term it was accepted in.
type slot struct {
	ballot   uint64
	txn      *txn.Txn
	sentUs   int64 // coordinator: first broadcast in its term
	chosenUs int64 // coordinator: when it was chosen
}

// paxos is every replica's part in the log (acceptor and learner), and its candidate or
// coordinator state.
type paxos struct {
	leaseUs       int64 // how long an acceptor grants the coordinator, on its own clock
	leaderLeaseUs int64 // how long the coordinator counts a grant, on its clock
	heartbeatUs   int64 // an idle coordinator's Accept period
	order         []int // fail-over preference, most preferred first

	// Acceptor and learner.
	promised    uint64 // highest term promised; its leader is the coordinator requests go to
	heardUs     int64  // when this replica last heard from the leader of promised (its clock)
	fenceBallot uint64 // latest fence accepted: entries beyond fenceEnd accepted in terms
	fenceEnd    uint64 // before fenceBallot were never chosen
	slots       map[uint64]*slot
	last        uint64 // no slot above last
	base        uint64 // every replica has applied up to base: slots up to it are dropped
	have        uint64 // every position up to have is accepted in promised (or applied)
	known       uint64 // the log is chosen up to known
	applied     uint64
	maxRound    uint64 // highest round seen

	role        role
	ballot      uint64 // own term, as candidate or coordinator
	cand        *candidacy
	ld          *leaderState
	nextElectUs int64
	backoff     int                // elections since this replica last heard a coordinator (capped)
	lastTickUs  int64              // when the last tick ran (a gap means this replica was paused)
	queue       []protocol.Message // requests held until the coordinator can serve
	terms       int                // terms won after the initial one
}

// candidacy is phase 1 in progress.
type candidacy struct {
	ballot   uint64
	sentUs   int64
	deadline int64
	acc      map[uint64]Accepted // per position: the highest-ballot report
	fenceB   uint64
	fenceE   uint64
	granted  map[int]uint64 // complete promises: datacenter → its applied prefix
	refused  map[int]bool
	current  uint64 // highest term the refusers still grant
}

// leaderState is the coordinator's view of the log.
type leaderState struct {
	commit     uint64 // chosen and applied prefix
	fence      uint64 // end of the log recovered when the term began
	serving    bool   // the recovered log is chosen: requests may be served
	match      []uint64
	peerCommit []uint64 // per datacenter: prefix it has applied
	nextSend   []int64  // per datacenter: earliest next retransmission
	lastSent   []int64  // per datacenter: last Accept sent
	grantUs    []int64  // per datacenter: latest send time it acknowledged in this term
	leaseUntil int64
}

func newLeaderState(n int) *leaderState {
	ld := &leaderState{match: make([]uint64, n), peerCommit: make([]uint64, n), nextSend: make([]int64, n),
		lastSent: make([]int64, n), grantUs: make([]int64, n)}
	for dc := range ld.grantUs {
		ld.grantUs[dc] = math.MinInt64 / 4
	}
	return ld
}

func (r *Replica) initPaxos(coord int, order []int, leaseUs, driftPPM int64) {
	r.leaseUs = leaseUs
	r.leaderLeaseUs = leaseUs * (1_000_000 - driftPPM) / (1_000_000 + driftPPM)
	r.heartbeatUs = leaseUs / 5
	r.order = order
	r.slots = map[uint64]*slot{}
	r.promised = makeBallot(1, coord) // round 0 is left unused: ballot 0 means none
	if r.self == coord {
		r.role, r.ballot = leader, r.promised
		r.ld = newLeaderState(r.n)
		r.ld.serving = true
		r.co.term = r.ballot
	}
}

// startPaxos starts the lease clocks: every acceptor grants the initial coordinator from its
// start.
func (r *Replica) startPaxos() {
	now := r.env.NowUs()
	r.heardUs, r.lastTickUs = now, now
	if r.role == leader {
		for dc := range r.n {
			r.ld.grantUs[dc], r.ld.lastSent[dc] = now, now
		}
		r.updateLease()
	}
}

func (r *Replica) majority() int { return r.n/2 + 1 }

// coordinator is the datacenter requests are forwarded to.
func (r *Replica) coordinator() int { return leaderOf(r.promised) }

// canServe reports whether this replica coordinates a recovered term under a valid lease.
func (r *Replica) canServe() bool {
	return r.role == leader && r.ld.serving && r.env.NowUs() < r.ld.leaseUntil
}

func (r *Replica) noteBallot(b uint64) { r.maxRound = max(r.maxRound, roundOf(b)) }

// promote raises the promise to term b: what was accepted in the old term no longer counts
// toward have, and the proxy turns to the new coordinator.
func (r *Replica) promote(b uint64) {
	if b <= r.promised {
		return
	}
	r.noteBallot(b)
	r.promised = b
	r.have = r.applied
	r.heardUs = r.env.NowUs()
	r.retarget()
}

// onAccept stores a coordinator's entries, applies what is chosen in log order, and
// acknowledges the gap-free prefix it holds in the coordinator's term; an Accept of an earlier
// term is refused with the term promised.
func (r *Replica) onAccept(dc int, m *Accept) {
	r.noteBallot(m.Ballot)
	if m.Ballot < r.promised {
		r.send(dc, &Ack{From: r.self, Ballot: r.promised, EchoUs: m.SentUs})
		return
	}
	if r.role == leader || m.Ballot > r.promised {
		r.stepDown() // a later coordinator
	}
	r.promote(m.Ballot)
	r.heardUs, r.backoff = r.env.NowUs(), 0
	if m.Ballot > r.fenceBallot {
		r.setFence(m.Ballot, m.Fence)
	}
	for _, e := range m.Entries {
		if e.Txn != nil && e.Index > r.applied && e.Index <= r.applied+maxAhead {
			r.slots[e.Index] = &slot{ballot: m.Ballot, txn: e.Txn}
			r.last = max(r.last, e.Index)
		}
	}
	for s := r.slots[r.have+1]; s != nil && s.ballot == r.promised; s = r.slots[r.have+1] {
		r.have++
	}
	r.known = max(r.known, m.Commit)
	r.learn(min(r.known, r.have))
	r.truncate(m.Base)
	r.send(dc, &Ack{From: r.self, Ballot: r.promised, Match: r.have, Commit: r.applied, EchoUs: m.SentUs})
}

// setFence records term b's fence: entries beyond end accepted in earlier terms were never
// chosen and never will be, and are dropped.
func (r *Replica) setFence(b, end uint64) {
	r.fenceBallot, r.fenceEnd = b, end
	for i := max(end, r.applied) + 1; i <= r.last; i++ {
		if s := r.slots[i]; s != nil && s.ballot < b {
			delete(r.slots, i)
		}
	}
	for r.last > r.applied && r.slots[r.last] == nil {
		r.last--
	}
}

// learn applies the log in order up to upto.
func (r *Replica) learn(upto uint64) {
	for r.applied < upto {
		r.applied++
		r.co.onApplied(r.applied, r.slots[r.applied].txn)
	}
}

// truncate drops the positions up to b that this replica has applied (b: every replica has).
func (r *Replica) truncate(b uint64) {
	for b = min(b, r.applied); r.base < b; {
		r.base++
		delete(r.slots, r.base)
	}
}

// onPrepare answers a candidate: refused for an earlier term than promised, or while this
// replica still grants another coordinator's lease; otherwise promised, with what it holds.
func (r *Replica) onPrepare(dc int, m *Prepare) {
	r.noteBallot(m.Ballot)
	now := r.env.NowUs()
	refuse := func(p uint64) {
		r.send(dc, &Promise{From: r.self, Ballot: m.Ballot, Promised: p, EchoUs: m.SentUs})
	}
	switch {
	case m.Ballot < r.promised:
		refuse(r.promised)
		return
	case r.role == candidate && m.Ballot < r.ballot:
		refuse(r.ballot)
		return
	case m.Ballot > r.promised && r.leaseHeld(dc, now):
		refuse(r.promised) // below the candidate's ballot: a lease still holds
		return
	}
	if m.Ballot > r.promised {
		if r.role != follower {
			r.stepDown()
		}
		r.promote(m.Ballot)
	}
	r.heardUs = now
	p := &Promise{From: r.self, Ballot: m.Ballot, Promised: m.Ballot, Applied: r.applied,
		FenceBallot: r.fenceBallot, FenceEnd: r.fenceEnd, EchoUs: m.SentUs}
	for i := max(m.After, r.base) + 1; i <= r.last; i++ {
		s := r.slots[i]
		if s == nil {
			continue
		}
		if len(p.Entries) == maxPromiseEntries {
			p.More = true
			break
		}
		b := s.ballot
		if i <= r.applied {
			b = chosenBallot
		}
		p.Entries = append(p.Entries, Accepted{Index: i, Ballot: b, Txn: s.txn})
	}
	r.send(dc, p)
}

// leaseHeld reports whether this replica still grants the lease of a coordinator other than dc.
func (r *Replica) leaseHeld(dc int, now int64) bool {
	holder := leaderOf(r.promised)
	switch {
	case holder == dc:
		return false
	case r.role == leader:
		return true // a coordinator never helps a rival; it follows once a majority elected one
	case holder == r.self:
		return false
	}
	return now < r.heardUs+r.leaseUs
}

// startElection makes this replica a candidate for the next term: phase 1 to every acceptor.
// Its own promise is given only once a majority of the others promised (tryWin), so a candidate
// that cannot win does not stop accepting the current coordinator.
func (r *Replica) startElection() {
	now := r.env.NowUs()
	b := makeBallot(max(r.maxRound, roundOf(r.promised))+1, r.self)
	r.noteBallot(b)
	r.role, r.ballot, r.ld = candidate, b, nil
	r.queue = nil
	r.cand = &candidacy{ballot: b, sentUs: now, deadline: now + 2*r.leaseUs<<r.backoff, acc: map[uint64]Accepted{},
		granted: map[int]uint64{}, refused: map[int]bool{}}
	for dc := range r.n {
		if dc != r.self {
			r.send(dc, &Prepare{Ballot: b, After: r.applied, SentUs: now})
		}
	}
	r.backoff = min(r.backoff+1, maxBackoff)
	r.tryWin()
}

// onPromise collects a promise (asking for the rest of a long report) or a refusal.
func (r *Replica) onPromise(dc int, m *Promise) {
	r.noteBallot(m.Promised)
	c := r.cand
	if r.role != candidate || m.Ballot != c.ballot {
		return
	}
	if _, done := c.granted[dc]; done {
		return
	}
	switch {
	case m.Promised > m.Ballot:
		r.stepDown()
		r.promote(m.Promised) // give the later candidate its chance
		return
	case m.Promised < m.Ballot:
		c.refused[dc] = true
		c.current = max(c.current, m.Promised)
		if len(c.refused) > r.n-r.majority() {
			current := c.current
			r.stepDown()
			r.promote(current) // follow the coordinator a majority still grants
		}
		return
	}
	for _, e := range m.Entries {
		if e.Txn == nil || e.Index <= r.applied {
			continue
		}
		if cur, ok := c.acc[e.Index]; !ok || e.Ballot > cur.Ballot {
			c.acc[e.Index] = e
		}
	}
	if m.FenceBallot > c.fenceB {
		c.fenceB, c.fenceE = m.FenceBallot, m.FenceEnd
	}
	if m.More && len(m.Entries) > 0 {
		r.send(dc, &Prepare{Ballot: c.ballot, After: m.Entries[len(m.Entries)-1].Index, SentUs: c.sentUs})
		return
	}
	c.granted[dc] = m.Applied
	r.tryWin()
}

// tryWin adds this replica's own promise and report once a majority is reached, and takes
// over.
func (r *Replica) tryWin() {
	c := r.cand
	if len(c.granted)+1 < r.majority() {
		return
	}
	for i := r.applied + 1; i <= r.last; i++ {
		if s := r.slots[i]; s != nil {
			if cur, ok := c.acc[i]; !ok || s.ballot > cur.Ballot {
				c.acc[i] = Accepted{Index: i, Ballot: s.ballot, Txn: s.txn}
			}
		}
	}
	if r.fenceBallot > c.fenceB {
		c.fenceB, c.fenceE = r.fenceBallot, r.fenceEnd
	}
	r.recover()
}

// recover starts the candidate's term: the log it proposes is, for every position above its
// applied prefix, the highest-ballot value a majority reported, with no-ops in the gaps;
// entries beyond the highest fence accepted in a term before the fence's were never chosen
// (the fence's coordinator established that in its own phase 1) and are ignored, so a
// transaction a previous coordinator presumed aborted is never resurrected. The recovered end
// is this term's fence. If this replica coordinated the term just before and the recovered log
// is exactly its own, nobody else chose or decided anything in between and its lock table is
// kept; otherwise the lock table is rebuilt empty (coordinator.rebuild): every transaction that
// was reading or taking locks aborts, and so does a deciding one the recovered log does not
// hold. The coordinator serves requests once the recovered log is chosen in its term.
func (r *Replica) recover() {
	c := r.cand
	now := r.env.NowUs()
	b := c.ballot
	end := r.applied
	for i, e := range c.acc {
		if i > c.fenceE && e.Ballot < c.fenceB {
			delete(c.acc, i)
			continue
		}
		end = max(end, i)
	}
	prevTerm := r.co.term
	continuation := prevTerm != 0 && c.fenceB <= prevTerm && end == r.last
	for i := r.applied + 1; i <= end; i++ {
		t := noop
		if e, ok := c.acc[i]; ok {
			t = e.Txn
			if e.Ballot != chosenBallot && e.Ballot > prevTerm {
				continuation = false
			}
		}
		if old := r.slots[i]; old == nil || old.txn.ID != t.ID {
			continuation = false
		}
		r.slots[i] = &slot{ballot: b, txn: t, sentUs: now}
	}
	for i := end + 1; i <= r.last; i++ {
		delete(r.slots, i)
	}
	r.last = end
	if !continuation {
		r.co.rebuild(end, func(i uint64) txn.ID { return r.slots[i].txn.ID })
	}
	r.co.term = b
	r.role, r.cand, r.terms = leader, nil, r.terms+1
	r.promote(b)
	r.have, r.known = end, r.applied
	r.fenceBallot, r.fenceEnd = b, end
	ld := newLeaderState(r.n)
	ld.commit, ld.fence = r.applied, end
	for dc := range r.n {
		applied, ok := c.granted[dc]
		if !ok {
			applied = r.base
		}
		ld.match[dc], ld.peerCommit[dc] = max(applied, r.base), max(applied, r.base)
		if ok {
			ld.grantUs[dc] = c.sentUs
		}
	}
	ld.peerCommit[r.self] = r.applied
	r.ld = ld
	r.updateLease()
	for dc := range r.n {
		if dc != r.self {
			r.sendSuffix(dc, now)
		}
	}
	r.advanceCommit()
	ld.serving = ld.commit >= ld.fence
}

// sendSuffix sends dc the entries it has not acknowledged, up to catchupBatches Accepts (a
// heartbeat if there are none).
func (r *Replica) sendSuffix(dc int, now int64) {
	m := r.ld.match[dc]
	if m >= r.last {
		r.sendAccept(dc, nil)
		return
	}
	for range catchupBatches {
		if m >= r.last {
			break
		}
		end := min(r.last, m+batchEntries)
		entries := make([]Entry, 0, end-m)
		for i := m + 1; i <= end; i++ {
			entries = append(entries, Entry{Index: i, Txn: r.slots[i].txn})
		}
		r.sendAccept(dc, entries)
		m = end
	}
	r.ld.nextSend[dc] = now + r.rtoUs[dc]
}

func (r *Replica) sendAccept(dc int, entries []Entry) {
	ld := r.ld
	now := r.env.NowUs()
	r.send(dc, &Accept{Ballot: r.ballot, Fence: ld.fence, Base: r.base, Commit: ld.commit, SentUs: now, Entries: entries})
	ld.lastSent[dc] = now
}

// propose appends t to the coordinator's log and sends it to every acceptor (phase 2); it
// returns its position.
func (r *Replica) propose(t *txn.Txn) uint64 {
	if r.role != leader {
		panic("2pc-paxos: a replica that does not coordinate proposed a log entry")
	}
	now := r.env.NowUs()
	r.last++
	r.slots[r.last] = &slot{ballot: r.ballot, txn: t, sentUs: now}
	r.have = r.last
	e := []Entry{{Index: r.last, Txn: t}}
	for dc := range r.n {
		if dc != r.self {
			r.sendAccept(dc, e)
		}
	}
	return r.last
}

// onAck records an acceptor's progress in this term and renews the lease; an Ack of a later
// term is a refusal.
func (r *Replica) onAck(dc int, m *Ack) {
	r.noteBallot(m.Ballot)
	if r.role != leader || m.Ballot < r.ballot {
		return
	}
	if m.Ballot > r.ballot {
		r.onRefused(m.Ballot)
		return
	}
	ld := r.ld
	if m.Match > r.last {
		return // malformed: acknowledges what was never sent
	}
	ld.match[dc] = max(ld.match[dc], m.Match)
	ld.peerCommit[dc] = max(ld.peerCommit[dc], min(m.Commit, m.Match))
	if m.EchoUs <= r.env.NowUs() && m.EchoUs > ld.grantUs[dc] {
		ld.grantUs[dc] = m.EchoUs
		r.updateLease()
	}
	r.advanceCommit()
}

// onRefused handles the news of a later term b. With its lease valid the coordinator knows
// that term's candidate cannot have won, so it re-runs phase 1 above it at once (keeping its
// lock table if the log is still its own); otherwise it steps down and follows.
func (r *Replica) onRefused(b uint64) {
	if r.env.NowUs() < r.ld.leaseUntil {
		r.startElection()
		return
	}
	r.stepDown()
	r.promote(b)
}

// stepDown ends a candidacy or a term: the lock table is dropped (coordinator.resign) and the
// held requests with it; the forwarding replicas abort or re-ask.
func (r *Replica) stepDown() {
	if r.role == follower {
		return
	}
	r.role, r.cand, r.ld, r.queue = follower, nil, nil, nil
	r.co.resign()
	r.nextElectUs = r.env.NowUs() + r.leaseUs*int64(1+r.rank())<<r.backoff
}

// updateLease sets the lease from the send times a majority (this replica included)
// acknowledged.
func (r *Replica) updateLease() {
	ld := r.ld
	need := r.majority() - 1
	if need == 0 {
		ld.leaseUntil = math.MaxInt64
		return
	}
	g := make([]int64, 0, r.n-1)
	for dc, t := range ld.grantUs {
		if dc != r.self {
			g = append(g, t)
		}
	}
	slices.Sort(g)
	ld.leaseUntil = g[len(g)-need] + r.leaderLeaseUs
}

// advanceCommit moves the chosen prefix to the largest index a majority (the coordinator
// included) holds in this term, and applies the newly chosen entries in order (installing the
// writes, releasing the locks, answering the client's replica). The learners hear of it
// asynchronously. Once the recovered log is chosen, the coordinator serves.
func (r *Replica) advanceCommit() {
	ld := r.ld
	ld.match[r.self] = r.last
	sorted := slices.Clone(ld.match)
	slices.Sort(sorted)
	chosen := sorted[len(sorted)-r.majority()]
	if chosen <= ld.commit {
		return
	}
	now := r.env.NowUs()
	for i := ld.commit + 1; i <= chosen; i++ {
		r.slots[i].chosenUs = now
	}
	ld.commit, r.known = chosen, chosen
	r.learn(chosen)
	ld.peerCommit[r.self] = r.applied
	if !ld.serving && ld.commit >= ld.fence {
		ld.serving = true
	}
	for dc := range r.n {
		if dc != r.self {
			r.sendAccept(dc, nil)
		}
	}
}

// paxosTick runs the log's periodic work for this replica's role.
func (r *Replica) paxosTick() {
	now := r.env.NowUs()
	if now-r.lastTickUs > r.heartbeatUs {
		// This replica was paused (its datacenter was down): it knows nothing of the coordinator
		// since, so it listens for a while before suspecting it.
		r.heardUs = max(r.heardUs, now)
	}
	r.lastTickUs = now
	switch r.role {
	case leader:
		r.leaderTick(now)
	case candidate:
		if now >= r.cand.deadline {
			r.stepDown()
		}
	case follower:
		if r.n > 1 && now >= r.heardUs+(r.leaseUs+r.heartbeatUs+int64(r.rank())*r.leaseUs)<<r.backoff && now >= r.nextElectUs {
			r.startElection()
		}
	}
}

// rank is this replica's place in the fail-over order once the current coordinator is left
// out.
func (r *Replica) rank() int {
	holder := r.coordinator()
	rank := 0
	for _, dc := range r.order {
		switch dc {
		case r.self:
			return rank
		case holder:
		default:
			rank++
		}
	}
	return rank
}

// leaderTick drops the prefix every replica has applied, then resends each lagging acceptor
// the suffix it has not acknowledged (and the chosen index), at most once per retransmission
// timeout, and sends a heartbeat to every acceptor that has had no Accept for heartbeatUs.
func (r *Replica) leaderTick(now int64) {
	ld := r.ld
	r.truncate(slices.Min(ld.peerCommit))
	for dc := range r.n {
		if dc == r.self {
			continue
		}
		m, p := ld.match[dc], ld.peerCommit[dc]
		switch {
		case now >= ld.nextSend[dc] && m < r.last && now >= r.slots[m+1].sentUs+r.rtoUs[dc]:
			r.sendSuffix(dc, now)
		case now >= ld.nextSend[dc] && m >= r.last && p < ld.commit && now >= r.slots[p+1].chosenUs+r.rtoUs[dc]:
			r.sendAccept(dc, nil)
			ld.nextSend[dc] = now + r.rtoUs[dc]
		case now >= ld.lastSent[dc]+r.heartbeatUs:
			r.sendAccept(dc, nil)
		}
	}
}
