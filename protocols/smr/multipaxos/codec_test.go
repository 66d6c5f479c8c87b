package multipaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

func sampleMessages() []protocol.Message {
	tx := &txn.Txn{ID: txn.NewID(3, 7), Reads: []txn.Read{{Key: "a", Version: txn.NewID(1, 1)}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}}}
	bt := txn.NewBatch(txn.BatchID(0, 4), []*txn.Txn{tx, {ID: txn.NewID(4, 1), Writes: []txn.Write{{Key: "a", Value: []byte("w")}}}})
	entries := []Entry{{Slot: 1, Ballot: 4, Txn: tx}, {Slot: 3, Ballot: 5}, {Slot: 4, Ballot: 5, Txn: bt}}
	return []protocol.Message{
		&Forward{Txn: tx},
		&Prepare{Ballot: 7, From: 12},
		&Promise{Ballot: 7},
		&Promise{Ballot: 7, Entries: entries},
		&Nack{Ballot: 9},
		&Accept{Ballot: 7, Slot: 3, Txn: tx},
		&Accept{Ballot: 7, Slot: 4},
		&Accept{Ballot: 7, Slot: 5, Txn: bt},
		&Accepted{Ballot: 7, Slot: 4},
		&Commit{Ballot: 7, UpTo: 40, TrimTo: 31},
		&CommitAck{Ballot: 7, Executed: 39},
		&Fetch{From: 2},
		&Chosen{Entries: entries},
	}
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and refuses every
// truncation, a trailing byte, and shapes the protocol never sends.
func TestCodecRoundTrip(t *testing.T) {
	codectest.RoundTrip(t, Codec, sampleMessages())
	for _, m := range []protocol.Message{
		&Accept{Ballot: 1}, // slot 0
		&Chosen{Entries: []Entry{{Slot: 2}, {Slot: 2}}},  // slots not ascending
		&Promise{Ballot: 1, Entries: []Entry{{Slot: 0}}}, // slot 0
		&Forward{}, // no transaction
		&Forward{Txn: txn.NewBatch(txn.BatchID(0, 1), []*txn.Txn{{ID: 1}, {ID: 2}})}, // origins forward single transactions
		(*Commit)(nil),
		&Commit{Ballot: 1, UpTo: 3, TrimTo: 4}, // trims what is not chosen
	} {
		if _, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%#v was encoded", m)
		}
	}
}

// FuzzDecode: Decode never panics and decodes only canonical encodings.
func FuzzDecode(f *testing.F) {
	codectest.Fuzz(f, Codec, sampleMessages(), nil)
}
