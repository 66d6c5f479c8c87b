package alvin

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestQuiescentUntilEveryNodeDelivered is the mechanism of swarm seed alvin-nf 2176: T1 (key x,
// led by node 0) and T2 (key y, led by node 1) do not conflict; node 1 loses every STABLE of T1
// and nodes 0 and 2 every STABLE of T2 until 400 ms, so at 100 ms each node holds one version and
// version counts alone would end a run there, with node 1 missing T1 and nodes 0 and 2 missing
// T2. Every node must report itself busy (protocol.Quiescer) until retransmissions, fetches or
// recoveries have delivered both everywhere and the reports have collected them.
func TestQuiescentUntilEveryNodeDelivered(t *testing.T) {
	s := newScript(t, 3, false, nil)
	stableOf := func(name string) func(protocol.Message) bool {
		return func(m protocol.Message) bool { st, ok := m.(*Stable); return ok && st.Tid == s.id(name) }
	}
	s.holdMsgs(-1, 1, stableOf("T1"), 400)
	s.holdMsgs(-1, 0, stableOf("T2"), 400)
	s.holdMsgs(-1, 2, stableOf("T2"), 400)
	quiescers := make([]protocol.Quiescer, len(s.reps))
	for i, r := range s.reps {
		q, ok := protocol.Replica(r).(protocol.Quiescer)
		if !ok {
			t.Fatal("ALVIN's replica does not implement protocol.Quiescer: the end of a run cannot wait for its deliveries")
		}
		quiescers[i] = q
	}
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.Request(1, "T2", rw("y"), rw("y"))
	s.settle(100)
	for node, q := range quiescers {
		if v := s.w.Store(node).Versions(); v != s.w.Store(0).Versions() {
			t.Fatalf("node %d holds %d versions, node 0 %d: the scenario needs equal counts\n%s", node, v, s.w.Store(0).Versions(), s.w.Trace())
		}
		if q.Quiescent() {
			t.Fatalf("node %d is quiescent at 100 ms while T1 or T2 is still missing somewhere\n%s", node, s.w.Trace())
		}
	}
	s.settle(1000)
	for node, q := range quiescers {
		if !q.Quiescent() {
			t.Fatalf("node %d is still busy at 1000 ms\n%s", node, s.w.Trace())
		}
	}
	s.wantOutcome("T1", txn.Committed)
	s.wantOutcome("T2", txn.Committed)
	s.checkConverged()
}

// TestSwarmSeedAlvinNF2176 replays the campaign seed that found the missing Quiescer: the run
// ended while node O had not yet received any STABLE of t5.4 (two lost, one delayed by the
// chaos network beyond the one-second settle), with every replica holding as many versions.
func TestSwarmSeedAlvinNF2176(t *testing.T) {
	if _, err := swarm.Check("alvin-nf", swarm.Draw("alvin-nf", 2176)); err != nil {
		t.Fatal(err)
	}
}
