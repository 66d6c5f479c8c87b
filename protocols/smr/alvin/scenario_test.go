package alvin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
)

// The deterministic scenarios of spec §6.2, on equal 20 ms RTTs (10 ms one way) unless a
// scenario delays links; the POB invariants of §6.1 are checked after every event (script).

func rw(key string) []string { return []string{key} }

func (s *script) id(name string) txn.ID { return s.w.ID(name) }

func (s *script) wantStable(node int, name string, pos uint64, deps ...string) {
	s.t.Helper()
	e := s.stable(node, name)
	var want []txn.ID
	for _, d := range deps {
		want = append(want, s.id(d))
	}
	slices.Sort(want)
	if e.pos != pos || !slices.Equal(e.deps, want) {
		s.t.Fatalf("%s at node %d: stable (%d, %v), want (%d, %v)\n%s", name, node, e.pos, e.deps, pos, want, s.w.Trace())
	}
}

// TestS1NoConflictFastPath: two non-conflicting transactions both take the fast path at their
// proposals' positions (T1 at 3, T2 at 1) and commit everywhere.
func TestS1NoConflictFastPath(t *testing.T) {
	s := newScript(t, 3, true, nil)
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.Request(1, "T2", rw("y"), rw("y"))
	s.w.RunTo(100)
	for node := range 3 {
		s.wantStable(node, "T1", 3)
		s.wantStable(node, "T2", 1)
	}
	if s.reps[0].stats.FastDecisions != 1 || s.reps[1].stats.FastDecisions != 1 {
		t.Fatalf("fast decisions %+v, %+v, want one each", s.reps[0].stats, s.reps[1].stats)
	}
	s.wantOutcome("T1", txn.Committed)
	s.wantOutcome("T2", txn.Committed)
	s.checkConverged()
}

// TestS2OneFastOneSlow: node 2 answers T2 before T1, so T2 is fast-decided at 1 and T1 takes
// the classic path to (3, {T2}); T2 commits, T1 (which read x before T2 wrote it) aborts.
func TestS2OneFastOneSlow(t *testing.T) {
	s := newScript(t, 3, true, nil)
	s.w.DelayMs = func(from, to int, _ int64) int64 {
		if from == 1 && to == 2 {
			return 5
		}
		return 10
	}
	s.holdMsgs(0, 1, s.proposeOf("T1"), 200)
	s.holdMsgs(1, 0, s.proposeOf("T2"), 200)
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.Request(1, "T2", rw("x"), rw("x"))
	s.w.RunTo(300)
	for node := range 3 {
		s.wantStable(node, "T2", 1)
		s.wantStable(node, "T1", 3, "T2")
	}
	if s.reps[1].stats.FastDecisions != 1 || s.reps[0].stats.SlowDecisions != 1 {
		t.Fatalf("decisions %+v, %+v: want T2 fast, T1 slow", s.reps[0].stats, s.reps[1].stats)
	}
	s.wantOrder("T2", "T1")
	s.wantOutcome("T2", txn.Committed)
	s.wantOutcome("T1", txn.Aborted)
	s.checkConverged()
}

// TestS3MutualDepsRemovalRule: T1 and T2 end with each other in their deps (T1 at 3, T2 at 4);
// every node drops T2 from T1's deps by the removal rule, delivers T1 then T2, and T1 is in T2's
// deps (invariant 3).
func TestS3MutualDepsRemovalRule(t *testing.T) {
	s := newScript(t, 3, false, nil)
	s.w.DelayMs = func(from, to int, _ int64) int64 {
		if from == 2 || to == 2 {
			return 50
		}
		return 10
	}
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.Request(1, "T2", rw("x"), rw("x"))
	s.w.RunTo(300)
	for node := range 3 {
		s.wantStable(node, "T1", 3, "T2")
		s.wantStable(node, "T2", 4, "T1")
	}
	s.wantOrder("T1", "T2")
	s.wantOutcome("T1", txn.Committed)
	s.wantOutcome("T2", txn.Aborted)
	s.checkConverged()
}

