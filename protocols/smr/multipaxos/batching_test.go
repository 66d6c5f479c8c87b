package multipaxos

import (
	"maps"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
)

// TestInstanceBatchOneMemberConflicts (table4.1, leader A; batch_mode=instance): at 100 ms A's
// client commits T0 (read x, write x), which A proposes at once as a batch of one in slot 1; B's
// clients submit B1 (a) and B2 (read x at its initial version, write x), C's client B3 (b), and
// their origins forward them to A, whose open batch takes them (C's at 110 ms, B's at 115). When
// A's window ends at 130 ms the batch goes into ONE slot, 2, and every replica executes it after
// T0, certifying the members one by one: B2 read x before T0 wrote it and aborts alone; B1 and
// B3 commit. The replicas converge.
func TestInstanceBatchOneMemberConflicts(t *testing.T) {
	params := maps.Clone(testParams)
	params[batch.ParamMode] = batch.ModeInstance
	w := newWorld(t, preset(t, "table4.1"), LowestMeanRTT, params)
	w.Start()
	w.run(100)
	a := w.replica(0)
	if !a.IsLeader() {
		t.Fatalf("A does not lead after phase 1\n%s", w.Trace())
	}
	w.Request(1, "B1", []string{"a"}, []string{"a"})
	w.Request(1, "B2", []string{"x"}, []string{"x"})
	w.Request(2, "B3", []string{"b"}, []string{"b"})
	w.Request(0, "T0", []string{"x"}, []string{"x"})
	a.HandleTimer(timerBatch)
	w.run(130)
	if a.batcher.Len() != 3 {
		t.Fatalf("A's open batch holds %d transactions at 130 ms, want B1, B2 and B3\n%s", a.batcher.Len(), w.Trace())
	}
	a.HandleTimer(timerBatch)
	w.run(300)
	if s2 := a.log[2]; s2 == nil || len(s2.txn.Members) != 3 || a.nextSlot != 3 {
		t.Fatalf("A's slot 2: %+v (next %d); want the 3-member batch, and slot 1 T0's\n%s", s2, a.nextSlot, w.Trace())
	}
	w.requireOutcome("T0", txn.Committed, -1)
	w.requireOutcome("B1", txn.Committed, -1)
	w.requireOutcome("B2", txn.Aborted, -1)
	w.requireOutcome("B3", txn.Committed, -1)
	w.requireConverged()
	if c := w.replica(1).CommitIndex(); c != 2 {
		t.Fatalf("B executed up to slot %d, want 2\n%s", c, w.Trace())
	}
}
