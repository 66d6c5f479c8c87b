package alvin

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

func sampleMessages() []protocol.Message {
	id := txn.NewID(3, 7)
	deps := []txn.ID{txn.NewID(1, 1), txn.NewID(2, 5)}
	tx := &txn.Txn{ID: id, Reads: []txn.Read{{Key: "a", Version: txn.NewID(1, 1)}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}}}
	bid := txn.BatchID(2, 4) // instance batching: a batch is one POB transaction
	bt := txn.NewBatch(bid, []*txn.Txn{tx, {ID: txn.NewID(4, 1), Writes: []txn.Write{{Key: "a", Value: []byte("w")}}}})
	return codectest.Messages(map[string]protocol.Message{
		"propose":         &Propose{Tid: id, Epoch: 0, Pos: 3, Deps: deps, Payload: tx},
		"ackpropose":      &AckPropose{Tid: id, Epoch: 5, Pos: 8, Deps: deps},
		"ackpropose-none": &AckPropose{Tid: id, Pos: 8},
		"accept":          &Accept{Tid: id, Epoch: 2, Pos: 3, Deps: deps},
		"accept-payload":  &Accept{Tid: id, Epoch: 2, Pos: 3, Deps: deps, Payload: tx},
		"accept-noop":     &Accept{Tid: id, Epoch: 2, NoOp: true},
		"ackaccept":       &AckAccept{Tid: id, Epoch: 2, Pos: 3, Deps: deps},
		"stable":          &Stable{Tid: id, Epoch: 0, Pos: 3, Deps: deps, Payload: tx},
		"stable-noop":     &Stable{Tid: id, Epoch: 7, NoOp: true},
		"propose-batch":   &Propose{Tid: bid, Pos: 5, Deps: deps, Payload: bt},
		"accept-batch":    &Accept{Tid: bid, Epoch: 2, Pos: 5, Payload: bt},
		"stable-batch":    &Stable{Tid: bid, Pos: 5, Deps: deps, Payload: bt},
		"promise-batch":   &Promise{Tid: bid, Epoch: 4, Status: Pending, Pos: 5, HasProposal: true, ProposedPos: 5, Payload: bt},
		"prepare":         &Prepare{Tid: id, Epoch: 4},
		"promise": &Promise{Tid: id, Epoch: 4, Status: Accepted, Pos: 9, Deps: deps, AcceptedEpoch: 2,
			HasProposal: true, ProposedPos: 3, ProposedDeps: deps[:1], Payload: tx},
		"promise-unknown": &Promise{Tid: id, Epoch: 4},
		"nack":            &Nack{Tid: id, Promised: 9},
		"fetch":           &Fetch{Tids: deps},
		"delivered":       &Delivered{Tids: deps, Gone: []txn.ID{id}},
	})
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation of the encoding is rejected without a panic; shapes ALVIN never sends are
// refused at encoding.
func TestCodecRoundTrip(t *testing.T) {
	codectest.RoundTrip(t, Codec, sampleMessages())
	id := txn.NewID(3, 7)
	for _, m := range []protocol.Message{
		&Propose{Tid: id, Pos: 3},                                // no payload
		&AckPropose{Tid: id, Deps: []txn.ID{2, 1}},               // unsorted
		&Stable{Tid: id, NoOp: true, Deps: []txn.ID{1}},          // NO-OP with deps
		&Accept{Tid: id, Payload: &txn.Txn{ID: txn.NewID(1, 1)}}, // another's payload
		&Promise{Tid: id, Status: StableStatus + 1},              // bad status
		(*Fetch)(nil), // nil
	} {
		if _, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%#v was encoded", m)
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to the same bytes.
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }
