package eiger

import (
	"errors"
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// sampleMessages is one message of every shape: the round-trip cases and the fuzz seed corpus.
func sampleMessages() []protocol.Message {
	id := txn.NewID(3, 7)
	return []protocol.Message{
		&Read{Keys: []string{"a", "b"}, Clock: 12},
		&Read{},
		&ReadByTime{Keys: []string{"b"}, EffTime: 15, Clock: 20},
		&ReadReply{Reads: []KeyRead{
			{Key: "a", Value: []byte("a1"), Writer: id, EVT: 15, LVT: 20},
			{Key: "b", LVT: 10, Pending: true},
			{Key: "c", LVT: 10},
		}, Clock: 20, CommitChecks: 2},
		&ReadReply{Clock: 9, CommitChecks: 1, Retry: true},
		&WriteReq{Txn: id, Writes: []txn.Write{{Key: "a", Value: []byte("v")}, {Key: "c"}}, Coordinator: 2,
			Participants: []protocol.NodeID{0, 2}, Deps: []Dep{{Key: "x", Version: txn.NewID(1, 1)}}, Clock: 33},
		&WriteReq{Txn: id, Writes: []txn.Write{{Key: "b", Value: []byte("w")}}, Coordinator: 2, Clock: 33},
		&WriteReply{Txn: id, Status: Prepared, Clock: 4},
		&WriteReply{Txn: id, Status: Committed, CommitTime: 14, Clock: 14},
		&WriteReply{Txn: id, Status: Aborted},
		&Vote{Txn: id, PrepareTime: 12},
		&Commit{Txn: id, CommitTime: 14},
		&CommitAck{Txn: id},
		&Abort{Txn: id},
		&Check{Txn: id, EffTime: 15},
		&Check{Txn: id},
		&CheckReply{Txn: id, Status: CheckCommitted, CommitTime: 14},
		&CheckReply{Txn: id, Status: CheckAborted},
		&CheckReply{Txn: id, Status: CheckUndecided, Floor: 15},
	}
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation and a trailing byte are rejected.
func TestCodecRoundTrip(t *testing.T) { codectest.RoundTrip(t, Codec, sampleMessages()) }

// TestCodecRefusesShapes checks that the codec refuses what Eiger never sends instead of
// dropping fields, and rejects unknown tags.
func TestCodecRefusesShapes(t *testing.T) {
	for name, m := range map[string]protocol.Message{
		"nil":                      nil,
		"nil read":                 (*Read)(nil),
		"negative clock":           &Read{Clock: -1},
		"pending with a version":   &ReadReply{Reads: []KeyRead{{Key: "a", Writer: 5, Pending: true}}},
		"retry with reads":         &ReadReply{Reads: []KeyRead{{Key: "a"}}, Retry: true},
		"negative coordinator":     &WriteReq{Coordinator: -1},
		"negative participant":     &WriteReq{Participants: []protocol.NodeID{-1}},
		"negative commit checks":   &ReadReply{CommitChecks: -1},
		"prepared with a ct":       &WriteReply{Status: Prepared, CommitTime: 3},
		"write status 0":           &WriteReply{},
		"undecided with a ct":      &CheckReply{Status: CheckUndecided, CommitTime: 3},
		"committed with a floor":   &CheckReply{Status: CheckCommitted, Floor: 3},
		"check status 4":           &CheckReply{Status: 4},
		"oversized key":            &Read{Keys: []string{string(make([]byte, wire.MaxKeyLen+1))}},
		"negative prepare time":    &Vote{PrepareTime: -2},
		"negative effective time":  &Check{EffTime: -2},
		"negative commit time":     &Commit{CommitTime: -2},
		"negative read-by-time ef": &ReadByTime{EffTime: -1},
	} {
		if b, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%s: encoded as %x", name, b)
		}
	}
	for _, b := range [][]byte{{}, {0}, {tagCheckReply + 1}, {tagWriteReply, 1, 0, 0, 0}, {tagCheckReply, 1, 2, 5, 0}} {
		if m, err := Codec.Decode(b); !errors.Is(err, wire.ErrMalformed) || m != nil {
			t.Errorf("%x: decoded %v, %v", b, m, err)
		}
	}
	// A count the input cannot hold is refused before anything is allocated.
	if _, err := Codec.Decode([]byte{tagWriteReq, 1, 0xff, 0xff, 0x03}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("huge write count: %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes to Codec.Decode: it must never panic, errors must wrap
// wire.ErrMalformed, and whatever decodes must re-encode to the same bytes.
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }
