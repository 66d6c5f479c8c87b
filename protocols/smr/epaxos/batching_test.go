package epaxos

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
)

// TestInstanceBatchOneMemberConflicts (batch_mode=instance): R1's T0 (read x, write x) and R2's
// T9 (write c) commit and execute everywhere first, each a batch of one in its own instance.
// R0's clients then submit B1 (a), B2 (read x at its initial version, write x) and B3 (blind
// write c) into R0's open batch; when the window ends the batch is ONE instance whose
// command is the batch and whose deps are the union of its members' conflicts: T0's instance
// (through B2) and T9's (through B3). Executing it validates the members one by one: B2 read x
// before T0 wrote it and aborts alone, B1 and B3 commit. R0 restarts from its recorded inputs
// (the batch timer among them) and rebuilds the same state; the replicas agree and converge.
func TestInstanceBatchOneMemberConflicts(t *testing.T) {
	w := newWorld(t, 3, protocol.Params{batch.ParamMode: batch.ModeInstance})
	w.submit(1, "T0", x, x)
	w.fireBatch(1)
	w.submit(2, "T9", nil, []string{"c"})
	w.fireBatch(2)
	w.settle()
	w.submit(0, "B1", []string{"a"}, []string{"a"})
	w.submit(0, "B2", x, x)
	w.submit(0, "B3", nil, []string{"c"})
	w.fireBatch(0)
	batchInst := Instance{Replica: 0, Slot: 1}
	var preAccepts int
	for _, e := range w.queue {
		if p, ok := e.m.(*PreAccept); ok && p.Inst == batchInst && len(p.Cmd.Members) == 3 {
			preAccepts++
		}
	}
	if preAccepts != 2 {
		t.Fatalf("%d PreAccepts of a 3-member batch in %v queued, want one per peer", preAccepts, batchInst)
	}
	w.settle()
	want := []Instance{{Replica: 1, Slot: 1}, {Replica: 2, Slot: 1}}
	for dc, r := range w.reps {
		if e := r.insts[batchInst]; e == nil || e.status != Executed || !slices.Equal(e.Deps, want) {
			t.Fatalf("R%d: the batch's instance %+v, want executed with deps %v", dc, e, want)
		}
	}
	for name, status := range map[string]txn.Status{"T0": txn.Committed, "T9": txn.Committed, "B1": txn.Committed, "B2": txn.Aborted, "B3": txn.Committed} {
		if got := w.outcome(name); got != status {
			t.Fatalf("%s: %v, want %v", name, got, status)
		}
	}
	w.crash(0)
	w.restart(0)
	w.settle()
	w.checkInvariants()
}

// TestInstanceBatchNoOpAbortsEveryMember is TestRecoveryDecidesNoOpForCommandNobodyHolds with a
// batch: R0's batch γ (T1: read x, write x; T2: write y) loses every PreAccept, its next
// instance γ2 (T3, a batch of one, conflicting with T1) reaches R1 and R2, and R0 crashes. R1
// recovers γ2, needs γ, and no replica holds γ's command: γ becomes a no-op. When R0 restarts
// and learns it, both members' clients get an abort (ReasonNoOp), and T3 commits.
func TestInstanceBatchNoOpAbortsEveryMember(t *testing.T) {
	w := newWorld(t, 3, protocol.Params{batch.ParamMode: batch.ModeInstance})
	w.submit(0, "T1", x, x)
	w.submit(0, "T2", nil, []string{"y"})
	w.fireBatch(0)
	gamma := Instance{Replica: 0, Slot: 1}
	w.drop(func(envelope) bool { return true })
	w.submit(0, "T3", nil, x)
	w.fireBatch(0)
	gamma2 := Instance{Replica: 0, Slot: 2}
	w.deliver(is[*PreAccept])
	w.drop(func(envelope) bool { return true })
	w.crash(0)

	r1 := w.reps[1]
	r1.startRecovery(gamma2, r1.insts[gamma2])
	w.deliver(nil)
	w.until(func() bool { return r1.insts[gamma2].status == Executed })
	if e := r1.insts[gamma]; e == nil || e.status != Executed || !e.noop {
		t.Fatalf("γ at R1: %+v; want an executed no-op", e)
	}
	w.restart(0)
	w.settle()
	w.checkInvariants()
	for _, name := range []string{"T1", "T2"} {
		if rs := w.replies[w.names[name]]; len(rs) != 1 || rs[0].Status != txn.Aborted || rs[0].Reason != ReasonNoOp {
			t.Fatalf("%s's client got %+v, want one abort for %s", name, rs, ReasonNoOp)
		}
	}
	if w.outcome("T3") != txn.Committed {
		t.Fatal("T3 did not commit")
	}
}
