package rc

import (
	"github.com/meridian-kv/meridian/protocol"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the participant state (lock table,
// participants, version counts, decisions, waiting decisions, records to forget) and the
// coordinator state (reads, doomed transactions, coordinated transactions, outcomes), every map
// in key order. Messages kept (decisions, best read replies) go through the codec. The inbox is
// empty between inputs.
func (r *Replica) AppendCheckpoint(dst []byte, codec protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	if len(r.inbox) > 0 {
		w.Fail("rc inbox", "%d messages to itself are still undelivered", len(r.inbox))
	}
	for _, k := range wire.SortedKeys(w, "rc locks", r.locks) {
		l := r.locks[k]
		w.String("rc lock key", k, wire.MaxKeyLen)
		w.ID(l.x)
		w.IDs(l.s)
	}
	for _, id := range wire.SortedKeys(w, "rc participants", r.parts) {
		p := r.parts[id]
		w.ID(id)
		w.Keys(p.sKeys)
		w.Keys(p.xKeys)
		w.Byte(byte(p.vote))
		w.Uvarints(p.counts)
		w.Varint(p.leaseUs)
	}
	for _, k := range wire.SortedKeys(w, "rc counts", r.count) {
		w.String("rc count key", k, wire.MaxKeyLen)
		w.Uvarint(r.count[k])
	}
	for _, id := range wire.SortedKeys(w, "rc decided", r.decided) {
		w.ID(id)
		w.Bool(r.decided[id])
	}
	w.Count("rc waiting", len(r.waiting), wire.MaxCheckpointCount)
	for _, d := range r.waiting {
		w.Message(codec, d)
	}
	records(w, r.done)
	w.Uvarint(r.nextRead)
	for _, id := range wire.SortedKeys(w, "rc reads", r.reads) {
		p := r.reads[id]
		w.Uvarint(id)
		w.ID(p.txn)
		w.Uvarint(uint64(p.client))
		w.Uvarint(p.seq)
		w.Bools(p.answered)
		w.Int("rc grants", p.grants, wire.MaxCheckpointCount)
		w.Int("rc denials", p.denials, wire.MaxCheckpointCount)
		w.Bool(p.best != nil)
		if p.best != nil {
			w.Message(codec, p.best)
		}
		w.Varint(p.deadlineUs)
	}
	for _, id := range wire.SortedKeys(w, "rc doomed", r.doomed) {
		w.ID(id)
		w.String("rc reason", string(r.doomed[id]), wire.MaxTextLen)
	}
	for _, id := range wire.SortedKeys(w, "rc coordinated", r.coords) {
		c := r.coords[id]
		w.Txn(c.t)
		w.Uvarint(uint64(c.client))
		w.Uvarint(c.seq)
		w.Varint(c.deadlineUs)
		w.Count("rc votes", len(c.votes), wire.MaxCheckpointCount)
		for _, v := range c.votes {
			w.Byte(byte(v))
		}
		w.Int("rc accepts", c.accepts, wire.MaxCheckpointCount)
		w.Int("rc rejects", c.rejects, wire.MaxCheckpointCount)
		w.Uvarints(c.maxCounts)
		w.Bool(c.decision != nil)
		if c.decision != nil {
			w.Message(codec, c.decision)
		}
		w.Bools(c.acked)
		w.Int("rc unacked", c.unacked, wire.MaxCheckpointCount)
		w.Varint(c.resendUs)
	}
	for _, id := range wire.SortedKeys(w, "rc outcomes", r.outcomes) {
		w.ID(id)
		w.Reply(r.outcomes[id])
	}
	records(w, r.acked)
	w.ClientSeqs("rc forgot", r.forgot)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, codec protocol.Codec) error {
	rd := wire.NewReader(b)
	for range rd.Count("rc locks", wire.MaxCheckpointCount, 3) {
		k := rd.String("rc lock key", wire.MaxKeyLen)
		r.locks[k] = &lock{x: rd.ID("rc lock holder"), s: rd.IDs()}
	}
	for range rd.Count("rc participants", wire.MaxCheckpointCount, 6) {
		id := rd.ID("rc participant")
		r.parts[id] = &participant{sKeys: rd.Keys(), xKeys: rd.Keys(), vote: int8(rd.Byte("rc vote")),
			counts: rd.Uvarints(), leaseUs: rd.Varint("rc lease")}
	}
	for range rd.Count("rc counts", wire.MaxCheckpointCount, 2) {
		k := rd.String("rc count key", wire.MaxKeyLen)
		r.count[k] = rd.Uvarint("rc count")
	}
	for range rd.Count("rc decided", wire.MaxCheckpointCount, 2) {
		id := rd.ID("rc decided")
		r.decided[id] = rd.Bool("rc decided outcome")
	}
	r.waiting = make([]*Decision, rd.Count("rc waiting", wire.MaxCheckpointCount, 1))
	for i := range r.waiting {
		r.waiting[i] = decision(rd, codec)
	}
	r.done = readRecords(rd)
	r.nextRead = rd.Uvarint("rc next read")
	for range rd.Count("rc reads", wire.MaxCheckpointCount, 9) {
		id := rd.Uvarint("rc read")
		p := &pendingRead{txn: rd.ID("rc read txn"), client: txn.ClientID(rd.Uvarint("rc read client")), seq: rd.Uvarint("rc read seq"),
			answered: rd.Bools(), grants: rd.Int("rc grants", wire.MaxCheckpointCount), denials: rd.Int("rc denials", wire.MaxCheckpointCount)}
		if rd.Bool("rc best") {
			p.best, _ = rd.Message(codec).(*ReadReply)
			if p.best == nil {
				rd.Fail("rc best", "not a read reply")
			}
		}
		p.deadlineUs = rd.Varint("rc read deadline")
		r.reads[id] = p
	}
	for range rd.Count("rc doomed", wire.MaxCheckpointCount, 2) {
		id := rd.ID("rc doomed")
		r.doomed[id] = txn.AbortReason(rd.String("rc reason", wire.MaxTextLen))
	}
	for range rd.Count("rc coordinated", wire.MaxCheckpointCount, 13) {
		c := &coordinated{t: rd.Txn(), client: txn.ClientID(rd.Uvarint("rc client")), seq: rd.Uvarint("rc seq"),
			deadlineUs: rd.Varint("rc deadline")}
		c.votes = make([]int8, rd.Count("rc votes", wire.MaxCheckpointCount, 1))
		for i := range c.votes {
			c.votes[i] = int8(rd.Byte("rc vote"))
		}
		c.accepts, c.rejects = rd.Int("rc accepts", wire.MaxCheckpointCount), rd.Int("rc rejects", wire.MaxCheckpointCount)
		c.maxCounts = rd.Uvarints()
		if rd.Bool("rc decision") {
			c.decision = decision(rd, codec)
		}
		c.acked, c.unacked, c.resendUs = rd.Bools(), rd.Int("rc unacked", wire.MaxCheckpointCount), rd.Varint("rc resend")
		if c.t != nil {
			r.coords[c.t.ID] = c
		}
	}
	for range rd.Count("rc outcomes", wire.MaxCheckpointCount, 2) {
		id := rd.ID("rc outcome")
		r.outcomes[id] = rd.Reply()
	}
	r.acked = readRecords(rd)
	rd.ClientSeqs("rc forgot", r.forgot)
	return rd.Done()
}

func decision(rd *wire.Reader, codec protocol.Codec) *Decision {
	d, _ := rd.Message(codec).(*Decision)
	if d == nil {
		rd.Fail("rc decision", "not a decision")
	}
	return d
}

func records(w *wire.Writer, s []record) {
	w.Count("rc records", len(s), wire.MaxCheckpointCount)
	for _, rec := range s {
		w.ID(rec.id)
		w.Varint(rec.atUs)
	}
}

func readRecords(rd *wire.Reader) []record {
	s := make([]record, rd.Count("rc records", wire.MaxCheckpointCount, 2))
	for i := range s {
		s[i] = record{id: rd.ID("rc record"), atUs: rd.Varint("rc record time")}
	}
	return s
}
