package alvin

import (
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
)

// randomMessage draws a message of any kind whose fields are random but small, so that they
// collide with real transactions, positions and epochs: what a buggy or hostile peer could send
// after decoding succeeded.
func randomMessage(r *rand.Rand) protocol.Message {
	id := func() txn.ID { return txn.NewID(txn.ClientID(1+r.IntN(6)), 1) }
	ids := func() []txn.ID {
		var out []txn.ID
		for range r.IntN(3) {
			out = append(out, id())
		}
		return union(out)
	}
	payload := func(tid txn.ID) *txn.Txn {
		t := &txn.Txn{ID: tid, Reads: []txn.Read{{Key: "x"}}, Writes: []txn.Write{{Key: "x", Value: []byte("h")}}}
		switch r.IntN(4) {
		case 0:
			return nil
		case 1: // a batch (instance batching) under the same id, with a colliding member
			return txn.NewBatch(tid, []*txn.Txn{{ID: id(), Reads: []txn.Read{{Key: "x"}}}, t})
		}
		return t
	}
	tid, epoch, pos := id(), uint64(r.IntN(8)), uint64(r.IntN(12))
	switch r.IntN(11) {
	case 0:
		return &Propose{Tid: tid, Epoch: epoch, Pos: pos, Deps: ids(), Payload: payload(tid)}
	case 1:
		return &AckPropose{Tid: tid, Epoch: epoch, Pos: pos, Deps: ids()}
	case 2:
		return &Accept{Tid: tid, Epoch: epoch, Pos: pos, Deps: ids(), Payload: payload(tid)}
	case 3:
		return &Accept{Tid: tid, Epoch: epoch, NoOp: true}
	case 4:
		return &AckAccept{Tid: tid, Epoch: epoch, Pos: pos, Deps: ids()}
	case 5:
		return &Stable{Tid: tid, Epoch: epoch, Pos: pos, Deps: ids(), Payload: payload(tid)}
	case 6:
		return &Prepare{Tid: tid, Epoch: epoch}
	case 7:
		return &Promise{Tid: tid, Epoch: epoch, Status: Status(r.IntN(4)), Pos: pos, Deps: ids(), NoOp: r.IntN(2) == 0,
			AcceptedEpoch: uint64(r.IntN(8)), HasProposal: r.IntN(2) == 0, ProposedPos: uint64(r.IntN(12)), ProposedDeps: ids(), Payload: payload(tid)}
	case 8:
		return &Nack{Tid: tid, Promised: epoch}
	case 9:
		return &Fetch{Tids: ids()}
	}
	return &Delivered{Tids: ids(), Gone: ids()}
}

// TestUnexpectedMessagesNeverPanic delivers thousands of random, well-encoded but unexpected
// messages (wrong epochs, unknown transactions, contradicting decisions, batches where a
// transaction is expected and the reverse, nil messages) to the replicas of a running three-node
// world between real transactions and ticks (with instance batching on every third seed): no
// replica may panic. (Safety needs the crash-stop model; this checks only that a replica
// survives.)
func TestUnexpectedMessagesNeverPanic(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		var params protocol.Params
		if seed%3 == 0 {
			params = protocol.Params{batch.ParamMode: batch.ModeInstance}
		}
		s := newScript(t, 3, seed%2 == 0, params)
		s.w.AfterEvent = nil // the random messages break the invariants on purpose
		for step := range 500 {
			if step%50 == 0 {
				s.w.Request(r.IntN(3), "T"+string(rune('a'+step/50)), rw("x"), rw("x"))
			}
			to, from := r.IntN(3), r.IntN(3)
			if from == to {
				s.reps[to].HandleMessage(protocol.NodeID(from), nil)
			} else {
				s.reps[to].HandleMessage(protocol.NodeID(from), randomMessage(r))
			}
			s.w.RunTo(s.w.NowMs() + 1)
			if step%10 == 0 {
				s.tick()
				s.reps[r.IntN(3)].HandleTimer(timerBatch)
			}
		}
	}
}
