package sdur

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
	sl := Slice{Part: 1, RS: []string{"p1/a", "p1/b"}, WS: []txn.Write{{Key: "p1/a", Value: []byte("v")}, {Key: "p1/b"}}, St: 9}
	term := &Terminate{Tx: id, Slice: sl, Parts: []int{0, 1}, Coord: 4, Client: 3, Seq: 11, SubmitUs: 1_234_567}
	return []protocol.Message{
		&ReadReq{Tx: id, Key: "p0/x", St: 4, HasSt: true},
		&ReadReq{Tx: id, Key: "p0/x"},
		&ReadReply{Value: []byte("v"), Version: id, St: 4},
		&ReadReply{},
		&SnapReq{},
		&SnapReply{M: 2, S: []uint64{3, 0}},
		&SnapReply{},
		&CommitReq{Tx: id, Slices: []Slice{{Part: 0, RS: []string{"p0/x"}}, sl}},
		&CommitReply{Status: txn.Committed},
		&CommitReply{Status: txn.Aborted, Reason: ReasonPending},
		&Submit{Group: 1, Payload: term},
		&Vote{Tx: id, Part: 1, Commit: true},
		&VoteQuery{Tx: id},
		&SnapAsk{M: 3, Prev: []uint64{1, 2}},
		&Report{M: 3, Part: 1, C: 7, L: []GlobalCommit{{Tx: id, SC: 6, Parts: []int{0, 1}}}},
		&SnapPublish{M: 3, S: []uint64{5, 6}},
		term,
		&AbortReq{Tx: id, Parts: []int{0, 2}, Coord: 1, Client: 3, Seq: 2, SubmitUs: -5},
		&Marker{M: 5, Part: 1, Coord: 2, Prev: []uint64{3, 4}},
		&SnapBegin{M: 5},
		&SnapResume{M: 5},
		&Final{Tx: id, Commit: true},
		&SnapDecided{M: 4, S: []uint64{1, 1}},
		&Tick{To: 12},
		&Paxos{Kind: P2a, Group: 1, Ballot: 4, Inst: 17, Value: []Payload{term, &Tick{To: 3}}},
		&Paxos{Kind: P1b, Group: 1, Ballot: 4, Accepted: []Accepted{{Inst: 5, Ballot: 1, Value: []Payload{&Final{Tx: id}}}, {Inst: 6, Decided: true}}},
		&Paxos{Kind: Heartbeat, Ballot: 4, Frontier: 9},
	}
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation of the encoding is rejected without a panic.
func TestCodecRoundTrip(t *testing.T) { codectest.RoundTrip(t, Codec, sampleMessages()) }

// TestCodecRefuses checks that what Decode would reject is not encoded, and what no encoder
// writes is not decoded: a Submit without a payload or with a Paxos message in it, a Paxos
// value holding a non-payload, an unknown Paxos kind or tag.
func TestCodecRefuses(t *testing.T) {
	for _, m := range []protocol.Message{
		nil,
		(*Vote)(nil),
		&Submit{Group: 1},
		&ReadReq{Key: string(make([]byte, wire.MaxKeyLen+1))},
		&Vote{Part: maxPartitions + 1},
	} {
		if _, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%#v was encoded", m)
		}
	}
	paxos, _ := Codec.Append(nil, &Paxos{Kind: Nack})
	badKind := append([]byte{}, paxos...)
	badKind[1] = 99
	for _, b := range [][]byte{{}, {0}, {99}, {tagSubmit, 1, tagPaxos}, badKind} {
		if _, err := Codec.Decode(b); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%x: %v, want a malformed-input error", b, err)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to Codec.Decode: it must never panic, and whatever decodes
// must re-encode to the same bytes.
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }
