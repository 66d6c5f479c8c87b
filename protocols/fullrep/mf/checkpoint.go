package mf

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the replicated log (records in the wire's
// entry encoding), LPT, PT in request order and the remote pending records in id order; the
// pool indexes are rebuilt from the pools.
func (r *Replica) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	r.log.Checkpoint(w, appendEntry)
	w.Varint(r.lpt)
	w.Count("mf pt", len(r.pt), wire.MaxCheckpointCount)
	for _, p := range r.pt {
		w.Txn(p.t)
		w.Varint(p.lpt)
		w.Uvarint(uint64(p.client))
		w.Uvarint(p.seq)
		w.Int("mf fresh", p.fresh, wire.MaxCheckpointCount)
	}
	w.TxnsByID(r.remote)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	r.log.Restore(rd, decodeEntry)
	r.lpt = rd.Varint("mf lpt")
	r.pt = make([]*pending, rd.Count("mf pt", wire.MaxCheckpointCount, 7))
	for i := range r.pt {
		p := &pending{t: rd.Txn(), lpt: rd.Varint("mf lpt"), client: txn.ClientID(rd.Uvarint("mf client")),
			seq: rd.Uvarint("mf seq"), fresh: rd.Int("mf fresh", wire.MaxCheckpointCount)}
		r.pt[i] = p
		if p.t != nil {
			r.ptIndex.Add(p.t, r.env.Store().Keys())
		}
	}
	r.remote = rd.TxnsByID()
	for _, t := range r.remote {
		r.remoteIndex.AddWrites(t, r.env.Store().Keys())
	}
	return rd.Done()
}
