package chariots

import (
	"maps"
	"math"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Queue holds filtered records until the token visits and then gives every eligible one the
// next position (spec 5.5): a local record gets its TOId and dependency vector there (A1, A3),
// once its client's dependencies (WantDeps) are logged and the position passed its MinLId
// (explicit order, spec 3.6, CH-I8: it then gets a position above MinLId);
// another datacenter's record is eligible when it is its host's next TOId and its dependencies
// are logged. Assignments go to the owner maintainer and are resent until persisted. No queue
// makes a token at start: the first queue of the initial ring (the coordinator) builds it, and
// rebuilds it under a new generation when a queue (itself included) restarted (rebuild.go).
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
	// added is set once an elasticity event named this queue as the one added to the ring: it
	// tells a rebuild (TokenCopy.Added), so that the ring keeps it even if the event reached no
	// token (the holders that were told restarted empty) while filters already send it records.
	added bool
	n     uint64 // records assigned
	// gen is the token generation this queue is in; hlSeen the highest head of the log a
	// maintainer reported to it in that generation (the token's StableLId). startUs is its
	// clock at start: until it is in a generation above it, it asks the coordinator for a
	// rebuild (it may have restarted empty).
	gen, hlSeen, startUs uint64
	// The coordinator's: the rebuild under way (nil: none), and how many it started.
	rb       *rebuild
	rebuilds uint64
}

// Handled counts the records this queue gave positions.
func (q *Queue) Handled() uint64 { return q.n }

// Rebuilds counts the token rebuilds this queue started (the coordinator: one at start, then
// one per queue restart it heard of; rebuild.go), so that runs and tests can tell that
// nothing else, such as a slow ring, rebuilt the token.
func (q *Queue) Rebuilds() uint64 { return q.rebuilds }

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
	return q
}

// coordinator returns the datacenter's coordinating queue: the first of the initial ring.
func (q *Queue) coordinator() protocol.NodeID { return q.cfg.Layout.Active(q.dc, flstore.Queue)[0] }

// Start arms the resend timer; the coordinator builds the token (a rebuild: it may have
// restarted empty), another queue asks it to.
func (q *Queue) Start() {
	q.startUs = uint64(max(q.env.NowUs(), 0))
	q.env.SetTimer(q.cfg.RetryUs, retryTimer)
	if q.self == q.coordinator() {
		q.startRebuild(0)
	} else {
		q.env.Send(q.coordinator(), &RebuildReq{StartUs: q.startUs})
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
		switch {
		case q.rb != nil:
			q.rb.resend(q)
		case q.self != q.coordinator() && q.gen <= q.startUs:
			q.env.Send(q.coordinator(), &RebuildReq{StartUs: q.startUs})
		}
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
		if m.Gen > q.gen && q.rb == nil && q.validToken(m) {
			q.enterGen(m.Gen) // it missed the rebuild's Freeze
		}
		if m.Gen == q.gen && m.Hop > q.lastHop && q.validToken(m) {
			q.take(m.clone())
		}
		q.env.Send(from, &TokenAck{Gen: m.Gen, Hop: m.Hop})
	case *TokenAck:
		if q.outTok != nil && m.Hop == q.outTok.Hop && m.Gen == q.outTok.Gen {
			q.outTok = nil
		}
	case *flstore.Freeze:
		if containsNode(q.cfg.Layout.All(q.dc, flstore.Queue), from) && from != q.self {
			if m.Gen > q.gen {
				q.enterGen(m.Gen)
			}
			if m.Gen == q.gen {
				q.env.Send(from, &TokenCopy{Gen: q.gen, Token: q.lastTok, Added: q.added})
			}
		}
	case *RebuildReq:
		if q.self == q.coordinator() && m.StartUs >= q.gen && m.StartUs < math.MaxUint64 {
			q.startRebuild(m.StartUs + 1)
		}
	case *TokenCopy, *flstore.FreezeAck, *flstore.TruncateAck:
		if q.rb != nil {
			q.rb.handle(q, from, m)
		}
	case *flstore.PersistAck:
		if m.Gen != q.gen {
			return
		}
		q.hlSeen = max(q.hlSeen, m.HL)
		for _, l := range m.LIds {
			if p := q.unacked[l]; p != nil && p.to == from {
				q.rto.acked(q.env.NowUs()-p.sentAtUs, !p.resent)
				delete(q.unacked, l)
			}
		}
	}
}