// TestS4DeltaDeps: node 3 holds T3 pending at 3 when T1's ACCEPT (5, {}) reaches it, so its
// ACKACCEPT adds T3 and T1 becomes stable at (5, {T3}); T3 is then bumped above 5, so T1 drops
// it and every node delivers T1 before T3.
func TestS4DeltaDeps(t *testing.T) {
	s := newScript(t, 5, false, nil)
	s.holdMsgs(0, 3, s.proposeOf("T1"), 400)
	s.holdMsgs(0, 4, s.proposeOf("T1"), 400)
	isAck := func(m protocol.Message) bool { a, ok := m.(*AckPropose); return ok && a.Tid == s.id("T3") }
	for from := range 3 {
		s.holdMsgs(from, 3, isAck, 100)
	}
	isAccept := func(m protocol.Message) bool { a, ok := m.(*Accept); return ok && a.Tid == s.id("T1") }
	s.holdMsgs(0, 1, isAccept, 400)
	s.holdMsgs(0, 4, isAccept, 400)
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.Request(3, "T3", rw("x"), rw("x"))
	s.w.RunTo(600)
	s.wantStable(0, "T1", 5, "T3")
	if e := s.stable(0, "T3"); e.pos <= 5 {
		t.Fatalf("T3 stable at %d, want above 5", e.pos)
	}
	s.wantOrder("T1", "T3")
	s.checkConverged()
}

// inject puts a pending transaction writing x at node, at pos, as if it had answered the
// PROPOSE of the node with pos's residue in epoch 0, whose leader then stopped.
func (s *script) inject(node int, id txn.ID, pos uint64) {
	r := s.reps[node]
	e := r.entry(id)
	r.setPayload(e, &txn.Txn{ID: id, Reads: []txn.Read{{Key: "x"}}, Writes: []txn.Write{{Key: "x", Value: []byte("inj")}}})
	e.pos, e.status = pos, Pending
	e.hasProposal, e.proposedPos = true, pos
	r.maxSeen = max(r.maxSeen, pos)
}

// TestS5SameLeaderTie: T_a and T_b of node 1 end at the same position 7 with each other in
// their deps; the key (pos, tid) orders T_a first everywhere (T_a drops T_b, T_b waits for T_a),
// where a position-only comparison would deadlock. T_c and T_d, left pending by stopped leaders,
// are recovered by the ticks.
func TestS5SameLeaderTie(t *testing.T) {
	s := newScript(t, 3, false, nil)
	tc, td := txn.NewID(900, 1), txn.NewID(901, 1)
	s.inject(0, tc, 6)
	s.inject(2, td, 5)
	s.holdMsgs(1, 2, s.proposeOf("Ta"), 300)
	s.holdMsgs(1, 0, s.proposeOf("Tb"), 300)
	s.w.Request(1, "Ta", rw("x"), rw("x"))
	s.w.Request(1, "Tb", rw("x"), rw("x"))
	s.w.RunTo(100)
	ea, eb := s.stable(1, "Ta"), s.stable(1, "Tb")
	if ea.pos != 7 || eb.pos != 7 || !slices.Contains(ea.deps, s.id("Tb")) || !slices.Contains(eb.deps, s.id("Ta")) {
		t.Fatalf("Ta (%d, %v), Tb (%d, %v): want both at 7 with mutual deps\n%s", ea.pos, ea.deps, eb.pos, eb.deps, s.w.Trace())
	}
	s.settle(3000)
	s.wantOrder("Ta", "Tb")
	s.checkConverged()
}

// TestS8RecoveryFromAccepted: node 0's ACCEPT(T1, 3, {}) reaches node 1 only, then node 0
// crashes; node 2 recovers in epoch 2, finds the accepted value and re-accepts it, and T1 is
// delivered at 3 at nodes 1 and 2, committed.
func TestS8RecoveryFromAccepted(t *testing.T) {
	s := newScript(t, 3, false, nil)
	isAccept := func(m protocol.Message) bool { _, ok := m.(*Accept); return ok }
	s.holdMsgs(0, 2, isAccept, neverMs)
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.RunTo(20) // T1 decided (3, {}) at node 0, ACCEPT sent
	s.crashed[0] = true
	for now := int64(30); now < 1500; now += 10 {
		s.w.RunTo(now)
		s.w.Send(2) // only node 2 suspects node 0
	}
	for _, node := range []int{1, 2} {
		s.wantStable(node, "T1", 3)
		if i := s.order(node, "T1"); i < 0 || !s.logs[node][i].committed {
			t.Fatalf("node %d: T1 not delivered committed: %v", node, s.logs[node])
		}
	}
	if e := s.reps[2].entries[s.id("T1")]; e.promised != 2 || s.reps[2].stats.Recoveries != 1 {
		t.Fatalf("node 2 recovered in epoch %d (%d recoveries), want epoch 2 once", e.promised, s.reps[2].stats.Recoveries)
	}
	s.checkConverged()
}

// TestS9RecoveryRestartsProposal: node 0 crashes after its PROPOSE reached node 1 only. The
// spec lets node 2 recover; in Meridian a node recovers the transactions it knows of, and node 2
// has never heard of T1, so node 1 does (epoch 1): it sees only a pending T1 and restarts the
// proposal with its own residue above the position it answered (3): 4. T1 is delivered at 4 by
// nodes 1 and 2.
func TestS9RecoveryRestartsProposal(t *testing.T) {
	s := newScript(t, 3, false, nil)
	s.holdMsgs(0, 2, anyMsg, neverMs)
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.RunTo(5)
	s.crashed[0] = true
	for now := int64(10); now < 1500; now += 10 {
		s.w.RunTo(now)
		s.w.Send(1)
		s.w.Send(2)
	}
	s.wantStable(1, "T1", 4)
	s.wantStable(2, "T1", 4)
	if e := s.reps[1].entries[s.id("T1")]; e.promised != 1 {
		t.Fatalf("T1 recovered in epoch %d, want 1", e.promised)
	}
	s.wantOrder("T1")
	s.checkConverged()
}

// TestS9NoOp: the PROPOSE of T1 reached only node 1, and T2 (proposed after T1, so T1 is in its
// deps) became stable everywhere; then nodes 0 and 1 crash (N = 5, f = 2). Nobody alive knows
// T1's payload, so recovery decides it as a NO-OP and T2 is delivered.
func TestS9NoOp(t *testing.T) {
	s := newScript(t, 5, false, nil)
	for to := 2; to < 5; to++ {
		s.holdMsgs(0, to, s.proposeOf("T1"), neverMs)
	}
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.Request(0, "T2", rw("x"), rw("x"))
	s.w.RunTo(60)
	s.wantStable(2, "T2", s.stable(0, "T2").pos, "T1")
	s.crashed[0], s.crashed[1] = true, true
	s.settle(3000)
	for node := 2; node < 5; node++ {
		if e := s.reps[node].entries[s.id("T1")]; e == nil || !e.noop || !e.delivered {
			t.Fatalf("node %d: T1 is not a delivered NO-OP: %+v", node, e)
		}
		if s.order(node, "T2") < 0 {
			t.Fatalf("node %d did not deliver T2", node)
		}
	}
	s.checkConverged()
}

// s10 runs spec S10's start (N = 5, fast on, FQ = CQ = 3): node 0 proposes T1 at 5; the
// PROPOSE reaches node 3 and the nodes in reached; node 0 fast-decides if it can and crashes
// before its STABLE leaves; node 3 recovers alone, node 1's PROMISE arriving only at 500 ms.
// Node 3 holds a pending conflicting T0 at 7, so its own answer (10, {T0}) disagrees with the
// proposal: it is the recoverer of the spec, which knows T1 but cannot vouch for it.
func s10(t *testing.T, reached ...int) *script {
	s := newScript(t, 5, true, nil)
	s.inject(3, txn.NewID(900, 1), 7)
	reached = append(reached, 3)
	for to := 1; to < 5; to++ {
		if !slices.Contains(reached, to) {
			s.holdMsgs(0, to, s.proposeOf("T1"), neverMs)
		}
	}
	isStable := func(m protocol.Message) bool { _, ok := m.(*Stable); return ok }
	s.holdMsgs(0, -1, isStable, neverMs)
	s.holdMsgs(1, 3, func(m protocol.Message) bool { _, ok := m.(*Promise); return ok }, 500)
	s.holdMsgs(3, 0, anyMsg, neverMs) // node 3's late answer never counts
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.RunTo(20)
	s.crashed[0] = true
	for now := int64(30); now < 2000; now += 10 {
		s.w.RunTo(now)
		s.w.Send(3)
	}
	return s
}

