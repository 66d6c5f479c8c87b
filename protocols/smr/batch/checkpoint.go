package batch

import (
	"errors"
	"fmt"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// errInnerCheckpoints is the error of a checkpoint of a wrapper whose inner replica writes none
// (protocol.Checkpoints tells drivers not to ask).
var errInnerCheckpoints = errors.New("batch: the wrapped replica does not implement protocol.Checkpointer")

// AppendCheckpoint implements protocol.Checkpointer if the wrapped replica does
// (protocol.Checkpoints): the buffered messages per destination (in node order, through c, the
// wrapped codec, which encodes the inner protocol's messages), the flush-timer generations, then
// the inner replica's checkpoint.
func (r *Replica) AppendCheckpoint(dst []byte, c protocol.Codec) ([]byte, error) {
	inner, ok := r.inner.(protocol.Checkpointer)
	if !ok {
		return dst, errInnerCheckpoints
	}
	w := wire.NewWriter(dst)
	b := r.b
	for _, to := range wire.SortedKeys(w, "batch buffers", b.bufs) {
		buf := b.bufs[to]
		w.Uvarint(uint64(to))
		w.Count("batch messages", len(buf.msgs), MaxMessages)
		for _, m := range buf.msgs {
			w.Message(c, m)
		}
		w.Int("batch bytes", buf.bytes, wire.MaxCheckpointCount)
		w.Uvarint(buf.gen)
	}
	w.Uvarint(b.lastGen)
	for _, g := range wire.SortedKeys(w, "batch timers", b.armed) {
		w.Uvarint(g)
		w.Uvarint(uint64(b.armed[g]))
	}
	w.Append("batch inner", func(dst []byte) ([]byte, error) {
		return inner.AppendCheckpoint(dst, c)
	})
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer if the wrapped replica does.
func (r *Replica) RestoreCheckpoint(data []byte, c protocol.Codec) error {
	inner, ok := r.inner.(protocol.Checkpointer)
	if !ok {
		return errInnerCheckpoints
	}
	rd := wire.NewReader(data)
	b := r.b
	for range rd.Count("batch buffers", wire.MaxCheckpointCount, 4) {
		to := protocol.NodeID(rd.Int("batch destination", 1<<31-1))
		buf := &buffer{msgs: make([]protocol.Message, rd.Count("batch messages", MaxMessages, 1))}
		for i := range buf.msgs {
			buf.msgs[i] = rd.Message(c)
		}
		if len(buf.msgs) == 0 {
			buf.msgs = nil
		}
		buf.bytes = rd.Int("batch bytes", wire.MaxCheckpointCount)
		buf.gen = rd.Uvarint("batch generation")
		b.bufs[to] = buf
	}
	b.lastGen = rd.Uvarint("batch last generation")
	for range rd.Count("batch timers", wire.MaxCheckpointCount, 2) {
		g := rd.Uvarint("batch timer")
		b.armed[g] = protocol.NodeID(rd.Int("batch timer destination", 1<<31-1))
	}
	if err := rd.Err(); err != nil {
		return err
	}
	var err error
	rd.Decode(func(d *wire.Decoder) error {
		err = inner.RestoreCheckpoint(d.Rest(), c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("batch: inner replica: %w", err)
	}
	return nil
}
