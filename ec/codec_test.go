package ec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
	"github.com/meridian-kv/meridian/wire"
)

func sampleMessages() []protocol.Message {
	id := txn.NewID(3, 7)
	return []protocol.Message{
		&ReadReq{Tx: id, Keys: []string{"a", "a'"}},
		&ReadReq{Tx: id},
		&ReadResp{Tx: id, Items: []Item{{Key: "a", Value: []byte("a1"), Writer: txn.NewID(1, 1)}, {Key: "b"}}},
		&ReadResp{Tx: id},
		&WriteReq{Tx: id, Ts: 9_000, Writes: []txn.Write{{Key: "a", Value: []byte("a1")}, {Key: "b"}}},
		&WriteReq{Tx: id, Ts: -4}, // a skewed clock may read below zero
		&WriteResp{Tx: id},
	}
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation, and a trailing byte, is rejected without a panic.
func TestCodecRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		b, err := Codec.Append(nil, m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		got, err := Codec.Decode(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%#v: decoded %#v, %v", m, got, err)
		}
		for i := range b {
			if _, err := Codec.Decode(b[:i]); err == nil {
				t.Errorf("%T: truncation to %d bytes accepted", m, i)
			}
		}
		if _, err := Codec.Decode(append(b, 0)); err == nil {
			t.Errorf("%T: trailing byte accepted", m)
		}
	}
}

// TestCodecRefuses checks that nothing over the wire limits is encoded and that garbage is
// refused as malformed input.
func TestCodecRefuses(t *testing.T) {
	for _, m := range []protocol.Message{
		nil,
		(*WriteResp)(nil),
		&ReadReq{Keys: []string{string(make([]byte, wire.MaxKeyLen+1))}},
		&WriteReq{Writes: []txn.Write{{Key: "a", Value: make([]byte, wire.MaxValueLen+1)}}},
	} {
		if _, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%#v was encoded", m)
		}
	}
	for _, b := range [][]byte{{}, {0, 1}, {99, 1}, {tagReadReq, 1, 200}} {
		if _, err := Codec.Decode(b); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%x: %v, want a malformed-input error", b, err)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to Codec.Decode: it must never panic, and whatever decodes
// must re-encode to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := Codec.Append(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Codec.Decode(b)
		if err != nil {
			if m != nil || !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("error %v (message %v) does not wrap wire.ErrMalformed", err, m)
			}
			return
		}
		again, err := Codec.Append(nil, m)
		if err != nil {
			t.Fatalf("decoded %#v does not re-encode: %v", m, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encodes differently:\n in %x\nout %x", b, again)
		}
	})
}
