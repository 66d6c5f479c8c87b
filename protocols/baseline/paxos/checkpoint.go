package paxos

import (
	"github.com/meridian-kv/meridian/protocol"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the ballot round, the acceptor state of the
// undecided positions, the applied log kept and its base, the peers' applied positions, the
// chosen values not yet applied, the outcomes, the queue, the proposal in flight and its
// generation. Maps go in key order; the self-addressed queue is empty between inputs.
func (r *Replica) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	if len(r.selfQ) > 0 {
		w.Fail("paxos self queue", "%d messages to itself are still undelivered", len(r.selfQ))
	}
	w.Uvarint(r.round)
	for _, pos := range wire.SortedKeys(w, "paxos acceptors", r.acc) {
		a := r.acc[pos]
		w.Uvarint(pos)
		w.Uvarint(a.promised)
		w.Uvarint(a.accBallot)
		value(w, a.value)
	}
	w.Count("paxos log", len(r.log), wire.MaxCheckpointCount)
	for _, v := range r.log {
		value(w, v)
	}
	w.Uvarint(r.base)
	w.Count("paxos peers", len(r.peerApplied), wire.MaxCheckpointCount)
	for _, a := range r.peerApplied {
		w.Uvarint(a)
	}
	for _, pos := range wire.SortedKeys(w, "paxos chosen", r.chosen) {
		w.Uvarint(pos)
		value(w, r.chosen[pos])
	}
	for _, id := range wire.SortedKeys(w, "paxos outcomes", r.outcome) {
		w.ID(id)
		w.Bool(r.outcome[id])
	}
	pendings(w, r.queue)
	w.Bool(r.cur != nil)
	if p := r.cur; p != nil {
		w.Uvarint(p.pos)
		w.Uvarint(p.ballot)
		w.Int("paxos phase", p.phase, 2)
		pendings(w, p.members)
		value(w, p.free)
		value(w, p.value)
		w.Uvarint(p.votes)
		w.Uvarint(p.best)
		value(w, p.bestVal)
		w.Int("paxos attempts", p.attempts, wire.MaxCheckpointCount)
	}
	w.Int("paxos generation", r.gen, wire.MaxCheckpointCount)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	r.round = rd.Uvarint("paxos round")
	for range rd.Count("paxos acceptors", wire.MaxCheckpointCount, 4) {
		pos := rd.Uvarint("paxos position")
		r.acc[pos] = &acceptor{promised: rd.Uvarint("paxos promised"), accBallot: rd.Uvarint("paxos accepted ballot"), value: readValue(rd)}
	}
	r.log = make([][]*txn.Txn, rd.Count("paxos log", wire.MaxCheckpointCount, 1))
	for i := range r.log {
		r.log[i] = readValue(rd)
	}
	r.base = rd.Uvarint("paxos base")
	if n := rd.Count("paxos peers", wire.MaxCheckpointCount, 1); rd.Err() == nil && n != len(r.peerApplied) {
		rd.Fail("paxos peers", "%d peers, want %d", n, len(r.peerApplied))
	}
	for i := range r.peerApplied {
		r.peerApplied[i] = rd.Uvarint("paxos peer applied")
	}
	for range rd.Count("paxos chosen", wire.MaxCheckpointCount, 2) {
		pos := rd.Uvarint("paxos chosen position")
		r.chosen[pos] = readValue(rd)
	}
	for range rd.Count("paxos outcomes", wire.MaxCheckpointCount, 2) {
		id := rd.ID("paxos outcome")
		r.outcome[id] = rd.Bool("paxos installed")
	}
	r.queue = readPendings(rd)
	if rd.Bool("paxos proposal") {
		r.cur = &proposal{pos: rd.Uvarint("paxos proposal position"), ballot: rd.Uvarint("paxos proposal ballot"),
			phase: rd.Int("paxos phase", 2), members: readPendings(rd), free: readValue(rd), value: readValue(rd),
			votes: rd.Uvarint("paxos votes"), best: rd.Uvarint("paxos best"), bestVal: readValue(rd),
			attempts: rd.Int("paxos attempts", wire.MaxCheckpointCount)}
	}
	r.gen = rd.Int("paxos generation", wire.MaxCheckpointCount)
	return rd.Done()
}

// value appends a log value, telling nil from empty.
func value(w *wire.Writer, v []*txn.Txn) {
	w.Bool(v != nil)
	w.Count("paxos value", len(v), wire.MaxCheckpointCount)
	for _, t := range v {
		w.Txn(t)
	}
}

func readValue(rd *wire.Reader) []*txn.Txn {
	present := rd.Bool("paxos value present")
	v := make([]*txn.Txn, rd.Count("paxos value", wire.MaxCheckpointCount, 3))
	for i := range v {
		v[i] = rd.Txn()
	}
	if !present {
		return nil
	}
	return v
}

func pendings(w *wire.Writer, ps []*pending) {
	w.Count("paxos pending", len(ps), wire.MaxCheckpointCount)
	for _, p := range ps {
		w.Txn(p.t)
		w.Uvarint(uint64(p.client))
		w.Uvarint(p.seq)
		w.Int("paxos promotions", p.promotions, wire.MaxCheckpointCount)
	}
}

func readPendings(rd *wire.Reader) []*pending {
	ps := make([]*pending, rd.Count("paxos pending", wire.MaxCheckpointCount, 6))
	for i := range ps {
		ps[i] = &pending{t: rd.Txn(), client: txn.ClientID(rd.Uvarint("paxos client")), seq: rd.Uvarint("paxos seq"),
			promotions: rd.Int("paxos promotions", wire.MaxCheckpointCount)}
	}
	return ps
}
