package chariots

import (
	"maps"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Queue holds filtered records until the token visits and then gives every eligible one the
// next position (spec 5.5): a local record gets its TOId and dependency vector there (A1, A3),
// once its client's dependencies (WantDeps) are logged and the position passed its MinLId
// (explicit order, spec 3.6, CH-I8: it then gets a position above MinLId);
// another datacenter's record is eligible when it is its host's next TOId and its dependencies
// are logged. Assignments go to the owner maintainer and are resent until persisted.
type Queue struct {
	env     protocol.Env
	cfg     Config
	self    protocol.NodeID
	dc      int
	rowTo   []protocol.NodeID // the senders and filters, which learn MaxTOId
	held    []*Record
	seen    map[protocol.NodeID]*filterSeen // per filter: batches taken
	tok     *Token                          // the token, while held here
	lastHop uint64                          // the last token pass taken
	lastTok *Token                          // the token as this queue last held it (checkers)
	outTok  *Token                          // the token passed on, until acknowledged
	outTo   protocol.NodeID
	unacked map[uint64]*pendingAssign // by position
	rto     backoff                   // their resend timeout
	// elasticity events waiting for the token
	addRing  []protocol.NodeID
	addMaint []protocol.NodeID
	n        uint64 // records assigned
}

// Handled counts the records this queue gave positions.
func (q *Queue) Handled() uint64 { return q.n }

type pendingAssign struct {
	rec      *Record
	to       protocol.NodeID
	sentAtUs int64
	resent   bool
}

func newQueue(c Config, self protocol.NodeID, dc int, env protocol.Env) *Queue {
	q := &Queue{env: env, cfg: c, self: self, dc: dc,
		rowTo: append(append([]protocol.NodeID(nil), c.Layout.All(dc, flstore.Sender)...), c.Layout.All(dc, flstore.Filter)...),
		seen:  map[protocol.NodeID]*filterSeen{}, unacked: map[uint64]*pendingAssign{}}
	ring := c.Layout.Active(dc, flstore.Queue)
	if ring[0] == self {
		q.tok = &Token{MaxTOId: make([]uint64, c.DCs), Ring: ring, Journal: c.InitialJournal(dc), RowSent: make([]uint64, c.DCs),
			Logged: map[txn.ClientID]*seqSet{}}
		q.lastTok = q.tok.clone()
	}
	return q
}

// Start arms the resend timer and, at the first queue, the token's pass.
func (q *Queue) Start() {
	q.env.SetTimer(q.cfg.RetryUs, retryTimer)
	if q.tok != nil {
		q.env.SetTimer(q.cfg.HoldUs, passTimer)
	}
}

// LastToken returns the token as this queue last held it (nil if never): its MaxTOId is the
// datacenter's own ATable row as of then.
func (q *Queue) LastToken() *Token { return q.lastTok }

// HandleTimer passes the token on, or resends what is unacknowledged.
func (q *Queue) HandleTimer(id protocol.TimerID) {
	switch id {
	case passTimer:
		if q.tok == nil {
			return
		}
		q.process()
		q.pass()
		q.sendAssigns(false)
	case retryTimer:
		q.env.SetTimer(q.cfg.RetryUs, retryTimer)
		if q.outTok != nil {
			q.env.Send(q.outTo, q.outTok)
		}
		q.sendAssigns(true)
	}
}

// HandleMessage takes filters' batches, the token, and acknowledgements.
func (q *Queue) HandleMessage(from protocol.NodeID, m protocol.Message) {
	switch m := m.(type) {
	case *RecordBatch:
		if m.Seq == 0 {
			return
		}
		if q.seen[from] == nil {
			q.seen[from] = &filterSeen{}
		}
		if q.seen[from].take(m.Inc, m.Seq) {
			for _, r := range m.Records {
				if r != nil && r.Host >= 0 && r.Host < q.cfg.DCs && (r.TOId == 0) == (r.Host == q.dc) {
					q.held = append(q.held, r)
				}
			}
		}
		q.env.Send(from, &BatchAck{Inc: m.Inc, Seq: m.Seq})
		if q.tok != nil {
			q.process()
			q.sendAssigns(false)
		}
	case *Token:
		if m.Hop > q.lastHop && q.validToken(m) {
			q.lastHop = m.Hop
			q.tok = m.clone()
			q.lastTok = q.tok.clone()
			if q.process() > 0 {
				q.pass() // busy: on at once, ahead of the assignments on the interface
			} else {
				q.env.SetTimer(q.cfg.HoldUs, passTimer) // idle: hold it a while (spec 5.5)
			}
			q.sendAssigns(false)
		}
		q.env.Send(from, &TokenAck{Hop: m.Hop})
	case *TokenAck:
		if q.outTok != nil && m.Hop == q.outTok.Hop {
			q.outTok = nil
		}
	case *flstore.PersistAck:
		for _, l := range m.LIds {
			if p := q.unacked[l]; p != nil && p.to == from {
				q.rto.acked(q.env.NowUs()-p.sentAtUs, !p.resent)
				delete(q.unacked, l)
			}
		}
	}
}

// validToken reports whether tk is well formed for this datacenter: its vectors sized to the
// datacenters, its ring of this datacenter's queues through this one, its journal valid over
// this datacenter's maintainers.
func (q *Queue) validToken(tk *Token) bool {
	l := q.cfg.Layout
	return len(tk.MaxTOId) == q.cfg.DCs && len(tk.RowSent) == q.cfg.DCs && containsNode(tk.Ring, q.self) &&
		tk.Journal.Valid() && tk.Journal.Within(l.All(q.dc, flstore.Maintainer)) && within(tk.Ring, l.All(q.dc, flstore.Queue))
}

func within(ns, of []protocol.NodeID) bool {
	for _, n := range ns {
		if !containsNode(of, n) {
			return false
		}
	}
	return true
}

// HandleRequest takes elasticity events for the token holder.
func (q *Queue) HandleRequest(req protocol.Request) {
	reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
	switch op := req.Op.(type) {
	case *AddQueue:
		if !containsNode(q.cfg.Layout.All(q.dc, flstore.Queue), op.Node) {
			reply.Err = "chariots: not a queue of this datacenter"
			break
		}
		q.addRing = append(q.addRing, op.Node)
	case *AddMaintainer:
		if !containsNode(q.cfg.Layout.All(q.dc, flstore.Maintainer), op.Node) {
			reply.Err = "chariots: not a maintainer of this datacenter"
			break
		}
		q.addMaint = append(q.addMaint, op.Node)
	default:
		reply.Err = "chariots: a queue takes elasticity events only"
	}
	q.env.Reply(reply)
}

// pass sends the token to the next queue of the ring; a ring of one keeps it and processes
// again after the hold time.
func (q *Queue) pass() {
	tk := q.tok
	i := 0
	for j, n := range tk.Ring {
		if n == q.self {
			i = j
		}
	}
	succ := tk.Ring[(i+1)%len(tk.Ring)]
	if succ == q.self {
		q.env.SetTimer(q.cfg.HoldUs, passTimer)
		return
	}
	tk.Hop++
	q.lastTok = tk.clone()
	q.tok, q.outTok, q.outTo = nil, tk, succ
	q.env.Send(succ, tk)
}

// process runs the token over the held and deferred records (spec 5.5) and returns how many
// it assigned; the caller sends the assignments (sendAssigns), after passing the token on.
func (q *Queue) process() int {
	assigned := q.n
	tk := q.tok
	q.applyElasticity()
	cand := append(tk.Deferred, q.held...)
	tk.Deferred, q.held = nil, nil
	for progress := true; progress; {
		progress = false
		rest := cand[:0]
		for _, r := range cand {
			switch {
			case r.TOId == 0 && q.loggedAppend(r):
				// a copy of a local append already logged: dropped
			case r.TOId == 0 && (q.cfg.QueueIgnoreMinLId || r.MinLId <= tk.LastLId) && (r.WantDeps == nil || q.depsMet(r.WantDeps, -1)):
				c := r.Clone()
				c.Deps = append([]uint64(nil), tk.MaxTOId...)
				c.TOId = tk.MaxTOId[q.dc] + 1
				q.assign(c)
				progress = true
			case r.TOId == 0:
				rest = append(rest, r)
			case r.TOId <= tk.MaxTOId[r.Host]:
				// already logged: a late copy, dropped
			case r.TOId == tk.MaxTOId[r.Host]+1 && (q.cfg.QueueIgnoreDeps || q.depsMet(r.Deps, r.Host)):
				q.assign(r.Clone())
				progress = true
			default:
				rest = append(rest, r)
			}
		}
		cand = rest
	}
	n := min(len(cand), q.cfg.CarryMax)
	tk.Deferred = append([]*Record(nil), cand[:n]...)
	q.held = append([]*Record(nil), cand[n:]...)
	q.publishRow()
	q.lastTok = tk.clone()
	return int(q.n - assigned)
}

// depsMet reports whether every entry of deps but the host's is logged here.
func (q *Queue) depsMet(deps []uint64, host int) bool {
	if len(deps) != q.cfg.DCs {
		return false
	}
	for c, d := range deps {
		if c != host && d > q.tok.MaxTOId[c] {
			return false
		}
	}
	return true
}

// loggedAppend reports whether local record r is a copy of an append logged already (by its
// client and append number; unless local deduplication is off, UnsafeFilterNoDedupe).
func (q *Queue) loggedAppend(r *Record) bool {
	s := q.tok.Logged[r.Client]
	return r.AppendSeq > 0 && s != nil && s.has(r.AppendSeq) && !q.cfg.FilterNoDedupe
}

// assign gives r (a copy) the next position.
func (q *Queue) assign(r *Record) {
	tk := q.tok
	tk.LastLId++
	q.n++
	r.LId = tk.LastLId
	tk.MaxTOId[r.Host] = r.TOId
	if r.Host == q.dc && r.AppendSeq > 0 {
		if tk.Logged[r.Client] == nil {
			tk.Logged[r.Client] = &seqSet{}
		}
		tk.Logged[r.Client].add(r.AppendSeq)
	}
	q.unacked[r.LId] = &pendingAssign{rec: r, to: tk.Journal.Owner(r.LId)}
}

// sendAssigns sends the unacknowledged assignments: the new ones, or (resend) those older
// than the resend period, grouped by maintainer.
func (q *Queue) sendAssigns(resend bool) {
	lids := make([]uint64, 0, len(q.unacked))
	for l := range q.unacked {
		lids = append(lids, l)
	}
	sort.Slice(lids, func(i, j int) bool { return lids[i] < lids[j] })
	now, timeout := q.env.NowUs(), q.rto.timeoutUs(q.cfg.RetryUs)
	byOwner := map[protocol.NodeID]*flstore.Assign{}
	var owners []protocol.NodeID
	for _, l := range lids {
		p := q.unacked[l]
		if (resend && now-p.sentAtUs < timeout) || (!resend && p.sentAtUs != 0) {
			continue
		}
		p.resent = p.sentAtUs != 0
		p.sentAtUs = max(now, 1)
		a := byOwner[p.to]
		if a == nil {
			a = &flstore.Assign{Journal: q.journal()}
			byOwner[p.to] = a
			owners = append(owners, p.to)
		}
		a.Records = append(a.Records, p.rec)
	}
	for _, o := range owners {
		q.env.Send(o, byOwner[o])
	}
	if resend && len(owners) > 0 {
		q.rto.resent()
	}
}

// journal returns the newest journal this queue knows.
func (q *Queue) journal() flstore.Journal {
	if q.tok != nil {
		return q.tok.Journal
	}
	return q.lastTok.Journal
}

// publishRow sends MaxTOId to the senders and filters when it moved or has not been sent for a while.
func (q *Queue) publishRow() {
	tk, now := q.tok, q.env.NowUs()
	changed := false
	for i, v := range tk.MaxTOId {
		changed = changed || v != tk.RowSent[i]
	}
	if !changed && now-tk.RowSentAtUs < q.cfg.RowEveryUs {
		return
	}
	tk.RowSent, tk.RowSentAtUs = append([]uint64(nil), tk.MaxTOId...), now
	for _, n := range q.rowTo {
		q.env.Send(n, &RowUpdate{Row: tk.RowSent})
	}
}

// applyElasticity adds waiting queues to the ring after this one, and waiting maintainers in a
// new epoch starting at the next position (once a position was assigned in the current one).
func (q *Queue) applyElasticity() {
	tk := q.tok
	for _, n := range q.addRing {
		if !containsNode(tk.Ring, n) {
			i := 0
			for j, x := range tk.Ring {
				if x == q.self {
					i = j
				}
			}
			tk.Ring = append(tk.Ring[:i+1], append([]protocol.NodeID{n}, tk.Ring[i+1:]...)...)
		}
	}
	q.addRing = nil
	last := tk.Journal[len(tk.Journal)-1]
	var add []protocol.NodeID
	for _, n := range q.addMaint {
		if !containsNode(last.Maintainers, n) && !containsNode(add, n) {
			add = append(add, n)
		}
	}
	if len(add) == 0 {
		q.addMaint = nil
		return
	}
	if tk.LastLId+1 <= last.StartLId {
		return // nothing assigned in the current epoch yet: wait, epochs must start in order
	}
	ms := append(append([]protocol.NodeID(nil), last.Maintainers...), add...)
	tk.Journal = append(tk.Journal, flstore.Epoch{StartLId: tk.LastLId + 1, Maintainers: ms, B: last.B})
	q.addMaint = nil
}

// filterSeen is, for one filter, the batches a queue took of the filter's two newest
// incarnations (index 0 the newest): a filter that restarted empty numbers its batches from 1
// again under a newer incarnation, and the batches of older ones are dropped. Two, not one, so
// that a batch of a bogus future incarnation cannot make the queue drop the filter's own.
type filterSeen struct {
	inc  [2]uint64
	seen [2]*seqSet
}

// take records batch seq of incarnation inc and reports whether it is new.
func (s *filterSeen) take(inc, seq uint64) bool {
	switch {
	case s.seen[0] != nil && inc == s.inc[0]:
		return s.seen[0].add(seq)
	case s.seen[1] != nil && inc == s.inc[1]:
		return s.seen[1].add(seq)
	case s.seen[0] == nil || inc > s.inc[0]:
		s.inc[1], s.seen[1] = s.inc[0], s.seen[0]
		s.inc[0], s.seen[0] = inc, &seqSet{}
		return s.seen[0].add(seq)
	case s.seen[1] == nil || inc > s.inc[1]:
		s.inc[1], s.seen[1] = inc, &seqSet{}
		return s.seen[1].add(seq)
	}
	return false // an older incarnation's
}

// seqSet is a set of sequence numbers ≥ 1: a contiguous prefix and the numbers above it.
type seqSet struct {
	upTo  uint64
	above map[uint64]bool
}

// has reports whether n is in the set.
func (s *seqSet) has(n uint64) bool { return n <= s.upTo || s.above[n] }

// clone returns a copy of s.
func (s *seqSet) clone() *seqSet { return &seqSet{upTo: s.upTo, above: maps.Clone(s.above)} }

// add inserts s and reports whether it was new.
func (s *seqSet) add(n uint64) bool {
	if s.has(n) {
		return false
	}
	if s.above == nil {
		s.above = map[uint64]bool{}
	}
	s.above[n] = true
	for s.above[s.upTo+1] {
		delete(s.above, s.upTo+1)
		s.upTo++
	}
	return true
}
