package paxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestCodecRoundTrip encodes every message kind and decodes it back unchanged; truncations and
// a trailing byte are rejected without panicking.
func TestCodecRoundTrip(t *testing.T) {
	v := []*txn.Txn{rw(txn.NewID(1, 2), []string{"x"}, []string{"a"}), rw(txn.NewID(3, 4), nil, []string{"b"})}
	codectest.RoundTrip(t, Codec, []protocol.Message{
		&Message{Kind: Prepare, From: 2, Pos: 7, Ballot: 11},
		&Message{Kind: Promise, From: 1, Pos: 7, Ballot: 11, AccBallot: 5, Value: v},
		&Message{Kind: Promise, From: 1, Pos: 7, Ballot: 11},
		&Message{Kind: Accept, From: 0, Pos: 7, Ballot: 11, Value: v[:1]},
		&Message{Kind: Accepted, From: 4, Pos: 7, Ballot: 11},
		&Message{Kind: Reject, From: 4, Pos: 7, Ballot: 11, AccBallot: 20},
		&Message{Kind: Chosen, From: 3, Pos: 9, Value: v},
		&Message{Kind: Sync, From: 3, Applied: 42},
	})
	if _, err := Codec.Append(nil, &Message{Kind: Accept, Pos: 1, Ballot: 1}); err == nil {
		t.Error("an Accept without a value was encoded")
	}
}
