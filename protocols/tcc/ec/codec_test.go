package ec

import (
	"errors"
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
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
func TestCodecRoundTrip(t *testing.T) { codectest.RoundTrip(t, Codec, sampleMessages()) }

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
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }
