package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// Writer appends the fields of one encoding to a byte slice and remembers the first field that
// cannot be encoded (a negative count, a string over its limit, a shape the protocol never
// sends), so that a codec writes a message's fields in sequence and checks once, at Finish. It
// writes exactly what the Append functions of this package write, and applies the limits that
// Reader and Decoder apply, so that nothing Writer accepts is refused by the receiver.
//
// After an error Writer keeps appending (the bytes are discarded by Finish); only the first
// error is reported. The zero Writer appends to a nil slice.
type Writer struct {
	dst []byte // what the caller passed, returned unchanged on error
	b   []byte
	err error
}

// NewWriter returns a Writer appending to dst.
func NewWriter(dst []byte) *Writer { return &Writer{dst: dst, b: dst} }

// Finish returns the encoding (dst with every field appended) or, if a field could not be
// encoded, dst unchanged and the first error.
func (w *Writer) Finish() ([]byte, error) {
	if w.err != nil {
		return w.dst, w.err
	}
	return w.b, nil
}

// Err returns the first error, or nil.
func (w *Writer) Err() error { return w.err }

// Fail records an error naming what, unless one was recorded already: for a value that is
// within every limit but that the protocol never sends, so that the decoder refuses it.
func (w *Writer) Fail(what, format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("wire: cannot encode %s: %s", what, fmt.Sprintf(format, args...))
	}
}

// Byte appends one byte (a tag or a small enumeration).
func (w *Writer) Byte(v byte) { w.b = append(w.b, v) }

// Bool appends a boolean as one byte, 0 or 1.
func (w *Writer) Bool(v bool) { w.b = AppendBool(w.b, v) }

// Uvarint appends an unsigned varint.
func (w *Writer) Uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

// Varint appends a signed (zigzag) varint.
func (w *Writer) Varint(v int64) { w.b = binary.AppendVarint(w.b, v) }

// ID appends a transaction id as an unsigned varint.
func (w *Writer) ID(id txn.ID) { w.Uvarint(uint64(id)) }

// Int appends v as an unsigned varint; v must lie in [0, limit], as Reader.Int checks.
func (w *Writer) Int(what string, v, limit int) {
	if v < 0 || v > limit {
		w.Fail(what, "%d is out of range [0, %d]", v, limit)
	}
	w.Uvarint(uint64(v))
}

// Int63 appends v, which must not be negative, as an unsigned varint (a time or a sequence
// number), as Reader.Int63 reads it.
func (w *Writer) Int63(what string, v int64) {
	if v < 0 {
		w.Fail(what, "%d is out of range [0, %d]", v, int64(math.MaxInt64))
	}
	w.Uvarint(uint64(v))
}

// Count appends the length n of a list of at most limit elements, as Reader.Count reads it.
func (w *Writer) Count(what string, n, limit int) { w.Int(what, n, limit) }

// String appends s, of at most limit bytes, with its uvarint length prefix.
func (w *Writer) String(what, s string, limit int) {
	if len(s) > limit {
		w.Fail(what, "length %d exceeds the limit %d", len(s), limit)
	}
	w.b = AppendString(w.b, s)
}

// Bytes appends v, of at most limit bytes, with its uvarint length prefix.
func (w *Writer) Bytes(what string, v []byte, limit int) {
	if len(v) > limit {
		w.Fail(what, "length %d exceeds the limit %d", len(v), limit)
	}
	w.b = AppendBytes(w.b, v)
}

// Keys appends a list of at most MaxTxnOps keys of at most MaxKeyLen bytes each: the count,
// then each key with its length prefix.
func (w *Writer) Keys(keys []string) {
	w.Count("key count", len(keys), MaxTxnOps)
	for _, k := range keys {
		w.String("key", k, MaxKeyLen)
	}
}

// Writes appends a write set as AppendTxn does: the count (at most MaxTxnOps), then each key (at
// most MaxKeyLen bytes) and value (at most MaxValueLen bytes) with their length prefixes.
func (w *Writer) Writes(ws []txn.Write) {
	w.Count("write count", len(ws), MaxTxnOps)
	for _, x := range ws {
		w.String("write key", x.Key, MaxKeyLen)
		w.Bytes("write value", x.Value, MaxValueLen)
	}
}

// Txn appends t as AppendTxn does: its id, reads (key, version) and writes (key, value).
func (w *Writer) Txn(t *txn.Txn) {
	b, err := AppendTxn(w.b, t)
	if err != nil {
		w.Fail("transaction", "%v", err)
		return
	}
	w.b = b
}
