package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// writeAll writes one field of every kind.
func writeAll(w *Writer) {
	w.Byte(7)
	w.Bool(true)
	w.Uvarint(300)
	w.Varint(-5)
	w.ID(txn.NewID(3, 9))
	w.Int("index", 12, 12)
	w.Int63("time", math.MaxInt64)
	w.Count("list", 2, 2)
	w.String("name", "héllo", 8)
	w.Bytes("value", []byte{0, 1}, 2)
	w.Keys([]string{"a", ""})
	w.Writes([]txn.Write{{Key: "k", Value: []byte("v")}, {Key: "e"}})
}

// TestWriterMatchesAppend checks that Writer writes exactly the package's primitive encodings,
// and a write set exactly as AppendTxn does.
func TestWriterMatchesAppend(t *testing.T) {
	want := []byte{0xee, 7, 1}
	want = binary.AppendUvarint(want, 300)
	want = binary.AppendVarint(want, -5)
	want = binary.AppendUvarint(want, uint64(txn.NewID(3, 9)))
	want = binary.AppendUvarint(want, 12)
	want = binary.AppendUvarint(want, math.MaxInt64)
	want = binary.AppendUvarint(want, 2)
	want = AppendString(want, "héllo")
	want = AppendBytes(want, []byte{0, 1})
	want = AppendString(AppendString(append(want, 2), "a"), "")
	tx, err := AppendTxn(nil, &txn.Txn{Writes: []txn.Write{{Key: "k", Value: []byte("v")}, {Key: "e"}}})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, tx[2:]...) // AppendTxn's id and empty read set are 0, 0
	w := NewWriter([]byte{0xee})
	writeAll(w)
	got, err := w.Finish()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Writer wrote %x, %v; want %x", got, err, want)
	}
}

// TestReaderRoundTrip reads back every kind of field that Writer wrote.
func TestReaderRoundTrip(t *testing.T) {
	w := NewWriter(nil)
	writeAll(w)
	b, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(b)
	got := []any{
		r.Byte("byte"), r.Bool("bool"), r.Uvarint("uvarint"), r.Varint("varint"), r.ID("id"),
		r.Int("index", 12), r.Int63("time"), r.Count("list", 2, 1), r.String("name", 8),
		r.Bytes("value", 2), r.Keys(), r.Writes(),
	}
	want := []any{
		byte(7), true, uint64(300), int64(-5), txn.NewID(3, 9), 12, int64(math.MaxInt64), 2, "héllo",
		[]byte{0, 1}, []string{"a", ""}, []txn.Write{{Key: "k", Value: []byte("v")}, {Key: "e"}},
	}
	if err := r.Done(); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read %#v, %v; want %#v", got, err, want)
	}
	// Empty lists and byte strings decode as nil.
	r = NewReader([]byte{0, 0, 0})
	if k, ws, v := r.Keys(), r.Writes(), r.Bytes("value", 1); k != nil || ws != nil || v != nil || r.Done() != nil {
		t.Errorf("empty fields read as %#v, %#v, %#v, %v", k, ws, v, r.Err())
	}
	var zero Reader
	if err := zero.Done(); err != nil {
		t.Errorf("zero Reader: %v", err)
	}
}

// TestReaderFirstErrorSticks checks that the first error is kept, that every later read returns
// the zero value without consuming input, and that Done and Fail report the first error.
func TestReaderFirstErrorSticks(t *testing.T) {
	// A boolean byte 2, then fields that would decode on their own.
	b := AppendString(binary.AppendUvarint([]byte{9, 2}, 5), "abc")
	b = append(b, 1, 1, 'k', 0)
	r := NewReader(b)
	if v := r.Byte("tag"); v != 9 || r.Err() != nil {
		t.Fatalf("Byte = %d, %v", v, r.Err())
	}
	if v := r.Bool("flag"); v || !errors.Is(r.Err(), ErrMalformed) || !strings.Contains(r.Err().Error(), "flag") {
		t.Fatalf("Bool of 2 = %v, %v", v, r.Err())
	}
	first, off := r.Err(), r.d.Offset()
	got := []any{
		r.Byte("byte"), r.Bool("bool"), r.Uvarint("uvarint"), r.Varint("varint"), r.ID("id"),
		r.Int("int", 10), r.Int63("int63"), r.Count("count", 10, 1), r.String("string", 10),
		r.Bytes("bytes", 10), r.Keys(), r.Writes(),
	}
	want := []any{
		byte(0), false, uint64(0), int64(0), txn.ID(0), 0, int64(0), 0, "", []byte(nil), []string(nil), []txn.Write(nil),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reads after an error returned %#v, want zero values", got)
	}
	r.Fail("later", "a second error")
	if r.Err() != first || r.Done() != first || r.d.Offset() != off {
		t.Errorf("after more reads: error %v, offset %d; want %v, %d", r.Err(), r.d.Offset(), first, off)
	}
}

