package batch

import (
	"fmt"
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// checkpointed is the batching wrapper of a protocol whose replica implements
// protocol.Checkpointer: it checkpoints the buffers too. Wrap returns it for such a protocol, and
// a plain *Replica for the others, so that a driver sees checkpoints supported exactly when they
// are.
type checkpointed struct {
	*Replica
}

// wrap returns the wrapper of inner with batcher b.
func wrap(inner protocol.Replica, b *batcher) protocol.Replica {
	r := &Replica{inner: inner, b: b}
	if _, ok := inner.(protocol.Checkpointer); ok {
		return checkpointed{r}
	}
	return r
}

// AppendCheckpoint implements protocol.Checkpointer: the buffered messages per destination (in
// node order, through c, the wrapped codec, which encodes the inner protocol's messages), the
// flush-timer generations, then the inner replica's checkpoint.
func (r checkpointed) AppendCheckpoint(dst []byte, c protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	b := r.b
	nodes := slices.Sorted(maps.Keys(b.bufs))
	w.Count("batch buffers", len(nodes), wire.MaxCheckpointCount)
	for _, to := range nodes {
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
	gens := slices.Sorted(maps.Keys(b.armed))
	w.Count("batch timers", len(gens), wire.MaxCheckpointCount)
	for _, g := range gens {
		w.Uvarint(g)
		w.Uvarint(uint64(b.armed[g]))
	}
	w.Append("batch inner", func(dst []byte) ([]byte, error) {
		return r.inner.(protocol.Checkpointer).AppendCheckpoint(dst, c)
	})
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r checkpointed) RestoreCheckpoint(data []byte, c protocol.Codec) error {
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
	var inner error
	rd.Decode(func(d *wire.Decoder) error {
		inner = r.inner.(protocol.Checkpointer).RestoreCheckpoint(d.Rest(), c)
		return nil
	})
	if inner != nil {
		return fmt.Errorf("batch: inner replica: %w", inner)
	}
	return nil
}
