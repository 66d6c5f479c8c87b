package batch

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// MaxMessageBytes bounds the encoding of one message inside a Batch on the wire.
const MaxMessageBytes = wire.MaxOpLen

// Encoding prefixes: every message of a wrapped codec starts with one of them.
const (
	prefixSingle byte = iota
	prefixBatch
)

// WrapCodec returns c extended with Batch: a message is a prefix byte, then either (single) the
// message as c encodes it, or (batch) a count of at least 2 and at most MaxMessages and each
// message as c encodes it, with a length prefix of at most MaxMessageBytes. Decode refuses
// batches of fewer than two messages (never sent) and anything c refuses.
func WrapCodec(c protocol.Codec) protocol.Codec { return codec{inner: c} }

type codec struct{ inner protocol.Codec }

func (c codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	b, ok := m.(*Batch)
	if !ok {
		out, err := c.inner.Append(append(dst, prefixSingle), m)
		if err != nil {
			return dst, err
		}
		return out, nil
	}
	if b == nil || len(b.Msgs) < 2 || len(b.Msgs) > MaxMessages {
		return dst, fmt.Errorf("batch: cannot encode a batch of %d messages (nil, or outside [2, %d])", batchLen(b), MaxMessages)
	}
	w := wire.NewWriter(append(dst, prefixBatch))
	w.Count("batch size", len(b.Msgs), MaxMessages)
	for _, x := range b.Msgs {
		if _, nested := x.(*Batch); nested {
			return dst, fmt.Errorf("batch: cannot encode a batch inside a batch")
		}
		enc, err := c.inner.Append(nil, x)
		if err != nil {
			return dst, err
		}
		w.Bytes("batched message", enc, MaxMessageBytes)
	}
	out, err := w.Finish()
	if err != nil {
		return dst, fmt.Errorf("batch: %w", err)
	}
	return out, nil
}

func batchLen(b *Batch) int {
	if b == nil {
		return 0
	}
	return len(b.Msgs)
}

func (c codec) Decode(b []byte) (protocol.Message, error) {
	d := wire.NewDecoder(b)
	prefix, err := d.Byte("batch prefix")
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	switch prefix {
	case prefixSingle:
		return c.inner.Decode(d.Rest())
	case prefixBatch:
	default:
		return nil, fmt.Errorf("batch: %w", d.Errorf("batch prefix", "unknown prefix %d", prefix))
	}
	n, err := d.Count("batch size", MaxMessages, 2)
	if err == nil && n < 2 {
		err = d.Errorf("batch size", "a batch of %d messages", n)
	}
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	msgs := make([]protocol.Message, n)
	for i := range msgs {
		enc, err := d.Bytes("batched message", MaxMessageBytes)
		if err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
		if msgs[i], err = c.inner.Decode(enc); err != nil {
			return nil, err
		}
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	return &Batch{Msgs: msgs}, nil
}
