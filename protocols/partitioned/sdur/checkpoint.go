package sdur

import (
	"cmp"
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// AppendCheckpoint implements protocol.Checkpointer: the certification state (SC, the completion
// log, the last writers and readers), the delivered payloads waiting, the pending transactions
// and their votes, what the replica has seen of each transaction, the waiting reads and delayed
// TERMINATEs, the snapshot state (round, markers, hold), the collection state and the
// partition's Paxos (ballots, slots, held payloads). Payloads and requests go through the codec;
// maps go in key order. heldKeys is not written: it indexes held and is rebuilt from it.
func (r *Replica) AppendCheckpoint(dst []byte, c protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	w.Uvarint(r.sc)
	w.IDs(r.log)
	for _, m := range []map[string]uint64{r.lastWrite, r.lastRead, r.abortedWrite, r.abortedRead} {
		keys := slices.Sorted(maps.Keys(m))
		w.Strings(keys)
		for _, k := range keys {
			w.Uvarint(m[k])
		}
	}
	appendPayloads(w, c, r.inbox)
	w.Bool(r.draining)
	w.Count("sdur pending", len(r.pending), wire.MaxCheckpointCount)
	for _, p := range r.pending {
		w.Message(c, p.t)
		w.Bool(p.global)
		w.Uvarint(p.rt)
		w.Varints([]int64{p.since, p.askedUs, p.queriedUs, p.finalUs, p.allVoteUs})
	}
	ids := slices.Sorted(maps.Keys(r.votes))
	w.IDs(ids)
	for _, id := range ids {
		intBools(w, r.votes[id])
	}
	ids = slices.Sorted(maps.Keys(r.seen))
	w.IDs(ids)
	for _, id := range ids {
		s := r.seen[id]
		w.Bools([]bool{s.delivered, s.abortRequested, s.completed, s.committed})
		w.Varint(int64(s.vote))
		w.Varint(s.submitUs)
	}
	w.Uvarint(r.dc)
	w.Varint(r.dcUs)
	globals(w, r.globals)
	tcc.CheckpointWaiting(w, &r.reads, func(w *wire.Writer, req protocol.Request) { w.Request(req, c) })
	tcc.CheckpointWaiting(w, &r.delayed, func(w *wire.Writer, t *Terminate) { w.Message(c, t) })
	w.Uvarint(r.snapM)
	w.Uvarints(r.snapS)
	w.Bool(r.round != nil)
	if r.round != nil {
		w.Uvarint(r.round.m)
		w.Uvarints(r.round.prev)
		for _, q := range wire.SortedKeys(w, "sdur reports", r.round.reports) {
			w.Int("sdur partition", q, maxPartitions)
			w.Message(c, r.round.reports[q])
		}
		w.Varint(r.round.startUs)
	}
	w.Varint(r.lastSnap)
	w.Bool(r.mark != nil)
	if mr := r.mark; mr != nil {
		w.Uvarint(mr.m)
		w.Int("sdur node", int(mr.coord), maxNodes)
		w.Uvarints(mr.prev)
		intBools(w, mr.got)
		w.Bool(mr.joined)
		w.Bool(mr.report != nil)
		if mr.report != nil {
			w.Message(c, mr.report)
		}
	}
	w.Uvarints([]uint64{r.holdM, r.beganM, r.resumedM})
	w.Varint(r.holdUs)
	w.Count("sdur held globals", len(r.heldGlobals), wire.MaxCheckpointCount)
	for _, t := range r.heldGlobals {
		w.Message(c, t)
	}
	w.Varint(r.stampUs)
	w.Varint(r.gcUs)
	ids = slices.Sorted(maps.Keys(r.voteUs))
	w.IDs(ids)
	for _, id := range ids {
		w.Varint(r.voteUs[id])
	}
	w.Uvarint(r.logBase)
	r.ab.checkpoint(w, c)
	return w.Finish()
}

// checkpoint appends the broadcast's state.
func (a *abcast) checkpoint(w *wire.Writer, c protocol.Codec) {
	w.Uvarint(a.promised)
	w.Bool(a.leading)
	w.Varint(a.lastUs)
	w.Varint(a.claimedUs)
	insts := slices.Sorted(maps.Keys(a.slots))
	w.Uvarints(insts)
	for _, i := range insts {
		s := a.slots[i]
		w.Uvarint(s.accBallot)
		appendPayloads(w, c, s.value)
		w.Bools([]bool{s.hasValue, s.decided})
		w.Uvarint(s.ackBallot)
		w.Uvarint(s.acks)
		w.Varint(s.sentUs)
		w.Varint(s.stampUs)
	}
	w.Uvarints([]uint64{a.next, a.delivered, a.decidedTo, a.floor})
	w.Count("sdur held", len(a.held), wire.MaxCheckpointCount)
	for _, h := range a.held {
		w.Message(c, h.p)
		w.Bool(h.proposed)
		w.Varint(h.sentUs)
		w.Bool(h.gone)
	}
	keys := slices.Sorted(maps.Keys(a.done))
	w.Strings(keys)
	for _, k := range keys {
		w.Varint(a.done[k])
	}
	w.Bool(a.batchDue)
	w.Bool(a.p1From != nil)
	if a.p1From != nil {
		intBools(w, a.p1From)
		for _, i := range wire.SortedKeys(w, "sdur p1 accepted", a.p1Acc) {
			acc := a.p1Acc[i]
			w.Uvarint(acc.Inst)
			w.Uvarint(acc.Ballot)
			w.Bool(acc.Decided)
			appendPayloads(w, c, acc.Value)
		}
	}
	w.Bool(a.delivering)
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, c protocol.Codec) error {
	rd := wire.NewReader(b)
	r.sc = rd.Uvarint("sdur sc")
	r.log = rd.IDs()
	for _, m := range []map[string]uint64{r.lastWrite, r.lastRead, r.abortedWrite, r.abortedRead} {
		for _, k := range rd.Strings() {
			m[k] = rd.Uvarint("sdur key sc")
		}
	}
	r.inbox = readPayloads(rd, c)
	r.draining = rd.Bool("sdur draining")
	for range rd.Count("sdur pending", wire.MaxCheckpointCount, 8) {
		p := &pendingTx{t: readTerminate(rd, c), global: rd.Bool("sdur global"), rt: rd.Uvarint("sdur rt")}
		if ts := rd.Varints(); len(ts) == 5 {
			p.since, p.askedUs, p.queriedUs, p.finalUs, p.allVoteUs = ts[0], ts[1], ts[2], ts[3], ts[4]
		} else {
			rd.Fail("sdur pending times", "%d times, want 5", len(ts))
		}
		r.pending = append(r.pending, p)
	}
	for _, id := range rd.IDs() {
		r.votes[id] = readIntBools(rd)
	}
	for _, id := range rd.IDs() {
		s := &seenTx{}
		if f := rd.Bools(); len(f) == 4 {
			s.delivered, s.abortRequested, s.completed, s.committed = f[0], f[1], f[2], f[3]
		} else {
			rd.Fail("sdur seen flags", "%d flags, want 4", len(f))
		}
		if v := rd.Varint("sdur vote"); v >= -1 && v <= 1 {
			s.vote = int8(v)
		} else {
			rd.Fail("sdur vote", "%d out of range", v)
		}
		s.submitUs = rd.Varint("sdur submit")
		r.seen[id] = s
	}
	r.dc, r.dcUs = rd.Uvarint("sdur dc"), rd.Varint("sdur dc time")
	r.globals = readGlobals(rd)
	tcc.RestoreWaiting(rd, &r.reads, func(rd *wire.Reader) protocol.Request { return rd.Request(c) })
	tcc.RestoreWaiting(rd, &r.delayed, func(rd *wire.Reader) *Terminate { return readTerminate(rd, c) })
	r.snapM = rd.Uvarint("sdur snapshot m")
	r.snapS = partsVector(rd, len(r.snapS))
	if rd.Bool("sdur round present") {
		r.round = &snapRound{m: rd.Uvarint("sdur round m"), prev: partsVector(rd, len(r.snapS)), reports: map[int]*Report{}}
		for range rd.Count("sdur reports", wire.MaxCheckpointCount, 2) {
			q := partIndex(rd, len(r.snapS))
			rep, _ := rd.Message(c).(*Report)
			if rep == nil {
				rd.Fail("sdur report", "not a report")
			}
			r.round.reports[q] = rep
		}
		r.round.startUs = rd.Varint("sdur round start")
	}
	r.lastSnap = rd.Varint("sdur last snapshot")
	if rd.Bool("sdur mark present") {
		mr := &markRound{m: rd.Uvarint("sdur mark m"), coord: protocol.NodeID(rd.Int("sdur node", r.nodes()-1)), prev: partsVector(rd, len(r.snapS)),
			got: readIntBools(rd), joined: rd.Bool("sdur mark joined")}
		if rd.Bool("sdur mark report present") {
			if mr.report, _ = rd.Message(c).(*Report); mr.report == nil {
				rd.Fail("sdur mark report", "not a report")
			}
		}
		r.mark = mr
	}
	if hs := rd.Uvarints(); len(hs) == 3 {
		r.holdM, r.beganM, r.resumedM = hs[0], hs[1], hs[2]
	} else {
		rd.Fail("sdur hold", "%d rounds, want 3", len(hs))
	}
	r.holdUs = rd.Varint("sdur hold time")
	for range rd.Count("sdur held globals", wire.MaxCheckpointCount, 2) {
		r.heldGlobals = append(r.heldGlobals, readTerminate(rd, c))
	}
	r.stampUs, r.gcUs = rd.Varint("sdur stamp"), rd.Varint("sdur gc")
	for _, id := range rd.IDs() {
		r.voteUs[id] = rd.Varint("sdur vote time")
	}
	r.logBase = rd.Uvarint("sdur log base")
	r.ab.restore(rd, c)
	return rd.Done()
}

// restore reads the broadcast's state written by checkpoint and rebuilds heldKeys from held.
func (a *abcast) restore(rd *wire.Reader, c protocol.Codec) {
	a.promised, a.leading = rd.Uvarint("sdur promised"), rd.Bool("sdur leading")
	a.lastUs, a.claimedUs = rd.Varint("sdur heard"), rd.Varint("sdur claimed")
	for _, i := range rd.Uvarints() {
		s := &slot{accBallot: rd.Uvarint("sdur accepted ballot"), value: readPayloads(rd, c)}
		if f := rd.Bools(); len(f) == 2 {
			s.hasValue, s.decided = f[0], f[1]
		} else {
			rd.Fail("sdur slot flags", "%d flags, want 2", len(f))
		}
		s.ackBallot, s.acks = rd.Uvarint("sdur ack ballot"), rd.Uvarint("sdur acks")
		s.sentUs, s.stampUs = rd.Varint("sdur slot sent"), rd.Varint("sdur slot stamp")
		a.slots[i] = s
	}
	if fs := rd.Uvarints(); len(fs) == 4 {
		a.next, a.delivered, a.decidedTo, a.floor = fs[0], fs[1], fs[2], fs[3]
	} else {
		rd.Fail("sdur frontiers", "%d frontiers, want 4", len(fs))
	}
	for range rd.Count("sdur held", wire.MaxCheckpointCount, 4) {
		h := &heldPayload{p: readPayload1(rd, c), proposed: rd.Bool("sdur proposed"), sentUs: rd.Varint("sdur held sent"), gone: rd.Bool("sdur gone")}
		if h.p == nil {
			continue
		}
		if !h.gone {
			if a.heldKeys[h.p.Key()] != nil {
				rd.Fail("sdur held", "payload %q held twice", h.p.Key())
			}
			a.heldKeys[h.p.Key()] = h
		}
		a.held = append(a.held, h)
	}
	for _, k := range rd.Strings() {
		a.done[k] = rd.Varint("sdur done stamp")
	}
	a.batchDue = rd.Bool("sdur batch due")
	if rd.Bool("sdur phase 1") {
		a.p1From, a.p1Acc = readIntBools(rd), map[uint64]Accepted{}
		for range rd.Count("sdur p1 accepted", wire.MaxCheckpointCount, 4) {
			acc := Accepted{Inst: rd.Uvarint("sdur p1 inst"), Ballot: rd.Uvarint("sdur p1 ballot"), Decided: rd.Bool("sdur p1 decided"), Value: readPayloads(rd, c)}
			a.p1Acc[acc.Inst] = acc
		}
	}
	a.delivering = rd.Bool("sdur delivering")
}

// appendPayloads appends a list of broadcast payloads through the codec, keeping nil apart from empty.
func appendPayloads(w *wire.Writer, c protocol.Codec, ps []Payload) {
	w.Bool(ps != nil)
	w.Count("sdur payloads", len(ps), wire.MaxCheckpointCount)
	for _, p := range ps {
		w.Message(c, p)
	}
}

func readPayloads(rd *wire.Reader, c protocol.Codec) []Payload {
	present := rd.Bool("sdur payloads present")
	n := rd.Count("sdur payloads", wire.MaxCheckpointCount, 1)
	if !present {
		if n != 0 {
			rd.Fail("sdur payloads", "absent list with %d payloads", n)
		}
		return nil
	}
	ps := make([]Payload, 0, n)
	for range n {
		if p := readPayload1(rd, c); p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// readPayload1 reads one payload written by Writer.Message; a message that is not a payload
// fails rd and gives nil.
func readPayload1(rd *wire.Reader, c protocol.Codec) Payload {
	m := rd.Message(c)
	if rd.Err() != nil {
		return nil
	}
	p, ok := m.(Payload)
	if !ok || p == nil {
		rd.Fail("sdur payload", "%T is not a payload", m)
		return nil
	}
	return p
}

// readTerminate reads a TERMINATE written by Writer.Message.
func readTerminate(rd *wire.Reader, c protocol.Codec) *Terminate {
	m := rd.Message(c)
	t, _ := m.(*Terminate)
	if t == nil && rd.Err() == nil {
		rd.Fail("sdur terminate", "%T is not a TERMINATE", m)
	}
	return t
}

// intBools appends an int → bool map (partitions or members) in key order.
func intBools(w *wire.Writer, m map[int]bool) {
	ks := slices.SortedFunc(maps.Keys(m), cmp.Compare[int])
	w.Count("sdur flags", len(ks), wire.MaxCheckpointCount)
	for _, k := range ks {
		w.Int("sdur flag key", k, maxPartitions)
		w.Bool(m[k])
	}
}

func readIntBools(rd *wire.Reader) map[int]bool {
	m := map[int]bool{}
	for range rd.Count("sdur flags", wire.MaxCheckpointCount, 2) {
		k := rd.Int("sdur flag key", maxPartitions)
		m[k] = rd.Bool("sdur flag")
	}
	return m
}

func globals(w *wire.Writer, gs []GlobalCommit) {
	w.Count("sdur globals", len(gs), wire.MaxCheckpointCount)
	for _, g := range gs {
		w.ID(g.Tx)
		w.Uvarint(g.SC)
		w.Count("sdur global parts", len(g.Parts), wire.MaxCheckpointCount)
		for _, q := range g.Parts {
			w.Int("sdur global part", q, maxPartitions)
		}
	}
}

func readGlobals(rd *wire.Reader) []GlobalCommit {
	var gs []GlobalCommit
	for range rd.Count("sdur globals", wire.MaxCheckpointCount, 3) {
		g := GlobalCommit{Tx: rd.ID("sdur global"), SC: rd.Uvarint("sdur global sc")}
		for range rd.Count("sdur global parts", maxPartitions, 1) {
			g.Parts = append(g.Parts, rd.Int("sdur global part", maxPartitions))
		}
		gs = append(gs, g)
	}
	return gs
}

// partsVector reads a per-partition vector, which must have n entries.
func partsVector(rd *wire.Reader, n int) []uint64 {
	v := rd.Uvarints()
	if len(v) != n && rd.Err() == nil {
		rd.Fail("sdur vector", "%d entries, want %d", len(v), n)
		return make([]uint64, n)
	}
	return v
}

// partIndex reads a partition index below n.
func partIndex(rd *wire.Reader, n int) int {
	q := rd.Int("sdur partition", maxPartitions)
	if q >= n {
		rd.Fail("sdur partition", "%d of %d", q, n)
	}
	return q
}

// nodes is how many servers the deployment has.
func (r *Replica) nodes() int {
	n := 0
	for _, ns := range r.pl.Node {
		n += len(ns)
	}
	return n
}

var _ protocol.Checkpointer = (*Replica)(nil)
