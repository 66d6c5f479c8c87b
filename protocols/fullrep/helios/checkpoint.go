package helios

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the replicated log (records in the wire's
// entry encoding), PTPool in q order and EPTPool in transaction id order; the pool indexes are
// rebuilt from the pools.
func (r *Replica) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	r.log.Checkpoint(w, appendEntry)
	w.Count("helios ptpool", len(r.ptPool), wire.MaxCheckpointCount)
	for _, p := range r.ptPool {
		w.Txn(p.t)
		w.Varint(p.q)
		w.Uvarint(uint64(p.client))
		w.Uvarint(p.seq)
		w.Uvarint(p.nacks)
	}
	w.TxnsByID(r.eptPool)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	r.log.Restore(rd, decodeEntry)
	// A transaction takes at least 3 bytes (id, read and write counts).
	r.ptPool = make([]*pending, rd.Count("helios ptpool", wire.MaxCheckpointCount, 7))
	for i := range r.ptPool {
		p := &pending{t: rd.Txn(), q: rd.Varint("helios q"), client: txn.ClientID(rd.Uvarint("helios client")),
			seq: rd.Uvarint("helios seq"), nacks: rd.Uvarint("helios nacks")}
		r.ptPool[i] = p
		if p.t != nil {
			r.ptIndex.Add(p.t, r.env.Store().Keys())
		}
	}
	r.eptPool = rd.TxnsByID()
	for _, t := range r.eptPool {
		r.eptIndex.AddWrites(t, r.env.Store().Keys())
	}
	return rd.Done()
}
