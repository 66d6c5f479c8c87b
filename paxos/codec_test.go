package paxos

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/txn"
)

// TestCodecRoundTrip encodes every message kind and decodes it back unchanged; truncations and
// a trailing byte are rejected without panicking.
func TestCodecRoundTrip(t *testing.T) {
	v := []*txn.Txn{rw(txn.NewID(1, 2), []string{"x"}, []string{"a"}), rw(txn.NewID(3, 4), nil, []string{"b"})}
	for _, m := range []*Message{
		{Kind: Prepare, From: 2, Pos: 7, Ballot: 11},
		{Kind: Promise, From: 1, Pos: 7, Ballot: 11, AccBallot: 5, Value: v},
		{Kind: Promise, From: 1, Pos: 7, Ballot: 11},
		{Kind: Accept, From: 0, Pos: 7, Ballot: 11, Value: v[:1]},
		{Kind: Accepted, From: 4, Pos: 7, Ballot: 11},
		{Kind: Reject, From: 4, Pos: 7, Ballot: 11, AccBallot: 20},
		{Kind: Chosen, From: 3, Pos: 9, Value: v},
		{Kind: Sync, From: 3, Applied: 42},
	} {
		b, err := Codec.Append(nil, m)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		got, err := Codec.Decode(b)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip: got %+v, want %+v", got, m)
		}
		for i := range b {
			if _, err := Codec.Decode(b[:i]); err == nil {
				t.Errorf("%v: truncation to %d bytes accepted", m.Kind, i)
			}
		}
		if _, err := Codec.Decode(append(b, 0)); err == nil {
			t.Errorf("%v: trailing byte accepted", m.Kind)
		}
	}
	if _, err := Codec.Append(nil, &Message{Kind: Accept, Pos: 1, Ballot: 1}); err == nil {
		t.Error("an Accept without a value was encoded")
	}
}
