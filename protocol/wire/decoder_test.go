package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestUvarintCanonical(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1 << 32, math.MaxUint64} {
		b := binary.AppendUvarint(nil, v)
		d := NewDecoder(b)
		got, err := d.Uvarint("x")
		if err != nil || got != v || d.Done() != nil {
			t.Errorf("Uvarint(%x) = %d, %v; want %d", b, got, err, v)
		}
	}
	for name, b := range map[string][]byte{
		"empty":     {},
		"truncated": {0x80},
		"over-long": {0x80, 0x00},
		"long one":  {0x81, 0x80, 0x00},
		"overflow":  {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		"eleven":    {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		if v, err := NewDecoder(b).Uvarint("x"); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s %x: got %d, %v; want ErrMalformed", name, b, v, err)
		}
	}
}

func TestVarint(t *testing.T) {
	for _, v := range []int64{0, -1, 1, -64, 64, math.MinInt64, math.MaxInt64} {
		d := NewDecoder(binary.AppendVarint(nil, v))
		if got, err := d.Varint("x"); err != nil || got != v {
			t.Errorf("Varint: got %d, %v; want %d", got, err, v)
		}
	}
}

func TestDecoderLimits(t *testing.T) {
	d := NewDecoder([]byte{5, 'a', 'b'})
	if _, err := d.String("x", 10); !errors.Is(err, ErrMalformed) {
		t.Errorf("string longer than the input: %v", err)
	}
	d = NewDecoder([]byte{5, 'a', 'b', 'c', 'd', 'e'})
	if _, err := d.String("x", 4); !errors.Is(err, ErrMalformed) {
		t.Errorf("string over its limit: %v", err)
	}
	d = NewDecoder([]byte{3, 0, 0})
	if _, err := d.Count("x", 10, 1); !errors.Is(err, ErrMalformed) {
		t.Errorf("count 3 of 1-byte elements in 2 bytes: %v", err)
	}
	d = NewDecoder([]byte{11})
	if _, err := d.Count("x", 10, 0); !errors.Is(err, ErrMalformed) {
		t.Errorf("count over its limit: %v", err)
	}
	d = NewDecoder(binary.AppendUvarint(nil, math.MaxUint32+1))
	if _, err := d.Uint32("x"); !errors.Is(err, ErrMalformed) {
		t.Errorf("Uint32 overflow: %v", err)
	}
	d = NewDecoder([]byte{2})
	if _, err := d.Bool("x"); !errors.Is(err, ErrMalformed) {
		t.Errorf("boolean 2: %v", err)
	}
	d = NewDecoder(nil)
	if _, err := d.Byte("x"); !errors.Is(err, ErrMalformed) {
		t.Errorf("byte of nothing: %v", err)
	}
	var zero Decoder
	if err := zero.Done(); err != nil {
		t.Errorf("zero Decoder: %v", err)
	}
}

func TestBytesCopyAndRest(t *testing.T) {
	in := []byte{2, 'h', 'i', 0, 7, 8}
	d := NewDecoder(in)
	b, err := d.Bytes("x", 10)
	if err != nil || string(b) != "hi" {
		t.Fatalf("Bytes = %q, %v", b, err)
	}
	in[1] = 'X'
	if string(b) != "hi" {
		t.Errorf("Bytes aliases its input")
	}
	if b, err := d.Bytes("x", 10); err != nil || b != nil {
		t.Errorf("empty Bytes = %#v, %v; want nil", b, err)
	}
	if err := d.Done(); err == nil {
		t.Errorf("Done with 2 bytes left succeeded")
	}
	if rest := d.Rest(); string(rest) != "\x07\x08" || d.Done() != nil {
		t.Errorf("Rest = %x", rest)
	}
}
