package rc

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
)

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation of the encoding is rejected without a panic.
func TestCodecRoundTrip(t *testing.T) {
	id := txn.NewID(3, 7)
	tx := &txn.Txn{ID: id, Reads: []txn.Read{{Key: "a", Version: txn.NewID(1, 1)}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}}}
	for _, m := range []protocol.Message{
		&ReadLock{Txn: id, Read: 9, Key: "k"},
		&ReadReply{Txn: id, Read: 9},
		&ReadReply{Txn: id, Read: 9, Granted: true, Value: []byte("x"), Version: txn.NewID(2, 2), Count: 4},
		&Accept{Txn: tx},
		&Vote{Txn: id},
		&Vote{Txn: id, Accepted: true, Counts: []uint64{0, 5}},
		&Decision{Txn: id},
		&Decision{Txn: id, Committed: true, Writes: tx.Writes, Positions: []uint64{3}},
		&DecisionAck{Txn: id},
	} {
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
	}
	if _, err := Codec.Append(nil, &Decision{Txn: id, Committed: true, Writes: tx.Writes}); err == nil {
		t.Error("a committed decision without positions was encoded")
	}
}
