package ec

import (
	"github.com/meridian-kv/meridian/protocol"

	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// AppendCheckpoint implements protocol.Checkpointer: per key, in key order, every write received
// (its stamps, the version order) and the current value with its stamp.
func (r *Replica) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	for _, k := range wire.SortedKeys(w, "ec keys", r.order) {
		w.String("ec key", k, wire.MaxKeyLen)
		o := r.order[k]
		w.Count("ec writes", len(o), wire.MaxCheckpointCount)
		for _, s := range o {
			w.Varint(s.Time)
			w.ID(s.Writer)
		}
		c, ok := r.data[k]
		w.Bool(ok)
		if ok {
			w.Bytes("ec value", c.value, wire.MaxValueLen)
			w.Varint(c.stamp.Time)
			w.ID(c.stamp.Writer)
		}
	}
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	for range rd.Count("ec keys", wire.MaxCheckpointCount, 3) {
		k := rd.String("ec key", wire.MaxKeyLen)
		o := make([]tcc.Stamp, rd.Count("ec writes", wire.MaxCheckpointCount, 2))
		for i := range o {
			o[i] = tcc.Stamp{Time: rd.Varint("ec stamp time"), Writer: rd.ID("ec stamp writer")}
		}
		r.order[k] = o
		if rd.Bool("ec has value") {
			r.data[k] = cell{value: rd.Bytes("ec value", wire.MaxValueLen),
				stamp: tcc.Stamp{Time: rd.Varint("ec stamp time"), Writer: rd.ID("ec stamp writer")}}
		}
	}
	return rd.Done()
}
