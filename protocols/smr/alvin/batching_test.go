package alvin

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
)

// TestInstanceBatchOneMemberConflicts (batch_mode=instance): node 1's T0 (read x, write x) is
// ordered and delivered everywhere; meanwhile node 0's clients submitted B1 (a), B2 (read x at
// its initial version, write x), B3 (b) and B4 (read c, write d) into node 0's open batch. When
// the window ends the batch is ONE POB transaction: one PROPOSE per node, one position, T0 in
// its dependencies (through B2's conflict), and every node delivers it once, after T0. P-CC
// validates the members one by one: B2 read x before T0 wrote it and aborts alone; B1, B3 and B4
// commit. The POB invariants hold after every event (script) and the stores converge.
func TestInstanceBatchOneMemberConflicts(t *testing.T) {
	s := newScript(t, 3, true, protocol.Params{batch.ParamMode: batch.ModeInstance})
	s.w.Request(0, "B1", rw("a"), rw("a"))
	s.w.Request(0, "B2", rw("x"), rw("x"))
	s.w.Request(1, "T0", rw("x"), rw("x"))
	s.fireBatch(1) // a batch of one: T0 itself
	s.w.RunTo(100)
	s.wantOutcome("T0", txn.Committed)
	s.w.Request(0, "B3", rw("b"), rw("b"))
	s.w.Request(0, "B4", rw("c"), rw("d"))
	proposes := 0
	s.holdMsgs(0, -1, func(m protocol.Message) bool {
		if p, ok := m.(*Propose); ok && len(p.Payload.Members) == 4 {
			proposes++
		}
		return false
	}, neverMs)
	s.fireBatch(0)
	s.w.RunTo(300)
	if proposes != 2 {
		t.Fatalf("%d PROPOSEs of a 4-member batch left node 0, want one per peer\n%s", proposes, s.w.Trace())
	}
	var bid txn.ID
	for _, d := range s.logs[0] {
		if txn.IsBatchID(d.id) {
			bid = d.id
		}
	}
	for node := range 3 {
		if n := len(s.logs[node]); n != 2 || s.logs[node][0].id != s.id("T0") || s.logs[node][1].id != bid {
			t.Fatalf("node %d delivered %v, want T0 then the batch %v\n%s", node, s.logs[node], bid, s.w.Trace())
		}
		if e := s.reps[node].entries[bid]; e == nil || len(e.deps) != 1 || e.deps[0] != s.id("T0") {
			t.Fatalf("node %d: the batch's entry %+v, want T0 as its only dependency", node, e)
		}
	}
	for _, name := range []string{"B1", "B3", "B4"} {
		s.wantOutcome(name, txn.Committed)
	}
	s.wantOutcome("B2", txn.Aborted)
	s.checkConverged()
}

// fireBatch ends node's batching window now.
func (s *script) fireBatch(node int) {
	s.reps[node].HandleTimer(timerBatch)
	s.check()
}

// TestInstanceBatchingKeepsPOBInvariants checks the POB invariants of spec §6.1 after every
// event (script) of random schedules with instance batching: 3 or 5 nodes, fast decisions on
// or off, clients at every node committing transactions over four keys, windows closing at
// random times, one-way delays of 2 to 40 ms, and 5% of the messages held back for up to 300 ms
// (out of their link's order). Once the schedule ends every batch closes, and after the nodes
// settle every client has its answer and the stores agree.
func TestInstanceBatchingKeepsPOBInvariants(t *testing.T) {
	keys := []string{"x", "y", "z", "w"}
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 53))
		n := 3 + 2*int(seed%2)
		s := newScript(t, n, seed%4 < 2, protocol.Params{batch.ParamMode: batch.ModeInstance})
		s.w.DelayMs = func(int, int, int64) int64 { return 2 + r.Int64N(39) }
		s.w.Hold = func(_, _ int, sendMs int64, _ protocol.Message) int64 {
			if r.IntN(20) == 0 {
				return sendMs + 1 + r.Int64N(300)
			}
			return 0
		}
		var names []string
		for step := range 80 {
			switch r.IntN(4) {
			case 0, 1:
				name := fmt.Sprintf("T%d", step)
				names = append(names, name)
				s.w.Request(r.IntN(n), name, []string{keys[r.IntN(4)]}, []string{keys[r.IntN(4)]})
			case 2:
				s.fireBatch(r.IntN(n))
			default:
				s.tick()
			}
			s.w.RunTo(s.w.NowMs() + 1 + r.Int64N(5))
		}
		for node := range n {
			s.fireBatch(node)
		}
		s.settle(s.w.NowMs() + 2_000)
		for _, name := range names {
			if _, ok := s.w.Outcome(name); !ok {
				t.Fatalf("seed %d: %s has no answer\n%s", seed, name, s.w.Trace())
			}
		}
		s.checkConverged()
	}
}
