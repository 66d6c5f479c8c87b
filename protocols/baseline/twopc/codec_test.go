package twopc

import (
	"bytes"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

func sampleWire() []protocol.Message {
	t := &txn.Txn{ID: txn.NewID(3, 7), Reads: []txn.Read{{Key: "a", Version: txn.NewID(1, 1)}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}}}
	return []protocol.Message{
		&ReadReq{From: 2, Ballot: makeBallot(3, 2), Txn: t.ID, Key: "a", Rid: 9},
		&ReadResp{Rid: 9, Txn: t.ID, Value: []byte("x"), Version: txn.NewID(1, 1)},
		&ReadResp{Rid: 10, Txn: t.ID, Aborted: true, Reason: ReasonDeadlock},
		&CommitReq{From: 4, Ballot: makeBallot(1, 0), Txn: t},
		&AbortReq{From: 1, Txn: t.ID},
		&Outcome{Txn: t.ID, Status: txn.Aborted, Reason: ReasonTimeout},
		&Outcome{Txn: t.ID, Status: txn.Committed},
		&Accept{Ballot: makeBallot(1, 0), Commit: 5, SentUs: -42},
		&Accept{Ballot: makeBallot(2, 1), Fence: 6, Base: 3, Commit: 5, SentUs: 1_000_000, Entries: []Entry{{Index: 6, Txn: &txn.Txn{ID: t.ID, Writes: t.Writes}}, {Index: 7, Txn: noop}}},
		&Ack{From: 3, Ballot: makeBallot(2, 1), Match: 7, Commit: 5, EchoUs: -7},
		&Prepare{Ballot: makeBallot(4, 2), After: 9, SentUs: 123},
		&Promise{From: 1, Ballot: makeBallot(4, 2), Promised: makeBallot(3, 0), EchoUs: 123},
		&Promise{From: 3, Ballot: makeBallot(4, 2), Promised: makeBallot(4, 2), Applied: 9, FenceBallot: makeBallot(2, 1), FenceEnd: 10, More: true, EchoUs: 123,
			Entries: []Accepted{{Index: 10, Ballot: chosenBallot, Txn: noop}, {Index: 12, Ballot: makeBallot(2, 1), Txn: &txn.Txn{ID: t.ID, Writes: t.Writes}}}},
	}
}

// TestCodecRoundTrip: every message shape survives encoding (re-encoding the decoded message
// gives the same bytes), and every truncation or corruption is rejected without a panic.
func TestCodecRoundTrip(t *testing.T) {
	for _, m := range sampleWire() {
		b, err := Codec.Append(nil, m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		got, err := Codec.Decode(b)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		b2, err := Codec.Append(nil, got)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("%T: round trip changed the encoding (%v)", m, err)
		}
		for i := range len(b) {
			if _, err := Codec.Decode(b[:i]); err == nil {
				t.Errorf("%T: truncation to %d bytes accepted", m, i)
			}
		}
		if _, err := Codec.Decode(append(b, 0)); err == nil {
			t.Errorf("%T: trailing byte accepted", m)
		}
		for i := range b {
			c := bytes.Clone(b)
			c[i] ^= 0xff
			_, _ = Codec.Decode(c) // must not panic
		}
	}
	if _, err := Codec.Append(nil, &CommitReq{}); err == nil {
		t.Error("commit request without a transaction encoded")
	}
	if _, err := Codec.Append(nil, &Promise{Entries: []Accepted{{Index: 1}}}); err == nil {
		t.Error("promise reporting an entry without a transaction encoded")
	}
}
