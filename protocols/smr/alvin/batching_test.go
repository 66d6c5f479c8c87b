package alvin

import (
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
