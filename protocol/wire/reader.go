package wire

import (
	"math"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// Reader reads the fields of one encoding with a Decoder and remembers the first error, so that
// a codec reads a message's fields in sequence (even inside a composite literal) and checks
// once, at Done. After the first error every read returns the zero value (0, false, "", nil)
// and consumes nothing, and later errors are not recorded. Like Decoder, Reader never panics
// and checks every length and count against its limit and the bytes left before allocating.
// The zero Reader reads an empty input.
type Reader struct {
	d   Decoder
	err error
}

// NewReader returns a Reader reading b. The Reader never modifies b, and nothing it returns
// aliases b.
func NewReader(b []byte) *Reader { return &Reader{d: Decoder{b: b}} }

// Err returns the first error, or nil. Every error wraps ErrMalformed.
func (r *Reader) Err() error { return r.err }

// Done returns the first error or, if there was none, an error when input is left over: a
// well-formed encoding has no trailing bytes.
func (r *Reader) Done() error {
	if r.err == nil {
		r.err = r.d.Done()
	}
	return r.err
}

// Fail records an error wrapping ErrMalformed that names what and the current offset, unless one
// was recorded already: for a value within every limit that the protocol never sends (an
// unknown tag, a field its message's shape leaves empty).
func (r *Reader) Fail(what, format string, args ...any) {
	if r.err == nil {
		r.err = r.d.Errorf(what, format, args...)
	}
}

// read returns f(what) unless an error was recorded before, recording f's error; after any
// error it returns the zero value.
func read[T any](r *Reader, what string, f func(string) (T, error)) T {
	var zero T
	if r.err != nil {
		return zero
	}
	v, err := f(what)
	if err != nil {
		r.err = err
		return zero
	}
	return v
}

// readLimited is read for a field with a limit.
func readLimited[T any](r *Reader, what string, limit int, f func(string, int) (T, error)) T {
	return read(r, what, func(what string) (T, error) { return f(what, limit) })
}

// Byte reads one byte (a tag or a small enumeration).
func (r *Reader) Byte(what string) byte { return read(r, what, r.d.Byte) }

// Bool reads a boolean: one byte, 0 or 1.
func (r *Reader) Bool(what string) bool { return read(r, what, r.d.Bool) }

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint(what string) uint64 { return read(r, what, r.d.Uvarint) }

// Varint reads a signed (zigzag) varint.
func (r *Reader) Varint(what string) int64 { return read(r, what, r.d.Varint) }

// ID reads a transaction id written by Writer.ID.
func (r *Reader) ID(what string) txn.ID { return txn.ID(r.Uvarint(what)) }

// Int reads an unsigned varint that must not exceed limit.
func (r *Reader) Int(what string, limit int) int { return readLimited(r, what, limit, r.d.Int) }

// Int63 reads an unsigned varint that must not exceed math.MaxInt64, as Writer.Int63 writes it.
func (r *Reader) Int63(what string) int64 {
	start := r.d.off
	v := r.Uvarint(what)
	if v > math.MaxInt64 {
		r.d.off = start
		r.Fail(what, "%d exceeds the limit %d", v, int64(math.MaxInt64))
		return 0
	}
	return int64(v)
}

// Count reads the length of a list of at most limit elements taking at least minElemBytes bytes
// each (at least 1 is assumed), refusing a count the remaining input cannot hold, so that the
// caller may allocate count elements without trusting the peer.
func (r *Reader) Count(what string, limit, minElemBytes int) int {
	return readLimited(r, what, limit, func(what string, limit int) (int, error) {
		return r.d.Count(what, limit, minElemBytes)
	})
}

// String reads a length-prefixed string of at most limit bytes.
func (r *Reader) String(what string, limit int) string {
	return readLimited(r, what, limit, r.d.String)
}

// Bytes reads a length-prefixed byte string of at most limit bytes, as a copy; empty is nil.
func (r *Reader) Bytes(what string, limit int) []byte {
	return readLimited(r, what, limit, r.d.Bytes)
}

// Keys reads a list written by Writer.Keys; an empty list is nil.
func (r *Reader) Keys() []string { return r.keyList("key count", MaxTxnOps) }

// Writes reads a write set written by Writer.Writes; an empty set and empty values are nil.
func (r *Reader) Writes() []txn.Write {
	// A write takes at least 2 bytes: an empty key and an empty value.
	n := r.Count("write count", MaxTxnOps, 2)
	if n == 0 {
		return nil
	}
	ws := make([]txn.Write, n)
	for i := range ws {
		ws[i] = txn.Write{Key: r.String("write key", MaxKeyLen), Value: r.Bytes("write value", MaxValueLen)}
	}
	return ws
}

// Txn reads a transaction written by Writer.Txn (AppendTxn).
func (r *Reader) Txn() *txn.Txn {
	return read(r, "transaction", func(string) (*txn.Txn, error) { return DecodeTxn(&r.d) })
}
