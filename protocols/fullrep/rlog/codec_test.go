package rlog

import (
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/wire"
)

func appendString(dst []byte, s string) ([]byte, error) { return wire.AppendString(dst, s), nil }
func decodeString(d *wire.Decoder) (string, error)      { return d.String("payload", 64) }

func table(n int, f func(j, k int) int64) []int64 {
	t := make([]int64, n*n)
	for i := range t {
		t[i] = f(i/n, i%n)
	}
	return t
}

func sampleMessages() []*Message[string] {
	now := int64(1_760_000_000_000_000) // a microsecond clock
	return []*Message[string]{
		{From: 0, SendTS: 1, Full: true, Table: []int64{1}},
		{From: 1, SendTS: now, Full: true, NeedFull: true, Table: table(2, func(j, k int) int64 { return now - int64(j*1000+k) })},
		{From: 2, SendTS: now, Base: []int64{now - 40_000, now - 9, now - 7}, Table: table(3, func(j, k int) int64 { return now - 5000 }),
			Records: []Record[string]{{Host: 0, TS: now - 40_000, Payload: "a"}, {Host: 2, TS: now, Payload: ""}}},
		{From: 4, SendTS: math.MaxInt64, Full: true,
			Table:   table(5, func(j, k int) int64 { return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}[(j+k)%5] }),
			Records: []Record[string]{{Host: 3, TS: math.MinInt64, Payload: "extreme"}}},
	}
}

func TestMessageRoundTrip(t *testing.T) {
	for i, m := range sampleMessages() {
		n := isqrt(len(m.Table))
		b, err := AppendMessage([]byte{9}, m, appendString)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		for _, sites := range []int{0, n} {
			got, err := DecodeMessage(b[1:], sites, decodeString)
			if err != nil {
				t.Fatalf("message %d, n=%d: %v", i, sites, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("message %d: got %+v, want %+v", i, got, m)
			}
		}
		if _, err := DecodeMessage(b[1:], n+1, decodeString); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("message %d decoded for %d sites: %v", i, n+1, err)
		}
		for k := range len(b) - 1 {
			if _, err := DecodeMessage(b[1:1+k], 0, decodeString); !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("message %d prefix of %d bytes: %v", i, k, err)
			}
		}
		if _, err := DecodeMessage(append(b[1:], 0), 0, decodeString); err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Errorf("message %d with a trailing byte: %v", i, err)
		}
	}
}

// TestTimestampsCompact checks that timestamps near the send time take a few bytes, not eight.
func TestTimestampsCompact(t *testing.T) {
	m := sampleMessages()[2]
	b, err := AppendMessage(nil, m, appendString)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 50 {
		t.Errorf("3-site message with 2 records takes %d bytes", len(b))
	}
}

func TestAppendMessageRejects(t *testing.T) {
	for name, m := range map[string]*Message[string]{
		"empty table":        {Full: true},
		"table of 3":         {Full: true, Table: make([]int64, 3)},
		"too many":           {Full: true, Table: make([]int64, (MaxSites+1)*(MaxSites+1))},
		"from negative":      {From: -1, Full: true, Table: make([]int64, 4)},
		"from too big":       {From: 2, Full: true, Table: make([]int64, 4)},
		"incremental nobase": {Table: make([]int64, 4)},
		"short base":         {Base: make([]int64, 1), Table: make([]int64, 4)},
		"full with base":     {Full: true, Base: make([]int64, 2), Table: make([]int64, 4)},
		"host too big":       {Full: true, Table: make([]int64, 4), Records: []Record[string]{{Host: 2}}},
		"payload error":      {Full: true, Table: make([]int64, 4), Records: []Record[string]{{Payload: "bad"}}},
	} {
		b, err := AppendMessage([]byte("dst"), m, func(dst []byte, s string) ([]byte, error) {
			if s == "bad" {
				return append(dst, "partial"...), errors.New("bad payload")
			}
			return wire.AppendString(dst, s), nil
		})
		if err == nil || string(b) != "dst" {
			t.Errorf("%s: got %q, %v; want an error and dst unchanged", name, b, err)
		}
	}
}

func TestDecodeMessageRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"zero sites":      {0},
		"too many sites":  {0x81, 0x02}, // 257
		"from out range":  {2, 2},
		"tiny huge table": {0x80, 0x02, 0, 0, 1, 1}, // 256 sites: 65536 entries in no bytes
		"huge count":      {1, 0, 0, 1, 1, 0, 0xff, 0xff, 0x3f},
		"host out range":  {1, 0, 0, 1, 1, 0, 1, 1, 0, 0},
		"bad full flag":   {1, 0, 0, 2, 0, 0, 0},
		"bad need flag":   {1, 0, 0, 1, 2, 0, 0},
		"base cut short":  {2, 0, 0, 0, 0, 1},
	} {
		if _, err := DecodeMessage(b, 0, decodeString); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
		if n := allocatedBytes(func() { DecodeMessage(b, 0, decodeString) }); n > 2048 {
			t.Errorf("%s: rejecting %d bytes allocated %d bytes", name, len(b), n)
		}
	}
}

// allocatedBytes returns how many bytes f allocates, on average over 20 runs.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / 20
}

// TestReceiveDecoded checks that a decoded message is accepted by a log like the original.
func TestReceiveDecoded(t *testing.T) {
	a, b := New[string](0, 2), New[string](1, 2)
	a.Append(100, "x")
	a.Append(200, "y")
	var enc []byte
	a.Broadcast(300, func(_ int, m *Message[string]) {
		var err error
		if enc, err = AppendMessage(nil, m, appendString); err != nil {
			t.Fatal(err)
		}
	})
	m, err := DecodeMessage(enc, 2, decodeString)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := b.Receive(m, func(r Record[string]) { got = append(got, r.Payload) }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"x", "y"}) || b.T(1, 0) != 300 {
		t.Errorf("incorporated %v, T[1][0] = %d", got, b.T(1, 0))
	}
}