// TestS10FastDecisionRecovery: nodes 1 and 2 agreed with T1's proposal, so node 0 fast-decided
// it. Node 3's first quorum {2, 3, 4} shows one agreeing node and one unheard: ambiguous, so
// it waits; node 1 agrees too, so it adopts (SAFE-ADOPT) and T1 is delivered at 5 everywhere.
func TestS10FastDecisionRecovery(t *testing.T) {
	s := s10(t, 1, 2)
	if s.reps[0].stats.FastDecisions != 1 {
		t.Fatalf("node 0 did not fast-decide T1: %+v", s.reps[0].stats)
	}
	for node := 1; node < 5; node++ {
		s.wantStable(node, "T1", 5)
	}
	s.wantOrder("T1")
}

// TestS10VariantNoFastDecision: only node 2 agreed, so no fast decision was possible; once
// node 1's PROMISE (it never saw T1) arrives, node 3 restarts (SAFE-RESTART) with its own
// residue 3, above everything it knows (T0 included, which node 3 recovers meanwhile).
func TestS10VariantNoFastDecision(t *testing.T) {
	s := s10(t, 2)
	if s.reps[0].stats.FastDecisions != 0 {
		t.Fatalf("node 0 fast-decided T1 without a fast quorum: %+v", s.reps[0].stats)
	}
	pos := s.stable(1, "T1").pos
	if pos%5 != 3 || pos <= 10 {
		t.Fatalf("T1 restarted at %d, want residue 3 above 10", pos)
	}
	for node := 1; node < 5; node++ {
		if e := s.stable(node, "T1"); e.pos != pos {
			t.Fatalf("node %d: T1 at %d, node 1 at %d", node, e.pos, pos)
		}
	}
	s.wantOrder("T1")
}

// s11 runs spec S11: T_x of node 1 is delivered at nodes 0 and 1 while every message from node
// 1 to node 2 is held until 300 ms; then node 0 broadcasts T_y, which also writes x.
func s11(t *testing.T, params protocol.Params) *script {
	s := newScript(t, 3, false, params)
	s.w.AfterEvent = nil // the negative control breaks invariant 1; the test checks at the end
	s.holdMsgs(1, 2, anyMsg, 300)
	s.w.Request(1, "Tx", nil, rw("x"))
	s.w.RunTo(60)
	if s.order(0, "Tx") < 0 || s.order(1, "Tx") < 0 || s.order(2, "Tx") >= 0 {
		t.Fatalf("T_x should be delivered at nodes 0 and 1 only: %v\n%s", s.logs, s.w.Trace())
	}
	s.w.Request(0, "Ty", nil, rw("x"))
	s.w.RunTo(600)
	return s
}

// TestS11GCSafety: T_x, delivered at nodes 0 and 1 but not at node 2, is not collected, so it
// is in T_y's deps and node 2 delivers T_x before T_y. The negative control, in which
// conflicts() skips locally delivered transactions, breaks invariant 1 on the same schedule.
func TestS11GCSafety(t *testing.T) {
	s := s11(t, nil)
	if e := s.stable(2, "Ty"); !slices.Contains(e.deps, s.id("Tx")) {
		t.Fatalf("T_y's deps %v lack T_x", e.deps)
	}
	s.wantOrder("Tx", "Ty")
	if v := s.violations(); len(v) > 0 {
		t.Fatal(v)
	}
	s.checkConverged()

	broken := s11(t, protocol.Params{ParamUnsafeSkipDelivered: "true"})
	if v := broken.violations(); len(v) == 0 || broken.order(2, "Ty") > broken.order(2, "Tx") {
		t.Fatalf("the negative control kept the order (violations %v)\n%s", v, broken.w.Trace())
	}
}