// TestReaderRefuses checks every field's own refusals: over-long and truncated varints, values
// over their limits, bad booleans, trailing bytes and Fail.
func TestReaderRefuses(t *testing.T) {
	for name, read := range map[string]func(*Reader){
		"truncated uvarint":  func(r *Reader) { r.Uvarint("x") },
		"over-long varint":   func(r *Reader) { r.Varint("x") },
		"int over limit":     func(r *Reader) { r.Int("x", 1) },
		"int63 over limit":   func(r *Reader) { r.Int63("x") },
		"count over limit":   func(r *Reader) { r.Count("x", 1, 1) },
		"string over limit":  func(r *Reader) { r.String("x", 1) },
		"bytes over limit":   func(r *Reader) { r.Bytes("x", 1) },
		"key over MaxKeyLen": func(r *Reader) { r.Keys() },
		"bool 2":             func(r *Reader) { r.Bool("x") },
		"trailing bytes":     func(r *Reader) { r.Byte("x") },
		"fail":               func(r *Reader) { r.Fail("x", "refused") },
	} {
		var in []byte
		switch name {
		case "truncated uvarint":
			in = []byte{0x80}
		case "over-long varint":
			in = []byte{0x80, 0}
		case "int63 over limit":
			in = binary.AppendUvarint(nil, math.MaxInt64+1)
		case "key over MaxKeyLen":
			in = AppendString([]byte{1}, strings.Repeat("k", MaxKeyLen+1))
		case "trailing bytes":
			in = []byte{1, 2}
		default:
			in = []byte{2, 'a', 'b'}
		}
		r := NewReader(in)
		read(r)
		if err := r.Done(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want a malformed-input error", name, err)
		}
	}
}

// TestReaderLimitsBeforeAllocation checks that a count or length that the limit or the input
// cannot hold is refused before anything of its size is allocated.
func TestReaderLimitsBeforeAllocation(t *testing.T) {
	huge := binary.AppendUvarint(nil, MaxTxnOps) // within the limit, but the input is 3 bytes
	over := binary.AppendUvarint(nil, MaxTxnOps+1)
	long := binary.AppendUvarint(nil, MaxValueLen) // a value length with no value behind it
	for name, read := range map[string]func() error{
		"keys":           func() error { r := NewReader(huge); r.Keys(); return r.Err() },
		"keys over":      func() error { r := NewReader(over); r.Keys(); return r.Err() },
		"writes":         func() error { r := NewReader(append(huge, 0, 0)); r.Writes(); return r.Err() },
		"writes over":    func() error { r := NewReader(over); r.Writes(); return r.Err() },
		"count":          func() error { r := NewReader(huge); r.Count("x", MaxTxnOps, 16); return r.Err() },
		"bytes":          func() error { r := NewReader(long); r.Bytes("x", MaxValueLen); return r.Err() },
		"bytes over":     func() error { r := NewReader(long); r.Bytes("x", MaxKeyLen); return r.Err() },
		"writes 2 bytes": func() error { r := NewReader([]byte{2, 0, 0}); r.Writes(); return r.Err() },
	} {
		if err := read(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want a malformed-input error", name, err)
		}
		const runs = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			_ = read()
		}
		runtime.ReadMemStats(&after)
		if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 4<<10 {
			t.Errorf("%s: refusing the input allocated %d bytes a run", name, perRun)
		}
	}
}

// TestWriterFirstErrorSticks checks that Writer refuses what Reader would refuse, keeps the
// first error, and then leaves dst unchanged.
func TestWriterFirstErrorSticks(t *testing.T) {
	for name, write := range map[string]func(*Writer){
		"negative int":       func(w *Writer) { w.Int("x", -1, 5) },
		"int over limit":     func(w *Writer) { w.Int("x", 6, 5) },
		"negative int63":     func(w *Writer) { w.Int63("x", -1) },
		"count over limit":   func(w *Writer) { w.Count("x", 3, 2) },
		"string over limit":  func(w *Writer) { w.String("x", "abc", 2) },
		"bytes over limit":   func(w *Writer) { w.Bytes("x", []byte("abc"), 2) },
		"key over MaxKeyLen": func(w *Writer) { w.Keys([]string{strings.Repeat("k", MaxKeyLen+1)}) },
		"too many keys":      func(w *Writer) { w.Keys(make([]string, MaxTxnOps+1)) },
		"too many writes":    func(w *Writer) { w.Writes(make([]txn.Write, MaxTxnOps+1)) },
		"value too long":     func(w *Writer) { w.Writes([]txn.Write{{Value: make([]byte, MaxValueLen+1)}}) },
		"fail":               func(w *Writer) { w.Fail("x", "never sent") },
	} {
		dst := make([]byte, 1, 64)
		dst[0] = 0xee
		w := NewWriter(dst)
		w.Uvarint(1)
		write(w)
		first := w.Err()
		if first == nil || !strings.HasPrefix(first.Error(), "wire: cannot encode ") {
			t.Errorf("%s: error %v", name, first)
			continue
		}
		writeAll(w)
		w.Fail("later", "a second error")
		got, err := w.Finish()
		if err != first || !bytes.Equal(got, []byte{0xee}) {
			t.Errorf("%s: Finish = %x, %v; want ee, %v", name, got, err, first)
		}
	}
	var zero Writer
	if b, err := zero.Finish(); b != nil || err != nil {
		t.Errorf("zero Writer: %x, %v", b, err)
	}
}

// FuzzReader runs a program of reads (one op byte each) over arbitrary input: Reader must never
// panic, every error must wrap ErrMalformed, and after the first error every read must return
// the zero value, consume nothing and leave the error as it was.
func FuzzReader(f *testing.F) {
	w := NewWriter(nil)
	writeAll(w)
	all, _ := w.Finish()
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, all)
	f.Add([]byte{10, 11, 10}, []byte{1, 0, 0xff, 0xff, 0x03})
	f.Add([]byte{6, 6, 2}, binary.AppendUvarint(nil, math.MaxUint64))
	f.Add([]byte{1, 0, 8}, []byte{2, 0x80, 0x80})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, ops, in []byte) {
		r := NewReader(in)
		var first error
		for _, op := range ops {
			off := r.d.Offset()
			var v any
			switch op % 13 {
			case 0:
				v = r.Byte("byte")
			case 1:
				v = r.Bool("bool")
			case 2:
				v = r.Uvarint("uvarint")
			case 3:
				v = r.Varint("varint")
			case 4:
				v = r.ID("id")
			case 5:
				v = r.Int("int", int(op))
			case 6:
				v = r.Int63("int63")
			case 7:
				v = r.Count("count", MaxTxnOps, int(op%4))
			case 8:
				v = r.String("string", MaxKeyLen)
			case 9:
				v = r.Bytes("bytes", MaxValueLen)
			case 10:
				v = r.Keys()
			case 11:
				v = r.Writes()
			case 12:
				r.Fail("fail", "op %d", op)
			}
			if first != nil {
				if r.Err() != first || r.d.Offset() != off || (v != nil && !reflect.ValueOf(v).IsZero()) {
					t.Fatalf("op %d after error %v: read %#v, error %v, offset %d→%d", op, first, v, r.Err(), off, r.d.Offset())
				}
				continue
			}
			if first = r.Err(); first != nil && !errors.Is(first, ErrMalformed) {
				t.Fatalf("op %d: error %v does not wrap ErrMalformed", op, first)
			}
		}
		if err := r.Done(); err != nil && (!errors.Is(err, ErrMalformed) || first != nil && err != first) {
			t.Fatalf("Done = %v after first error %v", err, first)
		}
	})
}
