package rc

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation of the encoding is rejected without a panic.
func TestCodecRoundTrip(t *testing.T) {
	id := txn.NewID(3, 7)
	tx := &txn.Txn{ID: id, Reads: []txn.Read{{Key: "a", Version: txn.NewID(1, 1)}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}}}
	codectest.RoundTrip(t, Codec, []protocol.Message{
		&ReadLock{Txn: id, Read: 9, Key: "k"},
		&ReadReply{Txn: id, Read: 9},
		&ReadReply{Txn: id, Read: 9, Granted: true, Value: []byte("x"), Version: txn.NewID(2, 2), Count: 4},
		&Accept{Txn: tx},
		&Vote{Txn: id},
		&Vote{Txn: id, Accepted: true, Counts: []uint64{0, 5}},
		&Decision{Txn: id},
		&Decision{Txn: id, Committed: true, Writes: tx.Writes, Positions: []uint64{3}},
		&DecisionAck{Txn: id},
	})
	if _, err := Codec.Append(nil, &Decision{Txn: id, Committed: true, Writes: tx.Writes}); err == nil {
		t.Error("a committed decision without positions was encoded")
	}
}