// TestQuorumSizes is invariant 11: the table of §1.5 (and the even case N = 6).
func TestQuorumSizes(t *testing.T) {
	for _, c := range []struct{ n, cq, fqOff, fqOn int }{
		{3, 2, 2, 2}, {5, 3, 3, 3}, {7, 4, 4, 5}, {9, 5, 5, 6}, {15, 8, 8, 11}, {21, 11, 11, 15}, {6, 4, 4, 4},
	} {
		cq, fqOff := Quorums(c.n, false)
		_, fqOn := Quorums(c.n, true)
		if cq != c.cq || fqOff != c.fqOff || fqOn != c.fqOn {
			t.Errorf("N=%d: CQ %d, FQ off %d, FQ on %d; want %d, %d, %d", c.n, cq, fqOff, fqOn, c.cq, c.fqOff, c.fqOn)
		}
	}
}

// TestS8RecovererCrashesMidRecovery: as S8 on five nodes, but the first recoverer (node 2,
// epoch 2) crashes after its ACCEPT reached node 3 only; node 4 recovers in a higher epoch,
// finds the value accepted in epoch 2 (the highest) and finishes: T1 is delivered at its
// position by every live node.
func TestS8RecovererCrashesMidRecovery(t *testing.T) {
	s := newScript(t, 5, false, nil)
	isAccept := func(m protocol.Message) bool { _, ok := m.(*Accept); return ok }
	for _, to := range []int{2, 3, 4} {
		s.holdMsgs(0, to, isAccept, neverMs)
	}
	for _, to := range []int{1, 4} {
		s.holdMsgs(2, to, isAccept, neverMs)
	}
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.RunTo(20)
	s.crashed[0] = true
	for now := int64(30); !s.crashed[2]; now += 10 {
		if now > 2000 {
			t.Fatalf("node 2 never re-accepted T1\n%s", s.w.Trace())
		}
		s.w.RunTo(now)
		s.w.Send(2)
		if l := s.reps[2].leads[s.id("T1")]; l != nil && l.phase == accepting {
			s.crashed[2] = true
		}
	}
	s.w.RunTo(s.w.NowMs() + 20) // node 2's ACCEPT reaches node 3
	if e := s.reps[3].entries[s.id("T1")]; e.status != Accepted || e.accEpoch != 2 {
		t.Fatalf("node 3 did not accept T1 in epoch 2: %+v", e)
	}
	for now := s.w.NowMs(); now < 4000; now += 10 {
		s.w.RunTo(now)
		s.w.Send(4)
	}
	for _, node := range []int{1, 3, 4} {
		s.wantStable(node, "T1", 5)
	}
	if e := s.reps[4].entries[s.id("T1")]; e.promised <= 2 || e.promised%5 != 4 {
		t.Fatalf("node 4 recovered in epoch %d, want one of its own above 2", e.promised)
	}
	s.wantOrder("T1")
	s.checkConverged()
}

// s6Run is spec S6's schedule and what the history needs of it.
type s6Run struct {
	*script
	eus   bool
	reads map[string][]txn.Read // per transaction, the versions it read
}

// request submits name at dc, remembering the versions its reads see now.
func (s *s6Run) request(dc int, name string, reads, writes []string) {
	for _, k := range reads {
		s.reads[name] = append(s.reads[name], txn.Read{Key: k, Version: s.w.Store(dc).Get(k).Writer})
	}
	s.w.Request(dc, name, reads, writes)
}

// s6 runs spec S6's schedule with read-only mode reads: T_h@0 writes a, T_k@1 writes b; node 0
// delivers T_h then T_k, node 2 T_k then T_h (node 0's link to node 2 is slow); the read-only
// T_q begins at node 0 between its two deliveries, T_w at node 2 between its own.
func s6(t *testing.T, reads string) *s6Run {
	s := &s6Run{script: newScript(t, 3, true, protocol.Params{ParamReads: reads}), eus: reads == "eus", reads: map[string][]txn.Read{}}
	s.w.DelayMs = func(from, to int, _ int64) int64 {
		switch {
		case from == 0 && to == 2:
			return 50
		case from == 1 && to == 2:
			return 5
		}
		return 10
	}
	s.request(0, "Th", rw("a"), rw("a"))
	s.request(1, "Tk", rw("b"), rw("b"))
	s.w.RunTo(22)                               // node 0 delivered T_h at 20; T_k's STABLE arrives at 25
	s.request(0, "Tq", []string{"a", "b"}, nil) // at node 0: a new, b old
	s.w.RunTo(40)                               // node 2 delivered T_k at 20; T_h's STABLE arrives at 70
	s.request(2, "Tw", []string{"a", "b"}, nil) // at node 2: b new, a old
	s.settle(1000)
	return s
}

