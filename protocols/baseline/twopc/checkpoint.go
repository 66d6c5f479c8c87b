package twopc

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the proxy state (reads, commits, doomed
// transactions, orphan aborts), the Paxos state (acceptor, log, role, candidacy, leader state,
// held requests) and the coordinator state (transactions, lock table, grants, finished records,
// forgotten sequence numbers, term, deciding positions). Maps go in key order; messages held go
// through the codec; the self-addressed queue is empty between inputs.
func (r *Replica) AppendCheckpoint(dst []byte, codec protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	if len(r.selfQ) > 0 || r.inLoop {
		w.Fail("2pc-paxos self queue", "%d messages to itself are still undelivered", len(r.selfQ))
	}
	w.Uvarint(r.nextRid)
	for _, rid := range wire.SortedKeys(w, "2pc reads", r.reads) {
		p := r.reads[rid]
		w.Uvarint(rid)
		w.Uvarint(uint64(p.client))
		w.Uvarint(p.seq)
		w.ID(p.txn)
		w.Int("2pc read coordinator", p.to, r.n-1)
		w.Varint(p.deadline)
	}
	for _, id := range wire.SortedKeys(w, "2pc commits", r.commits) {
		p := r.commits[id]
		w.ID(id)
		w.Uvarint(uint64(p.client))
		w.Uvarint(p.seq)
		w.Varint(p.deadline)
	}
	for _, id := range wire.SortedKeys(w, "2pc doomed", r.doomed) {
		w.ID(id)
		w.String("2pc reason", string(r.doomed[id]), wire.MaxTextLen)
	}
	for _, id := range wire.SortedKeys(w, "2pc orphans", r.orphans) {
		w.ID(id)
		w.Varint(r.orphans[id])
	}
	r.checkpointPaxos(w, codec)
	r.co.checkpoint(w)
	return w.Finish()
}

func (r *Replica) checkpointPaxos(w *wire.Writer, codec protocol.Codec) {
	p := &r.paxos
	w.Uvarint(p.promised)
	w.Varint(p.heardUs)
	w.Uvarint(p.fenceBallot)
	w.Uvarint(p.fenceEnd)
	for _, pos := range wire.SortedKeys(w, "2pc slots", p.slots) {
		s := p.slots[pos]
		w.Uvarint(pos)
		w.Uvarint(s.ballot)
		w.OptionalTxn(s.txn)
		w.Varint(s.sentUs)
		w.Varint(s.chosenUs)
	}
	for _, v := range []uint64{p.last, p.base, p.have, p.known, p.applied, p.maxRound} {
		w.Uvarint(v)
	}
	w.Byte(byte(p.role))
	w.Uvarint(p.ballot)
	w.Bool(p.cand != nil)
	if c := p.cand; c != nil {
		w.Uvarint(c.ballot)
		w.Varint(c.sentUs)
		w.Varint(c.deadline)
		for _, pos := range wire.SortedKeys(w, "2pc candidacy reports", c.acc) {
			a := c.acc[pos]
			w.Uvarint(pos)
			w.Uvarint(a.Index)
			w.Uvarint(a.Ballot)
			w.OptionalTxn(a.Txn)
		}
		w.Uvarint(c.fenceB)
		w.Uvarint(c.fenceE)
		for _, dc := range wire.SortedKeys(w, "2pc granted", c.granted) {
			w.Int("2pc datacenter", dc, r.n-1)
			w.Uvarint(c.granted[dc])
		}
		for _, dc := range wire.SortedKeys(w, "2pc refused", c.refused) {
			w.Int("2pc datacenter", dc, r.n-1)
			w.Bool(c.refused[dc])
		}
		w.Uvarint(c.current)
	}
	w.Bool(p.ld != nil)
	if ld := p.ld; ld != nil {
		w.Uvarint(ld.commit)
		w.Uvarint(ld.fence)
		w.Bool(ld.serving)
		w.Uvarints(ld.match)
		w.Uvarints(ld.peerCommit)
		w.Varints(ld.nextSend)
		w.Varints(ld.lastSent)
		w.Varints(ld.grantUs)
		w.Varint(ld.leaseUntil)
	}
	w.Varint(p.nextElectUs)
	w.Int("2pc backoff", p.backoff, wire.MaxCheckpointCount)
	w.Varint(p.lastTickUs)
	w.Count("2pc held requests", len(p.queue), wire.MaxCheckpointCount)
	for _, m := range p.queue {
		w.Message(codec, m)
	}
	w.Int("2pc terms", p.terms, wire.MaxCheckpointCount)
}

func (c *coordinator) checkpoint(w *wire.Writer) {
	for _, id := range wire.SortedKeys(w, "2pc transactions", c.txns) {
		t := c.txns[id]
		w.ID(t.id)
		w.Int("2pc from", t.from, c.r.n-1)
		w.Byte(byte(t.st))
		w.String("2pc reason", string(t.reason), wire.MaxTextLen)
		w.OptionalTxn(t.t)
		w.Int("2pc next lock", t.next, wire.MaxCheckpointCount)
		for _, k := range wire.SortedKeys(w, "2pc held", t.held) {
			w.String("2pc key", k, wire.MaxKeyLen)
			w.Bool(t.held[k])
		}
		w.Bool(t.waiting != nil)
		w.Keys(t.waiting)
		for _, k := range wire.SortedKeys(w, "2pc read requests", t.readRids) {
			w.String("2pc key", k, wire.MaxKeyLen)
			w.Uvarint(t.readRids[k])
		}
		w.Bool(t.notify != nil)
		w.Count("2pc notify", len(t.notify), wire.MaxCheckpointCount)
		for _, dc := range t.notify {
			w.Int("2pc datacenter", dc, c.r.n-1)
		}
		w.Uvarint(t.index)
	}
	for _, k := range wire.SortedKeys(w, "2pc locks", c.locks) {
		l := c.locks[k]
		w.String("2pc key", k, wire.MaxKeyLen)
		for _, id := range wire.SortedKeys(w, "2pc holders", l.holders) {
			w.ID(id)
			w.Bool(l.holders[id])
		}
		w.Count("2pc lock queue", len(l.queue), wire.MaxCheckpointCount)
		for _, q := range l.queue {
			w.ID(q.id)
			w.Bool(q.excl)
		}
	}
	w.Count("2pc ready", len(c.ready), wire.MaxCheckpointCount)
	for _, g := range c.ready {
		w.ID(g.id)
		w.String("2pc key", g.key, wire.MaxKeyLen)
	}
	w.Count("2pc finished", len(c.finished), wire.MaxCheckpointCount)
	for _, rec := range c.finished {
		w.ID(rec.id)
		w.Varint(rec.atUs)
	}
	for _, cl := range wire.SortedKeys(w, "2pc forgot", c.forgot) {
		w.Uvarint(uint64(cl))
		w.Uvarint(uint64(c.forgot[cl]))
	}
	w.Uvarint(c.term)
	for _, pos := range wire.SortedKeys(w, "2pc deciding", c.decidingAt) {
		w.Uvarint(pos)
		w.ID(c.decidingAt[pos])
	}
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, codec protocol.Codec) error {
	rd := wire.NewReader(b)
	r.nextRid = rd.Uvarint("2pc next rid")
	for range rd.Count("2pc reads", wire.MaxCheckpointCount, 6) {
		rid := rd.Uvarint("2pc rid")
		r.reads[rid] = &pendingRead{client: txn.ClientID(rd.Uvarint("2pc client")), seq: rd.Uvarint("2pc seq"), txn: rd.ID("2pc txn"),
			to: rd.Int("2pc read coordinator", r.n-1), deadline: rd.Varint("2pc deadline")}
	}
	for range rd.Count("2pc commits", wire.MaxCheckpointCount, 4) {
		id := rd.ID("2pc commit")
		r.commits[id] = &pendingCommit{client: txn.ClientID(rd.Uvarint("2pc client")), seq: rd.Uvarint("2pc seq"), deadline: rd.Varint("2pc deadline")}
	}
	for range rd.Count("2pc doomed", wire.MaxCheckpointCount, 2) {
		id := rd.ID("2pc doomed")
		r.doomed[id] = txn.AbortReason(rd.String("2pc reason", wire.MaxTextLen))
	}
	for range rd.Count("2pc orphans", wire.MaxCheckpointCount, 2) {
		id := rd.ID("2pc orphan")
		r.orphans[id] = rd.Varint("2pc orphan time")
	}
	r.restorePaxos(rd, codec)
	r.co.restore(rd)
	return rd.Done()
}

func (r *Replica) restorePaxos(rd *wire.Reader, codec protocol.Codec) {
	p := &r.paxos
	p.promised, p.heardUs = rd.Uvarint("2pc promised"), rd.Varint("2pc heard")
	p.fenceBallot, p.fenceEnd = rd.Uvarint("2pc fence ballot"), rd.Uvarint("2pc fence end")
	clear(p.slots)
	for range rd.Count("2pc slots", wire.MaxCheckpointCount, 5) {
		pos := rd.Uvarint("2pc slot")
		p.slots[pos] = &slot{ballot: rd.Uvarint("2pc slot ballot"), txn: rd.OptionalTxn(), sentUs: rd.Varint("2pc sent"), chosenUs: rd.Varint("2pc chosen")}
	}
	for _, v := range []*uint64{&p.last, &p.base, &p.have, &p.known, &p.applied, &p.maxRound} {
		*v = rd.Uvarint("2pc log position")
	}
	p.role = role(rd.Byte("2pc role"))
	if p.role > leader {
		rd.Fail("2pc role", "unknown role %d", p.role)
	}
	p.ballot = rd.Uvarint("2pc ballot")
	p.cand = nil
	if rd.Bool("2pc candidacy") {
		c := &candidacy{ballot: rd.Uvarint("2pc candidacy ballot"), sentUs: rd.Varint("2pc candidacy sent"), deadline: rd.Varint("2pc candidacy deadline"),
			acc: map[uint64]Accepted{}, granted: map[int]uint64{}, refused: map[int]bool{}}
		for range rd.Count("2pc candidacy reports", wire.MaxCheckpointCount, 4) {
			pos := rd.Uvarint("2pc report position")
			c.acc[pos] = Accepted{Index: rd.Uvarint("2pc report index"), Ballot: rd.Uvarint("2pc report ballot"), Txn: rd.OptionalTxn()}
		}
		c.fenceB, c.fenceE = rd.Uvarint("2pc candidacy fence ballot"), rd.Uvarint("2pc candidacy fence end")
		for range rd.Count("2pc granted", wire.MaxCheckpointCount, 2) {
			dc := rd.Int("2pc datacenter", r.n-1)
			c.granted[dc] = rd.Uvarint("2pc granted prefix")
		}
		for range rd.Count("2pc refused", wire.MaxCheckpointCount, 2) {
			dc := rd.Int("2pc datacenter", r.n-1)
			c.refused[dc] = rd.Bool("2pc refused")
		}
		c.current = rd.Uvarint("2pc candidacy current")
		p.cand = c
	}
	p.ld = nil
	if rd.Bool("2pc leader state") {
		p.ld = &leaderState{commit: rd.Uvarint("2pc leader commit"), fence: rd.Uvarint("2pc leader fence"), serving: rd.Bool("2pc serving"),
			match: rd.Uvarints(), peerCommit: rd.Uvarints(), nextSend: rd.Varints(), lastSent: rd.Varints(), grantUs: rd.Varints(),
			leaseUntil: rd.Varint("2pc lease until")}
	}
	p.nextElectUs = rd.Varint("2pc next election")
	p.backoff = rd.Int("2pc backoff", wire.MaxCheckpointCount)
	p.lastTickUs = rd.Varint("2pc last tick")
	p.queue = make([]protocol.Message, rd.Count("2pc held requests", wire.MaxCheckpointCount, 1))
	for i := range p.queue {
		p.queue[i] = rd.Message(codec)
	}
	p.terms = rd.Int("2pc terms", wire.MaxCheckpointCount)
}

func (c *coordinator) restore(rd *wire.Reader) {
	n := c.r.n
	for range rd.Count("2pc transactions", wire.MaxCheckpointCount, 11) {
		t := &tctx{id: rd.ID("2pc transaction"), from: rd.Int("2pc from", n-1), st: txnState(rd.Byte("2pc state")),
			reason: txn.AbortReason(rd.String("2pc reason", wire.MaxTextLen)), t: rd.OptionalTxn(),
			next: rd.Int("2pc next lock", wire.MaxCheckpointCount), held: map[string]bool{}, readRids: map[string]uint64{}}
		if t.st > aborted {
			rd.Fail("2pc state", "unknown state %d", t.st)
		}
		for range rd.Count("2pc held", wire.MaxCheckpointCount, 2) {
			k := rd.String("2pc key", wire.MaxKeyLen)
			t.held[k] = rd.Bool("2pc exclusive")
		}
		waiting := rd.Bool("2pc waiting present")
		if t.waiting = rd.Keys(); waiting && t.waiting == nil {
			t.waiting = []string{}
		}
		for range rd.Count("2pc read requests", wire.MaxCheckpointCount, 2) {
			k := rd.String("2pc key", wire.MaxKeyLen)
			t.readRids[k] = rd.Uvarint("2pc rid")
		}
		notify := rd.Bool("2pc notify present")
		t.notify = make([]int, rd.Count("2pc notify", wire.MaxCheckpointCount, 1))
		for i := range t.notify {
			t.notify[i] = rd.Int("2pc datacenter", n-1)
		}
		if !notify {
			t.notify = nil
		}
		t.index = rd.Uvarint("2pc index")
		c.txns[t.id] = t
	}
	for range rd.Count("2pc locks", wire.MaxCheckpointCount, 3) {
		k := rd.String("2pc key", wire.MaxKeyLen)
		l := &lock{holders: map[txn.ID]bool{}}
		for range rd.Count("2pc holders", wire.MaxCheckpointCount, 2) {
			id := rd.ID("2pc holder")
			l.holders[id] = rd.Bool("2pc exclusive")
		}
		l.queue = make([]lockReq, rd.Count("2pc lock queue", wire.MaxCheckpointCount, 2))
		for i := range l.queue {
			l.queue[i] = lockReq{id: rd.ID("2pc queued"), excl: rd.Bool("2pc exclusive")}
		}
		c.locks[k] = l
	}
	c.ready = make([]grant, rd.Count("2pc ready", wire.MaxCheckpointCount, 2))
	for i := range c.ready {
		c.ready[i] = grant{id: rd.ID("2pc grant"), key: rd.String("2pc key", wire.MaxKeyLen)}
	}
	c.finished = make([]record, rd.Count("2pc finished", wire.MaxCheckpointCount, 2))
	for i := range c.finished {
		c.finished[i] = record{id: rd.ID("2pc finished"), atUs: rd.Varint("2pc finished time")}
	}
	for range rd.Count("2pc forgot", wire.MaxCheckpointCount, 2) {
		cl := txn.ClientID(rd.Uvarint("2pc forgot client"))
		c.forgot[cl] = uint32(rd.Int("2pc forgot seq", 1<<32-1))
	}
	c.term = rd.Uvarint("2pc term")
	for range rd.Count("2pc deciding", wire.MaxCheckpointCount, 2) {
		pos := rd.Uvarint("2pc deciding position")
		c.decidingAt[pos] = rd.ID("2pc deciding")
	}
}