// take makes tk (a copy of a newer pass of the current generation) the held token, runs it
// over the records and passes it on at once if it assigned any (busy: ahead of the assignments
// on the interface), or holds it a while (idle, spec 5.5).
func (q *Queue) take(tk *Token) {
	q.lastHop = tk.Hop
	q.tok = tk
	q.lastTok = tk.clone()
	if q.process() > 0 {
		q.pass()
	} else {
		q.env.SetTimer(q.cfg.HoldUs, passTimer)
	}
	q.sendAssigns(false)
}

// enterGen moves the queue to token generation g: the token it holds or passed and its
// unacknowledged assignments belong to the old one (the rebuild truncates what they did not
// persist) and are dropped; the token's deferred records go back among the held ones.
func (q *Queue) enterGen(g uint64) {
	if q.tok != nil {
		q.held = append(q.held, q.tok.Deferred...)
	}
	q.gen, q.lastHop, q.hlSeen = g, 0, 0
	q.tok, q.outTok = nil, nil
	q.unacked = map[uint64]*pendingAssign{}
}

// validToken reports whether tk is well formed for this datacenter: its vectors sized to the
// datacenters, its ring of this datacenter's queues through this one, its journal valid over
// this datacenter's maintainers.
func (q *Queue) validToken(tk *Token) bool {
	l := q.cfg.Layout
	return len(tk.MaxTOId) == q.cfg.DCs && len(tk.RowSent) == q.cfg.DCs && containsNode(tk.Ring, q.self) &&
		tk.Journal.Valid() && tk.Journal.Within(l.All(q.dc, flstore.Maintainer)) && within(tk.Ring, l.All(q.dc, flstore.Queue)) &&
		validRecent(tk)
}

// validRecent reports whether tk's runs of assignments are in order of position, apart, within
// StableLId+1 … LastLId, and their TOIds and append numbers do not overflow.
func validRecent(tk *Token) bool {
	after := tk.StableLId // the runs' positions lie above the previous run's
	for i, a := range tk.Recent {
		if a.N == 0 || a.LId > tk.LastLId || a.N > tk.LastLId-a.LId+1 || a.TOId == 0 || a.TOId+a.N < a.TOId ||
			a.AppendSeq+a.N < a.AppendSeq || (i > 0 && a.LId <= after) || a.last() <= tk.StableLId {
			return false
		}
		after = a.last()
	}
	return true
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
		if op.Node == q.self {
			q.added = true
		} else {
			q.addRing = append(q.addRing, op.Node)
		}
	case *AddMaintainer:
		if !containsNode(q.cfg.Layout.All(q.dc, flstore.Maintainer), op.Node) {
			reply.Err = "chariots: not a maintainer of this datacenter"
			break
		}
		q.addMaint = append(q.addMaint, op.Node)
	default:
		reply.Err = "chariots: a queue takes elasticity events only"
	}
	q.env.Reply(acknowledge(reply, req))
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
	tk.trimRecent(q.hlSeen)
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
	if n := len(tk.Recent); n > 0 && tk.Recent[n-1].extends(r.LId, r.Host, r.TOId, r.Client, r.AppendSeq) {
		tk.Recent[n-1].N++
	} else {
		tk.Recent = append(tk.Recent, Assigned{LId: r.LId, N: 1, Host: r.Host, TOId: r.TOId, Client: r.Client, AppendSeq: r.AppendSeq})
	}
	if r.Host == q.dc && r.AppendSeq > 0 {
		tk.logAppend(r.Client, r.AppendSeq)
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
			a = &flstore.Assign{Journal: q.journal(), Gen: q.gen}
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

// publishRow sends the row of the stable prefix (rowAt(StableLId)) to the senders and filters
// when it moved or has not been sent for a while.
func (q *Queue) publishRow() {
	tk, now := q.tok, q.env.NowUs()
	row := tk.rowAt(tk.StableLId)
	changed := len(row) != len(tk.RowSent)
	for i := 0; !changed && i < len(row); i++ {
		v := row[i]
		changed = changed || v != tk.RowSent[i]
	}
	if !changed && now-tk.RowSentAtUs < q.cfg.RowEveryUs {
		return
	}
	tk.RowSent, tk.RowSentAtUs = row, now // a rebuilt token's RowSent is nil: published at once
	for _, n := range q.rowTo {
		q.env.Send(n, &RowUpdate{Row: row, Gen: tk.Gen})
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

// remove takes n out of the set.
func (s *seqSet) remove(n uint64) {
	if n > s.upTo {
		delete(s.above, n)
		return
	}
	if s.above == nil {
		s.above = map[uint64]bool{}
	}
	for k := n + 1; k <= s.upTo; k++ {
		s.above[k] = true
	}
	s.upTo = n - 1
}

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
