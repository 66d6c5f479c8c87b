package fastccs

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// codecCases has every message shape: the client operations and answers and the peer messages.
func codecCases() []protocol.Message {
	id := txn.NewID(3, 7)
	vc := VC{1, 0, 4}
	kv := []KeyVersion{{Key: "a", Value: []byte("a1"), Writer: txn.NewID(1, 1), CT: VC{2, 1, 0}}, {Key: "b"}}
	return []protocol.Message{
		&MultigetSlice{Keys: []string{"a", "b"}, VC: vc},
		&MultigetSlice{Keys: []string{"a"}},
		&MultigetSliceResp{Versions: kv, CTM: VC{2, 1, 0}, SVC: VC{5, 5, 5}},
		&MultigetSliceByTime{Keys: []string{"a"}, VC: vc},
		&MultigetSliceByTimeResp{Versions: kv, CTM: VC{2, 1, 0}},
		&MultigetSliceByTimeResp{Collected: true},
		&WriteReq{Tx: id, Writes: []txn.Write{{Key: "a", Value: []byte("v")}, {Key: "c"}}, VC: vc, Coordinator: 2, Size: 3},
		&WriteResp{Tx: id, Committed: true, CT: VC{1 << 40, 2, 3}},
		&WriteResp{Tx: id, Committed: true},
		&WriteResp{Tx: id},
		&Prepared{Tx: id, SN: 9},
		&Commit{Tx: id, CT: vc},
		&Abort{Tx: id},
		&CheckCommit{Tx: id, SN: 1 << 62},
		&Gossip{Dir: GossipAll, Base: 2, Values: []int64{7}},
		&Replicate{Prev: 3, Entries: []ReplicatedTx{{SN: 5, Tx: id, Writes: []txn.Write{{Key: "a", Value: []byte("v")}}, CT: vc}, {SN: 6, Tx: id + 1, CT: vc}}, Upto: 8},
		&Replicate{Prev: 4, Upto: 4},
		&ReplicateAck{Upto: 12},
		&Cover{VC: vc},
		&Cover{},
		&CoverResp{Covered: true},
		&CoverResp{},
		&Gossip{Dir: GossipDown, Values: []int64{1, 2, 3}},
		&Gossip{Dir: GossipUp, Values: []int64{4, 9}, Slots: []int{1, 7}},
	}
}

// TestCodecRoundTrip: every message shape round-trips, truncations and a trailing byte are refused.
func TestCodecRoundTrip(t *testing.T) { codectest.RoundTrip(t, Codec, codecCases()) }

// TestCodecRefuses checks that what the decoder would reject is never encoded.
func TestCodecRefuses(t *testing.T) {
	for _, m := range []protocol.Message{
		nil,
		(*Commit)(nil),
		&Commit{CT: VC{1, -1}},
		&Prepared{SN: -2},
		&Gossip{Dir: 3},
		&Gossip{Base: -1},
		&WriteReq{Coordinator: -1},
	} {
		if b, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%#v encoded as %x", m, b)
		}
	}
	if _, err := Codec.Decode([]byte{99}); err == nil {
		t.Error("unknown tag accepted")
	}
	// A vector entry above MaxInt64 is malformed.
	if _, err := Codec.Decode([]byte{tagPrepared, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); err == nil {
		t.Error("sequence number above MaxInt64 accepted")
	}
}

// FuzzDecode: Decode never panics, refuses garbage as malformed, and what it accepts re-encodes
// to the same bytes.
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, codecCases(), nil) }
