package multipaxos

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the executor's state, the leader's open
// batch (instance batching), the ballot and role
// state, the candidate's promises, the leader's slots and peers, the log with its commit and
// trim points, the executed sequence numbers and the pending transactions; maps in key order.
func (r *Replica) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	r.exec.Checkpoint(w)
	r.batcher.Checkpoint(w)
	w.Uvarint(r.promised)
	w.Int("multipaxos preferred", r.preferred, r.n-1)
	w.Byte(byte(r.role))
	w.Varint(r.lastHeardUs)
	w.Int("multipaxos failed elections", r.failedElections, wire.MaxCheckpointCount)
	for _, v := range []int64{r.waitJitterUs, r.lastBeatUs, r.lastFetchUs, r.lastAckUs} {
		w.Varint(v)
	}
	w.Bools(r.promisedBy)
	w.Int("multipaxos promises", r.promises, wire.MaxCheckpointCount)
	w.Varint(r.prepareUs)
	w.Bool(r.best != nil)
	for _, s := range wire.SortedKeys(w, "multipaxos best", r.best) {
		e := r.best[s]
		w.Uvarint(s)
		w.Uvarint(e.Slot)
		w.Uvarint(e.Ballot)
		w.OptionalTxn(e.Txn)
	}
	w.Uvarint(r.nextSlot)
	w.Varints(r.heardUs)
	w.Uvarints(r.executedOf)
	w.Count("multipaxos queue", len(r.queue), wire.MaxCheckpointCount)
	for _, t := range r.queue {
		w.Txn(t)
	}
	for _, id := range wire.SortedKeys(w, "multipaxos inflight", r.inflight) {
		w.ID(id)
		w.Uvarint(r.inflight[id])
	}
	for _, s := range wire.SortedKeys(w, "multipaxos log", r.log) {
		e := r.log[s]
		w.Uvarint(s)
		w.Uvarint(e.ballot)
		w.OptionalTxn(e.txn)
		w.Bool(e.committed)
		w.Bools(e.acks)
		w.Int("multipaxos acks", e.nAcks, wire.MaxCheckpointCount)
		w.Varint(e.sentUs)
	}
	w.Uvarint(r.commitIdx)
	w.Uvarint(r.trimmed)
	w.ClientSeqs("multipaxos executed", r.executed)
	for _, id := range wire.SortedKeys(w, "multipaxos pending", r.pending) {
		p := r.pending[id]
		w.Txn(p.t)
		w.Varint(p.sentUs)
	}
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	r.exec.Restore(rd)
	r.batcher.Restore(rd)
	r.promised = rd.Uvarint("multipaxos promised")
	r.preferred = rd.Int("multipaxos preferred", r.n-1)
	if r.role = role(rd.Byte("multipaxos role")); r.role > leader {
		rd.Fail("multipaxos role", "unknown role %d", r.role)
	}
	r.lastHeardUs = rd.Varint("multipaxos last heard")
	r.failedElections = rd.Int("multipaxos failed elections", wire.MaxCheckpointCount)
	for _, v := range []*int64{&r.waitJitterUs, &r.lastBeatUs, &r.lastFetchUs, &r.lastAckUs} {
		*v = rd.Varint("multipaxos time")
	}
	r.promisedBy = rd.Bools()
	r.promises = rd.Int("multipaxos promises", wire.MaxCheckpointCount)
	r.prepareUs = rd.Varint("multipaxos prepare")
	hasBest := rd.Bool("multipaxos best present")
	best := map[uint64]Entry{}
	for range rd.Count("multipaxos best", wire.MaxCheckpointCount, 4) {
		s := rd.Uvarint("multipaxos best slot")
		best[s] = Entry{Slot: rd.Uvarint("multipaxos entry slot"), Ballot: rd.Uvarint("multipaxos entry ballot"), Txn: rd.OptionalTxn()}
	}
	r.best = nil
	if hasBest {
		r.best = best
	}
	r.nextSlot = rd.Uvarint("multipaxos next slot")
	r.heardUs = rd.Varints()
	r.executedOf = rd.Uvarints()
	r.queue = make([]*txn.Txn, rd.Count("multipaxos queue", wire.MaxCheckpointCount, 3))
	for i := range r.queue {
		r.queue[i] = rd.Txn()
	}
	clear(r.inflight)
	for range rd.Count("multipaxos inflight", wire.MaxCheckpointCount, 2) {
		id := rd.ID("multipaxos inflight")
		r.inflight[id] = rd.Uvarint("multipaxos inflight slot")
	}
	clear(r.log)
	for range rd.Count("multipaxos log", wire.MaxCheckpointCount, 8) {
		s := rd.Uvarint("multipaxos slot")
		r.log[s] = &entry{ballot: rd.Uvarint("multipaxos ballot"), txn: rd.OptionalTxn(), committed: rd.Bool("multipaxos committed"),
			acks: rd.Bools(), nAcks: rd.Int("multipaxos acks", wire.MaxCheckpointCount), sentUs: rd.Varint("multipaxos sent")}
	}
	r.commitIdx = rd.Uvarint("multipaxos commit index")
	r.trimmed = rd.Uvarint("multipaxos trimmed")
	clear(r.executed)
	rd.ClientSeqs("multipaxos executed", r.executed)
	clear(r.pending)
	for range rd.Count("multipaxos pending", wire.MaxCheckpointCount, 4) {
		p := &pending{t: rd.Txn(), sentUs: rd.Varint("multipaxos pending sent")}
		if p.t != nil {
			r.pending[p.t.ID] = p
		}
	}
	return rd.Done()
}
