package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is wrapped by every decoding error, so that a network layer can tell a peer that
// sent garbage (errors.Is(err, ErrMalformed)) from its own failures.
var ErrMalformed = errors.New("wire: malformed input")

// Decoder reads the primitives of the wire format from a byte slice, front to back. Every method
// takes what, the name of the field being read, checks bounds and limits, and returns an error
// wrapping ErrMalformed that names the field, the offset and the fault ("txn write key at offset
// 37: length 5000 exceeds the limit 1024"). No method panics. After an error the Decoder's
// position is unspecified and decoding should stop. The zero Decoder decodes an empty input.
type Decoder struct {
	b   []byte
	off int
}

// NewDecoder returns a Decoder reading b. The Decoder never modifies b; only Rest returns a
// slice aliasing it.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Reset makes d read b from the start, so that one Decoder can be reused without allocating.
func (d *Decoder) Reset(b []byte) { d.b, d.off = b, 0 }

// Offset returns how many bytes d has consumed.
func (d *Decoder) Offset() int { return d.off }

// Remaining returns how many bytes are left to decode.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// Rest consumes and returns everything not yet decoded, aliasing the input: for a record whose
// tail is a nested encoding decoded elsewhere.
func (d *Decoder) Rest() []byte {
	b := d.b[d.off:]
	d.off = len(d.b)
	return b
}

// Done checks that the whole input was consumed: trailing bytes are an error, since a
// well-formed encoding has none and ignoring them would let corrupt frames through.
func (d *Decoder) Done() error {
	if r := d.Remaining(); r != 0 {
		return d.Errorf("end of input", "%d trailing bytes", r)
	}
	return nil
}

// Errorf returns an error wrapping ErrMalformed that names what and the current offset, for
// codecs that find a semantically invalid value (an unknown tag, an out-of-range index).
func (d *Decoder) Errorf(what, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d: %s", ErrMalformed, what, d.off, fmt.Sprintf(format, args...))
}

// Uvarint reads an unsigned varint. Truncated, overflowing and over-long (non-minimal)
// encodings are errors, so that every value has exactly one encoding.
func (d *Decoder) Uvarint(what string) (uint64, error) {
	if d.off < len(d.b) && d.b[d.off] < 0x80 { // fast path: one byte
		v := uint64(d.b[d.off])
		d.off++
		return v, nil
	}
	v, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		return 0, d.Errorf(what, "truncated varint")
	case n < 0:
		return 0, d.Errorf(what, "varint overflows 64 bits")
	case d.b[d.off+n-1] == 0:
		return 0, d.Errorf(what, "over-long varint")
	}
	d.off += n
	return v, nil
}

// Varint reads a signed (zigzag) varint, as written by binary.AppendVarint.
func (d *Decoder) Varint(what string) (int64, error) {
	u, err := d.Uvarint(what)
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x, err
}

// Uint32 reads an unsigned varint that must fit in 32 bits.
func (d *Decoder) Uint32(what string) (uint32, error) {
	start := d.off
	v, err := d.Uvarint(what)
	if err == nil && v > math.MaxUint32 {
		d.off = start
		return 0, d.Errorf(what, "%d does not fit 32 bits", v)
	}
	return uint32(v), err
}

// Int reads an unsigned varint that must not exceed limit (an index or a small number).
func (d *Decoder) Int(what string, limit int) (int, error) {
	start := d.off
	v, err := d.Uvarint(what)
	if err != nil {
		return 0, err
	}
	if v > uint64(limit) {
		d.off = start
		return 0, d.Errorf(what, "%d exceeds the limit %d", v, limit)
	}
	return int(v), nil
}

// Count reads the length of a list whose elements take at least minElemBytes bytes each (at
// least 1 is assumed). It rejects a count above limit, or one the remaining input cannot hold,
// so that callers may allocate count elements without trusting the peer.
func (d *Decoder) Count(what string, limit, minElemBytes int) (int, error) {
	n, err := d.Int(what, limit)
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(max(minElemBytes, 1)) > uint64(d.Remaining()) {
		return 0, d.Errorf(what, "count %d cannot fit in the %d bytes left", n, d.Remaining())
	}
	return n, nil
}

// Byte reads one byte (a tag or a small enumeration).
func (d *Decoder) Byte(what string) (byte, error) {
	if d.off >= len(d.b) {
		return 0, d.Errorf(what, "truncated")
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

// Bool reads a boolean: one byte, 0 or 1.
func (d *Decoder) Bool(what string) (bool, error) {
	c, err := d.Byte(what)
	if err == nil && c > 1 {
		d.off--
		return false, d.Errorf(what, "boolean byte %#x", c)
	}
	return c == 1, err
}

// raw reads a length-prefixed byte string of at most limit bytes, aliasing the input.
func (d *Decoder) raw(what string, limit int) ([]byte, error) {
	start := d.off
	n, err := d.Uvarint(what)
	switch {
	case err != nil:
		return nil, err
	case n > uint64(limit):
		d.off = start
		return nil, d.Errorf(what, "length %d exceeds the limit %d", n, limit)
	case n > uint64(d.Remaining()):
		d.off = start
		return nil, d.Errorf(what, "length %d exceeds the %d bytes left", n, d.Remaining())
	}
	b := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return b, nil
}

// Bytes reads a length-prefixed byte string of at most limit bytes. It returns a copy (nil when
// empty), so that the result may outlive the input buffer without pinning it.
func (d *Decoder) Bytes(what string, limit int) ([]byte, error) {
	b, err := d.raw(what, limit)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// String reads a length-prefixed string of at most limit bytes. Strings are arbitrary bytes;
// they need not be valid UTF-8.
func (d *Decoder) String(what string, limit int) (string, error) {
	b, err := d.raw(what, limit)
	return string(b), err
}

// AppendBool appends a boolean as one byte, 0 or 1.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendBytes appends b with its uvarint length prefix, as Decoder.Bytes reads it.
func AppendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// AppendString appends s with its uvarint length prefix, as Decoder.String reads it.
func AppendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// checkLen returns an error when a field of n bytes (or elements) exceeds its limit, so that
// encoders never produce what decoders reject.
func checkLen(what string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("wire: cannot encode %s: %d exceeds the limit %d", what, n, limit)
	}
	return nil
}
