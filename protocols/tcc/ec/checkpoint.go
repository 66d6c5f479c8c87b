package ec

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// AppendCheckpoint implements protocol.Checkpointer: per key, in key order, the current value
// with its stamp. The version order (every write received) is on the replica's Disk, not here.
func (r *Replica) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	for _, k := range wire.SortedKeys(w, "ec keys", r.data) {
		c := r.data[k]
		w.String("ec key", k, wire.MaxKeyLen)
		w.Bytes("ec value", c.value, wire.MaxValueLen)
		w.Varint(c.stamp.Time)
		w.ID(c.stamp.Writer)
	}
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	for range rd.Count("ec keys", wire.MaxCheckpointCount, 4) {
		k := rd.String("ec key", wire.MaxKeyLen)
		r.data[k] = cell{value: rd.Bytes("ec value", wire.MaxValueLen),
			stamp: tcc.Stamp{Time: rd.Varint("ec stamp time"), Writer: rd.ID("ec stamp writer")}}
	}
	return rd.Done()
}