// TestS6EUSAnomalyAllowedSRForbids: under reads=eus both read-only transactions commit at once
// and together they see T_h and T_k in opposite orders: not serializable (the checker's global
// check finds the G2 cycle), but allowed by EUS, which is what the registry tells the checker
// (each datacenter's snapshots with the updates: clean). Under reads=sr both go through POB and
// at least one of them aborts.
func TestS6EUSAnomalyAllowedSRForbids(t *testing.T) {
	s := s6(t, "eus")
	s.wantOutcome("Tq", txn.Committed)
	s.wantOutcome("Tw", txn.Committed)
	if q, w := s.reads["Tq"], s.reads["Tw"]; q[0].Version != s.id("Th") || q[1].Version != txn.None || w[0].Version != txn.None || w[1].Version != s.id("Tk") {
		t.Fatalf("the schedule did not produce the long fork: T_q read %v, T_w read %v", q, w)
	}
	h := s.history()
	if rep := checker.Check(h, checker.Options{Model: checker.Serializable}); rep.OK || rep.Counts[checker.KindG2] == 0 {
		t.Fatalf("the global check should find the long fork: %s", rep.Summary())
	}
	if rep := checker.Check(h, checker.Options{Model: checker.Serializable, SnapshotsPerDC: true}); !rep.OK {
		t.Fatalf("EUS, checked per datacenter: %s", rep.Summary())
	}

	s = s6(t, "sr")
	oq, _ := s.w.Outcome("Tq")
	ow, _ := s.w.Outcome("Tw")
	if oq.Status == txn.Committed && ow.Status == txn.Committed {
		t.Fatalf("under SR both read-only transactions committed\n%s", s.w.Trace())
	}
	if rep := checker.Check(s.history(), checker.Options{Model: checker.Serializable}); !rep.OK {
		t.Fatalf("SR: %s", rep.Summary())
	}
}

// history is the run's history as the bench records it (committed read-only transactions of an
// EUS run marked as snapshots: registry.Entry.ReadOnlyCommitsAreSnapshots), with the replicas'
// version orders.
func (s *s6Run) history() *history.History {
	h := &history.History{}
	for node := range s.reps {
		h.Replicas = append(h.Replicas, history.Replica{Name: fmt.Sprint(node), VersionOrder: s.w.Store(node).VersionOrder()})
	}
	for _, c := range []struct {
		name, dc string
		writes   []string
	}{{"Th", "0", rw("a")}, {"Tk", "1", rw("b")}, {"Tq", "0", nil}, {"Tw", "2", nil}} {
		o, _ := s.w.Outcome(c.name)
		h.Txns = append(h.Txns, history.Txn{ID: s.id(c.name), DC: c.dc, Client: c.name, Status: o.Status, Reads: s.reads[c.name],
			Writes: c.writes, Snapshot: s.eus && o.Status == txn.Committed && len(c.writes) == 0})
	}
	return h
}

// TestFastPathTimeoutA14: with seven nodes FQ = 5 > CQ = 4; nodes 4, 5 and 6 are down, so only
// a classic quorum answers T1's PROPOSE. After τ_fast (twice the RTT to the fourth closest
// node) the leader takes the classic path with the answers in hand (spec A14), and T1 commits.
func TestFastPathTimeoutA14(t *testing.T) {
	s := newScript(t, 7, true, nil)
	for _, node := range []int{4, 5, 6} {
		s.crashed[node] = true
	}
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.RunTo(30)
	if l := s.reps[0].leads[s.id("T1")]; l == nil || l.phase != proposing || l.count != 4 {
		t.Fatalf("T1 should wait for a fast quorum with 4 answers: %+v", l)
	}
	for now := int64(30); now <= 200; now += 10 {
		s.w.RunTo(now)
		s.w.Send(0)
	}
	for node := range 4 {
		s.wantStable(node, "T1", 7)
	}
	if st := s.reps[0].stats; st.FastDecisions != 0 || st.SlowDecisions != 1 {
		t.Fatalf("decisions %+v, want one classic", st)
	}
	s.wantOutcome("T1", txn.Committed)
}
