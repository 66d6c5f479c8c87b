package chariots

import (
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// The token rebuild (spec 5.13, our choice; the package doc, "Token loss and rebuild"). The
// coordinator (the first queue of the initial ring) runs it at start and when another queue
// asks (RebuildReq), which every queue does when it starts, until a generation newer than its
// start covers it.
//
// When the token is lost. Passes are resent until the next queue acknowledges them, and a queue
// takes each pass once, so the network never loses the token: only a queue that loses its state
// does (it restarts empty holding the token, or after passing it unacknowledged), and such a
// queue knows it when it starts. So the liveness signal is the queue's own start, not the
// token's lateness: a restart is announced (RebuildReq carries the queue's start time, resent
// every retry period until a rebuild covers it) and answered by exactly one rebuild, however
// slow the ring. Spec 5.13 has the Controller detect a "missing token heartbeat", that is a
// timeout; we had one (token_timeout, 1 s) and it mistook a saturated ring for a lost token: in
// chariots-t75 the token waited behind records in the queues' inputs for longer than the
// timeout, every rebuild truncated what was not yet stable, the clients retried and saturated the
// ring again (40 rebuilds in 60 s, the log never converged). A queue that stops and does not come
// back, or is cut off, keeps the token: the ring waits for it, as it would for a new token, whose
// ring goes through the same queue (taking a dead queue out of the ring is not built).
//
//  1. It opens a new generation (its clock, above every earlier one) and sends Freeze to every
//     maintainer and queue of the datacenter. A maintainer then takes no assignment until
//     truncated and answers its progress (FreezeAck); a queue drops its token, passes and
//     unacknowledged assignments of the old generation and answers its newest token copy
//     (TokenCopy).
//  2. Once every maintainer and every other queue answered, the stable prefix T is the exact head of the log over
//     their progress: every position up to T is filled, and nothing above it was answered,
//     indexed, shipped or published in a row (all of those wait for the head of the log). It
//     sends Truncate: maintainers delete their records above T and answer their records from
//     the newest copy's LastLId on (TruncateAck).
//  3. The new token starts at LastLId = T, its row and logged appends as of T: from the copy
//     (rowAt, loggedAt) if the copy reached T, else the copy's plus the records between.
//     Filters that see the new generation's row reset to it, and clients' retries and
//     senders' resends bring back what was truncated.

// rebuild is the coordinator's rebuild under way.
type rebuild struct {
	gen  uint64
	copy *Token // the newest token copy so far (nil: none)
	// phase 1: the maintainers' progress, and the queues that answered
	frozen map[protocol.NodeID]*flstore.FreezeAck
	copied map[protocol.NodeID]bool
	added  []protocol.NodeID // the queues that answered that an elasticity event added them
	// phase 2 (truncate set): the maintainers that answered, and their records
	truncate  *flstore.Truncate
	truncated map[protocol.NodeID]bool
	records   []*Record
}

// startRebuild opens a generation above the current one and atLeast, and freezes the
// datacenter's maintainers and queues.
func (q *Queue) startRebuild(atLeast uint64) {
	gen := max(uint64(max(q.env.NowUs(), 0)), q.gen+1, atLeast)
	q.enterGen(gen)
	q.rebuilds++
	q.rb = &rebuild{gen: gen, copy: q.lastTok, frozen: map[protocol.NodeID]*flstore.FreezeAck{},
		copied: map[protocol.NodeID]bool{}, truncated: map[protocol.NodeID]bool{}}
	q.rb.resend(q)
}

// resend sends the current phase's message to every node that has not answered it.
func (rb *rebuild) resend(q *Queue) {
	l := q.cfg.Layout
	if rb.truncate == nil {
		f := &flstore.Freeze{Gen: rb.gen}
		for _, m := range l.All(q.dc, flstore.Maintainer) {
			if rb.frozen[m] == nil {
				q.env.Send(m, f)
			}
		}
		for _, o := range l.All(q.dc, flstore.Queue) {
			if o != q.self && !rb.copied[o] {
				q.env.Send(o, f)
			}
		}
		return
	}
	for _, m := range l.All(q.dc, flstore.Maintainer) {
		if !rb.truncated[m] {
			q.env.Send(m, rb.truncate)
		}
	}
}

// handle takes a queue's token copy or a maintainer's answer.
func (rb *rebuild) handle(q *Queue, from protocol.NodeID, m protocol.Message) {
	l := q.cfg.Layout
	switch m := m.(type) {
	case *TokenCopy:
		if m.Gen != rb.gen || rb.truncate != nil || !containsNode(l.All(q.dc, flstore.Queue), from) {
			return
		}
		rb.copied[from] = true
		if m.Added && !containsNode(rb.added, from) {
			rb.added = append(rb.added, from)
		}
		if tk := m.Token; tk != nil && tk.Gen < rb.gen && tk.newer(rb.copy) && q.validToken(tk) {
			rb.copy = tk
		}
		rb.maybeTruncate(q)
	case *flstore.FreezeAck:
		if m.Gen != rb.gen || rb.truncate != nil || !containsNode(l.All(q.dc, flstore.Maintainer), from) {
			return
		}
		rb.frozen[from] = m
		rb.maybeTruncate(q)
	case *flstore.TruncateAck:
		if m.Gen != rb.gen || rb.truncate == nil || rb.truncated[from] || !containsNode(l.All(q.dc, flstore.Maintainer), from) {
			return
		}
		rb.truncated[from] = true
		rb.records = append(rb.records, m.Records...)
		if len(rb.truncated) == len(l.All(q.dc, flstore.Maintainer)) {
			q.finishRebuild()
		}
	}
}

// maybeTruncate starts phase 2 once every maintainer and every other queue answered. Waiting
// for the queues' copies is not an optimisation: the copy carries the ring, so a rebuild that
// went ahead without it would rebuild the initial ring and drop queues added since (spec 5.12),
// whose held records no token would then visit (a 10,000-seed flstore swarm found it: appends
// acknowledged by an added queue to its filter and never logged).
func (rb *rebuild) maybeTruncate(q *Queue) {
	l := q.cfg.Layout
	if rb.truncate == nil && len(rb.frozen) == len(l.All(q.dc, flstore.Maintainer)) && len(rb.copied) == len(l.All(q.dc, flstore.Queue))-1 {
		rb.startTruncate(q)
	}
}

// startTruncate computes the stable prefix over the newest journal known (the copy's, or a
// maintainer's that extends it) and sends Truncate.
func (rb *rebuild) startTruncate(q *Queue) {
	j := q.cfg.InitialJournal(q.dc)
	from := uint64(1)
	if rb.copy != nil {
		j, from = rb.copy.Journal, rb.copy.LastLId+1
	}
	ms := q.cfg.Layout.All(q.dc, flstore.Maintainer)
	for _, m := range ms {
		if a := rb.frozen[m]; len(a.Journal) > len(j) && a.Journal.Valid() && a.Journal.Extends(j) && a.Journal.Within(ms) {
			j = a.Journal
		}
	}
	t := flstore.StablePrefix(j, rb.frozen)
	if t == flstore.None {
		t = 0
	}
	if rb.copy != nil && t < rb.copy.StableLId {
		// Below a head of the log already reported: a maintainer lost records (its disk; it
		// stops, LogMaintainer.Failure). Truncating would drop answered records: the rebuild
		// stays frozen instead, and the datacenter takes no append.
		return
	}
	rb.truncate = &flstore.Truncate{Gen: rb.gen, T: t, From: min(from, t+1), Journal: j}
	rb.resend(q)
}

// finishRebuild makes the new generation's token at the stable prefix and takes it.
func (q *Queue) finishRebuild() {
	rb := q.rb
	q.rb = nil
	t := rb.truncate.T
	c := rb.copy
	if c == nil {
		c = &Token{MaxTOId: make([]uint64, q.cfg.DCs), Ring: q.cfg.Layout.Active(q.dc, flstore.Queue), Logged: map[txn.ClientID]*seqSet{}}
	}
	tk := &Token{Gen: rb.gen, LastLId: t, StableLId: t, Journal: rb.truncate.Journal, Ring: slices.Clone(c.Ring),
		Deferred: slices.Clone(c.Deferred)}
	for _, n := range rb.added {
		if !containsNode(tk.Ring, n) {
			tk.Ring = append(tk.Ring, n)
		}
	}
	if c.LastLId >= t {
		tk.MaxTOId, tk.Logged = c.rowAt(t), c.loggedAt(t, q.dc)
	} else {
		cl := c.clone()
		tk.MaxTOId, tk.Logged = cl.MaxTOId, cl.Logged
		for _, r := range rb.records {
			if r.LId <= c.LastLId || r.LId > t || r.Host < 0 || r.Host >= q.cfg.DCs {
				continue
			}
			tk.MaxTOId[r.Host] = max(tk.MaxTOId[r.Host], r.TOId)
			if r.Host == q.dc && r.AppendSeq > 0 {
				tk.logAppend(r.Client, r.AppendSeq)
			}
		}
	}
	q.take(tk)
}

// rowAt returns the token's row (MaxTOId) as of position t ≥ StableLId: per host, the TOId
// before its first assignment above t (a host's TOIds are assigned in order of position).
func (t *Token) rowAt(l uint64) []uint64 {
	row := slices.Clone(t.MaxTOId)
	for _, a := range t.Recent {
		if a.last() > l && a.Host >= 0 && a.Host < len(row) {
			first := max(a.LId, l+1) // the run's first position above l
			row[a.Host] = min(row[a.Host], a.TOId+(first-a.LId)-1)
		}
	}
	return row
}

// loggedAt returns the logged appends (Logged) as of position l ≥ StableLId: without the local
// ones (of datacenter dc) assigned above l.
func (t *Token) loggedAt(l uint64, dc int) map[txn.ClientID]*seqSet {
	logged := t.clone().Logged
	for _, a := range t.Recent {
		if s := logged[a.Client]; a.last() > l && a.Host == dc && a.AppendSeq > 0 && s != nil {
			for p := max(a.LId, l+1); p <= a.last(); p++ {
				s.remove(a.AppendSeq + (p - a.LId))
			}
		}
	}
	return logged
}

// logAppend records client c's append seq as logged.
func (t *Token) logAppend(c txn.ClientID, seq uint64) {
	if t.Logged[c] == nil {
		t.Logged[c] = &seqSet{}
	}
	t.Logged[c].add(seq)
}

// trimRecent moves the stable position up to hl (a head of the log a maintainer reported) and
// drops the runs of assignments at or below it.
func (t *Token) trimRecent(hl uint64) {
	t.StableLId = max(t.StableLId, hl)
	i := 0
	for i < len(t.Recent) && t.Recent[i].last() <= t.StableLId {
		i++
	}
	t.Recent = t.Recent[i:]
}
