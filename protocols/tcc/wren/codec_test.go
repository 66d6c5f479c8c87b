package wren

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
	ws := []txn.Write{{Key: "a", Value: []byte("a1")}, {Key: "b"}}
	return []protocol.Message{
		&SnapshotReq{Tx: id, Lst: 5_000},
		&SnapshotResp{Tx: id, St: 5_000},
		&ReadReq{Tx: id, St: 5_000, Keys: []string{"a", "a'"}},
		&ReadReq{Tx: id},
		&ReadResp{Tx: id, Lst: 9, Items: []Item{{Key: "a", Value: []byte("a1"), Writer: txn.NewID(1, 1)}, {Key: "b"}}},
		&ReadResp{Tx: id, TooOld: true, Lst: 12_000},
		&CommitReq{Tx: id, Lst: 5_000, Hwt: 4_000, Writes: ws},
		&CommitResp{Tx: id, Committed: true, Ct: 10_000},
		&CommitResp{Tx: id},
		&Prepare{Tx: id, Clock: 5_000, Writes: ws},
		&Vote{Tx: id, Pt: 9_000},
		&Decision{Tx: id, Committed: true, Ct: 10_000},
		&Decision{Tx: id},
		&DecisionAck{Tx: id},
		&Gossip{Local: 7_000},
		&Gossip{Local: -3}, // a skewed clock may read below zero
		&StableTime{Lst: 6_000},
	}
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation of the encoding is rejected without a panic.
func TestCodecRoundTrip(t *testing.T) { codectest.RoundTrip(t, Codec, sampleMessages()) }

// TestCodecRefuses checks that what Decode would reject is not encoded, and what no encoder
// writes is not decoded.
func TestCodecRefuses(t *testing.T) {
	for _, m := range []protocol.Message{
		nil,
		(*Vote)(nil),
		&ReadResp{TooOld: true, Items: []Item{{Key: "a"}}},
		&ReadReq{Keys: []string{string(make([]byte, wire.MaxKeyLen+1))}},
		&Prepare{Writes: []txn.Write{{Key: "a", Value: make([]byte, wire.MaxValueLen+1)}}},
	} {
		if _, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%#v was encoded", m)
		}
	}
	tooOld, _ := Codec.Append(nil, &ReadResp{TooOld: true})
	tooOld[len(tooOld)-1] = 1 // one item count, with no item
	for _, b := range [][]byte{{}, {0}, {99}, append(tooOld, 1, 'a', 0, 0)} {
		if _, err := Codec.Decode(b); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%x: %v, want a malformed-input error", b, err)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to Codec.Decode: it must never panic, and whatever decodes
// must re-encode to the same bytes.
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }
