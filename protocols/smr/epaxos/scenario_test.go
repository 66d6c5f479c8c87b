package epaxos

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

var x = []string{"x"}

// TestRecoveryKeepsDependencyUnderAsymmetricPreAcceptLoss is the first safety report against
// the best-known public Go EPaxos: a dependency lost during recovery when PreAccepts are lost
// asymmetrically. N = 5 (CQ = FQ = 3).
//
//  1. R0 leads γ (T1: read x, write x). Its PreAccept reaches R1 only; R1's reply is lost; R0
//     crashes. R1 holds γ PreAccepted, unchanged, with deps {}.
//  2. R4 leads δ (T2: read x, write x). Its PreAccept reaches R2 and R3, which never saw γ: all
//     unchanged, so δ commits on the fast path with deps {} everywhere.
//  3. R1 recovers γ. Promises from R1, R2, R3: one unchanged reply, and R4 unheard could be a
//     second, which with R0 would make a fast quorum: R1 must not adopt, nor restart yet (rule
//     4). It sends TryPreAccept of γ's ballot-0 value to R2 and R3, which refuse: they hold δ
//     committed, interfering, and neither reaches the other through committed deps, which a
//     fast commit of γ would have prevented. That proves γ was not fast-committed, so R1
//     restarts Phase 1 without waiting for R4.
//
// A recovery that adopted R1's PreAccepted attributes (deps {}) would commit γ and δ, which
// interfere, with neither in the other's deps, and replicas could execute them in either order.
// Ours re-runs Phase 1 at its ballot, and R1, which knows δ, adds it: γ's deps contain δ, every
// replica executes δ then γ, T2 commits and T1 aborts everywhere. (Before TryPreAccept, R1
// waited here for R4's promise.)
func TestRecoveryKeepsDependencyUnderAsymmetricPreAcceptLoss(t *testing.T) {
	w := newWorld(t, 5, nil)
	gamma := w.submit(0, "T1", x, x)
	w.deliver(and(is[*PreAccept], between(0, 1)))
	w.drop(func(e envelope) bool { return e.from == 0 || e.to == 0 })
	w.crash(0)

	delta := w.submit(4, "T2", x, x)
	w.drop(and(is[*PreAccept], between(4, 1)))
	w.deliver(about(delta))
	if e := w.reps[4].insts[delta]; e.status != Executed || len(e.Deps) != 0 || w.reps[4].stats.FastCommits != 1 {
		t.Fatalf("δ at R4: status %d deps %v fast %d; want fast-committed with no deps", e.status, e.Deps, w.reps[4].stats.FastCommits)
	}

	r1 := w.reps[1]
	r1.startRecovery(gamma, r1.insts[gamma])
	var refusals []*TryPreAcceptReply
	w.deliver(func(e envelope) bool {
		if m, ok := e.m.(*TryPreAcceptReply); ok && e.to == 1 {
			refusals = append(refusals, m)
		}
		return e.to != 4 && e.from != 4
	})
	if len(refusals) != 2 || !refusals[0].Impossible || !refusals[1].Impossible {
		t.Fatalf("TryPreAccept replies to R1 %+v; want R2's and R3's refusals proving no fast commit", refusals)
	}
	g := r1.insts[gamma]
	if g.status != Executed || !slices.Contains(g.Deps, delta) {
		t.Fatalf("γ at R1 without R4: status %d deps %v; want executed with δ %v among its deps", g.status, g.Deps, delta)
	}
	w.deliver(nil)
	if g.status != Executed || !slices.Contains(g.Deps, delta) {
		t.Fatalf("γ at R1: status %d deps %v; want executed with δ %v among its deps", g.status, g.Deps, delta)
	}
	w.restart(0)
	w.settle()
	w.checkInvariants()
	if w.outcome("T2") != txn.Committed || w.outcome("T1") != txn.Aborted {
		t.Fatalf("T1 %v, T2 %v; want T2 committed, then T1 aborted (it read x before T2's write)", w.outcome("T1"), w.outcome("T2"))
	}
}

// TestRestartedReplicaRemembersPreAccept is the second report: PreAccept replies that are not
// durable let two conflicting commands both commit on the fast path. N = 3 (FQ = 2).
//
//  1. R0 leads γ (T1: read x, write x); R1 answers unchanged, so R0 commits γ on the fast path,
//     executes it and tells its client "committed". Its Commits are lost and R0 crashes.
//  2. R1 crashes and restarts.
//  3. R2 leads δ (T2: read x, write x) and asks R1 (R0 is down). A restarted R1 that forgot γ
//     would answer unchanged, δ would fast-commit with deps {}, and R2 would execute T2 before
//     T1 against R0's answer. The control at the end shows exactly that reply from a replica with
//     no memory.
//
// Our drivers log every input before releasing its effects and replay the log at restart, so R1
// still holds γ: it answers δ with γ in deps (changed), δ takes the slow path with deps {γ}, R2
// recovers γ (adopting R1's unchanged ballot-0 attributes: with FQ−1 = 1 that is a whole fast
// quorum of evidence) and executes γ before δ; T1 stays committed and T2 aborts everywhere.
func TestRestartedReplicaRemembersPreAccept(t *testing.T) {
	w := newWorld(t, 3, nil)
	gamma := w.submit(0, "T1", x, x)
	w.deliver(and(is[*PreAccept], between(0, 1)))
	w.deliver(is[*PreAcceptReply])
	w.drop(func(e envelope) bool { return e.from == 0 })
	if w.outcome("T1") != txn.Committed || w.reps[0].stats.FastCommits != 1 {
		t.Fatalf("T1: %v after %d fast commits, want committed on the fast path", w.outcome("T1"), w.reps[0].stats.FastCommits)
	}
	w.crash(0)
	w.crash(1)
	w.restart(1)

	delta := w.submit(2, "T2", x, x)
	preAccept := w.queue[slices.IndexFunc(w.queue, and(is[*PreAccept], between(2, 1)))].m
	w.deliver(and(is[*PreAccept], between(2, 1)))
	reply := w.queue[slices.IndexFunc(w.queue, is[*PreAcceptReply])].m.(*PreAcceptReply)
	if reply.Unchanged || !slices.Contains(reply.Deps, gamma) {
		t.Fatalf("restarted R1 answered δ with %+v; want γ %v in deps, changed", reply, gamma)
	}
	w.deliver(nil)
	w.until(func() bool { return w.reps[2].insts[delta].status == Executed })
	if d := w.reps[2].insts[delta]; d.status != Executed || !slices.Contains(d.Deps, gamma) {
		t.Fatalf("δ at R2: status %d deps %v; want executed after γ", d.status, d.Deps)
	}
	w.restart(0)
	w.settle()
	w.checkInvariants()
	if w.outcome("T1") != txn.Committed || w.outcome("T2") != txn.Aborted {
		t.Fatalf("T1 %v, T2 %v; want T1 committed (as R0 answered before crashing) and T2 aborted", w.outcome("T1"), w.outcome("T2"))
	}

	// The control: a replica without the logged PreAccept answers δ unchanged, which would have
	// let δ take the fast path with no dependency on γ.
	amnesiac := newWorld(t, 3, nil)
	amnesiac.handle(2, 1, preAccept)
	if r := amnesiac.queue[0].m.(*PreAcceptReply); !r.Unchanged || len(r.Deps) != 0 {
		t.Fatalf("a replica with no memory answered %+v; the control expects unchanged, no deps", r)
	}
}

// TestLateCommitDoesNotOverwriteExecutedInstance is the third report: an executed instance
// overwritten by a late Commit. After γ (T1) is committed and executed everywhere, R1 receives
// a duplicate of γ's PreAccept, a late Accept of a no-op at a recovery ballot, a Prepare, a
// Commit claiming a no-op and a duplicate of the real Commit. None may change γ at R1 (still
// executed, same value), execute it again or touch the store; R1 answers each request with the
// real Commit, and T1's client got exactly one answer.
func TestLateCommitDoesNotOverwriteExecutedInstance(t *testing.T) {
	w := newWorld(t, 3, nil)
	gamma := w.submit(0, "T1", x, x)
	w.settle()
	r1 := w.reps[1]
	before := *r1.insts[gamma]
	versions := r1.env.Store().Versions()
	cmd := before.cmd

	w.handle(0, 1, &PreAccept{Inst: gamma, Ballot: 0, Cmd: cmd})
	w.handle(2, 1, &Accept{Inst: gamma, Ballot: 2, NoOp: true})
	w.handle(2, 1, &Prepare{Inst: gamma, Ballot: 5})
	w.handle(2, 1, &Commit{Inst: gamma, NoOp: true})
	w.handle(0, 1, &Commit{Inst: gamma, Cmd: cmd, Attrs: before.Attrs})
	after := r1.insts[gamma]
	if after.status != Executed || after.noop || after.cmd != cmd || after.Seq != before.Seq || !slices.Equal(after.Deps, before.Deps) || after.ballot != before.ballot {
		t.Fatalf("γ at R1 changed: before %+v, after %+v", before, *after)
	}
	if got := r1.env.Store().Versions(); got != versions {
		t.Fatalf("R1's store went from %d to %d versions: γ was executed again", versions, got)
	}
	answers := 0
	for _, e := range w.queue {
		if e.from != 1 {
			continue
		}
		switch m := e.m.(type) {
		case *Commit:
			if m.NoOp || m.Cmd != cmd {
				t.Fatalf("R1 answered with a different Commit %+v", m)
			}
			answers++
		case *AcceptReply, *PrepareReply, *PreAcceptReply:
			t.Fatalf("R1 answered %T %+v for an executed instance", m, m)
		}
	}
	if answers != 3 {
		t.Fatalf("R1 answered %d of the 3 late requests with the Commit", answers)
	}
	w.settle()
	w.checkInvariants()
	if w.outcome("T1") != txn.Committed {
		t.Fatal("T1 not committed")
	}
}

// TestExecutionCompletesAcrossCyclesAndWaitingChains is the fourth report: a deadlock in the
// SCC execution. R1 learns committed instances whose dependency graph has two cycles, in two
// components, above a chain that ends at an instance that is not committed anywhere (its leader
// R2 crashed after pre-accepting it at R0 and R1):
//
//	A=0.1 → B=1.1 → A      (component {A, B})
//	B → C=2.1 → D=2.2 → C  (component {C, D})
//	D → E=0.2 → F=1.2 → G=2.3 (G only pre-accepted)
//
// The Commits arrive at R1 in the worst order (A first, whose whole graph is unknown; each
// later one waits on something that is itself waiting). Nothing may execute while G is
// uncommitted, and nothing may stay stuck once it is: R1 watches G, recovers it, and then
// executes G, F, E, {C, D} by seq, {A, B} by (seq, replica). R0 gets the Commits in the opposite
// order and must execute the same sequence.
func TestExecutionCompletesAcrossCyclesAndWaitingChains(t *testing.T) {
	w := newWorld(t, 3, nil)
	cmd := func(name string) *txn.Txn {
		id := txn.NewID(txn.ClientID(100+len(w.names)), 1)
		w.names[name] = id
		return &txn.Txn{ID: id, Writes: []txn.Write{{Key: "order", Value: []byte(name)}}}
	}
	inst := func(r uint32, s uint64) Instance { return Instance{Replica: r, Slot: s} }
	a, b, c, d, e, f, g := inst(0, 1), inst(1, 1), inst(2, 1), inst(2, 2), inst(0, 2), inst(1, 2), inst(2, 3)
	gCmd := cmd("G")
	for _, to := range []int{0, 1} {
		w.handle(2, to, &PreAccept{Inst: g, Cmd: gCmd})
	}
	w.crash(2)
	w.drop(func(envelope) bool { return true })
	commits := []*Commit{
		{Inst: a, Cmd: cmd("A"), Attrs: Attrs{Seq: 1, Deps: []Instance{b}}},
		{Inst: b, Cmd: cmd("B"), Attrs: Attrs{Seq: 1, Deps: []Instance{a, c}}},
		{Inst: c, Cmd: cmd("C"), Attrs: Attrs{Seq: 2, Deps: []Instance{d}}},
		{Inst: d, Cmd: cmd("D"), Attrs: Attrs{Seq: 3, Deps: []Instance{e, c}}},
		{Inst: e, Cmd: cmd("E"), Attrs: Attrs{Seq: 1, Deps: []Instance{f}}},
		{Inst: f, Cmd: cmd("F"), Attrs: Attrs{Seq: 1, Deps: []Instance{g}}},
	}
	slices.SortFunc(commits[3].Deps, Instance.cmp)
	for _, m := range commits {
		w.handle(0, 1, m)
	}
	for k := len(commits) - 1; k >= 0; k-- {
		w.handle(1, 0, commits[k])
	}
	for dc := range 2 {
		if n := w.reps[dc].env.Store().Versions(); n != 0 {
			t.Fatalf("R%d executed %d instances while G is uncommitted", dc, n)
		}
		if !w.reps[dc].watch[g] {
			t.Fatalf("R%d does not watch the instance its execution waits for", dc)
		}
	}
	w.drop(func(envelope) bool { return true })
	w.until(func() bool { return w.reps[1].insts[g].status >= Committed })
	w.restart(2)
	for _, m := range commits {
		w.handle(0, 2, m)
	}
	w.settle()
	want := []txn.ID{w.names["G"], w.names["F"], w.names["E"], w.names["C"], w.names["D"], w.names["A"], w.names["B"]}
	for dc := range 3 {
		if got := w.reps[dc].env.Store().VersionOrder()["order"]; !slices.Equal(got, want) {
			t.Fatalf("R%d executed %v, want %v (G, F, E, then {C, D} and {A, B} by seq and replica)", dc, got, want)
		}
	}
	if s := w.reps[1].stats.SCCSizes; s[1] != 3 || s[2] != 2 {
		t.Fatalf("R1's component sizes %v, want three singletons and two pairs", s)
	}
	w.checkInvariants()
}

// TestRecovererCrashesMidRecovery: a command leader crashes, and so does the replica recovering
// its instance, after its Accept reached one replica. N = 5. R0's γ is pre-accepted unchanged
// at R1 and R2; R0 crashes. R1 recovers: promises from R1, R2 (unchanged) and R3 are a fast
// quorum's evidence with R0, so R1 adopts γ's attributes and sends Accept, which reaches R2
// only; R1 crashes. R3 recovers at a higher ballot, finds R2's Accepted value and commits it.
// Everyone, the crashed replicas after restarting, ends with the same value, and T1 commits.
func TestRecovererCrashesMidRecovery(t *testing.T) {
	w := newWorld(t, 5, nil)
	gamma := w.submit(0, "T1", x, []string{"x", "y"})
	w.deliver(and(is[*PreAccept], func(e envelope) bool { return e.to == 1 || e.to == 2 }))
	w.drop(func(e envelope) bool { return e.from == 0 || e.to == 0 })
	w.crash(0)
	proposal := w.reps[1].insts[gamma].Attrs

	r1 := w.reps[1]
	r1.startRecovery(gamma, r1.insts[gamma])
	w.deliver(func(e envelope) bool { return is[*Prepare](e) && e.to != 4 || is[*PrepareReply](e) })
	if d := r1.insts[gamma].drive; d == nil || d.phase != accepting {
		t.Fatalf("R1 did not adopt γ on two unchanged replies (drive %+v)", d)
	}
	w.deliver(and(is[*Accept], between(1, 2)))
	w.drop(func(e envelope) bool { return e.from == 1 || e.to == 1 })
	w.crash(1)
	if e := w.reps[2].insts[gamma]; e.status != Accepted {
		t.Fatalf("R2 holds γ with status %d, want accepted", e.status)
	}

	r3 := w.reps[3]
	r3.startRecovery(gamma, r3.entry(gamma))
	w.deliver(nil)
	if e := r3.insts[gamma]; e.status != Executed || e.Seq != proposal.Seq || !slices.Equal(e.Deps, proposal.Deps) {
		t.Fatalf("γ at R3: status %d %+v, want executed with R1's adopted attributes %+v", e.status, e.Attrs, proposal)
	}
	w.restart(0)
	w.restart(1)
	w.settle()
	w.checkInvariants()
	if w.outcome("T1") != txn.Committed {
		t.Fatal("T1 did not commit")
	}
}

// TestRecoveryDecidesNoOpForCommandNobodyHolds: R0 leads γ (T1), whose PreAccepts are all lost,
// then γ2 (T2, which conflicts with T1, so deps {γ}), whose PreAccepts reach R1 and R2; R0
// crashes. R1 recovers γ2 (two unchanged ballot-0 replies: adopted) and commits it, but cannot
// execute it: its dependency γ is unknown everywhere. R1 watches γ and recovers it; no replica
// of its quorum holds the command, so γ cannot have been committed and becomes a no-op, and γ2
// executes. When R0 restarts it learns both decisions: T1's client gets an abort
// (ReasonNoOp) and T2's a commit.
func TestRecoveryDecidesNoOpForCommandNobodyHolds(t *testing.T) {
	w := newWorld(t, 3, nil)
	gamma := w.submit(0, "T1", x, x)
	w.drop(func(envelope) bool { return true })
	gamma2 := w.submit(0, "T2", nil, x)
	w.deliver(is[*PreAccept])
	w.drop(func(envelope) bool { return true })
	w.crash(0)

	r1 := w.reps[1]
	r1.startRecovery(gamma2, r1.insts[gamma2])
	w.deliver(nil)
	if e := r1.insts[gamma2]; e.status != Committed || !slices.Contains(e.Deps, gamma) {
		t.Fatalf("γ2 at R1: status %d deps %v; want committed, waiting for γ", e.status, e.Deps)
	}
	w.until(func() bool { return r1.insts[gamma2].status == Executed })
	if e := r1.insts[gamma]; e.status != Executed || !e.noop {
		t.Fatalf("γ at R1: status %d no-op %v; want an executed no-op", e.status, e.noop)
	}
	w.restart(0)
	w.settle()
	w.checkInvariants()
	if rs := w.replies[w.names["T1"]]; len(rs) != 1 || rs[0].Status != txn.Aborted || rs[0].Reason != ReasonNoOp {
		t.Fatalf("T1's client got %+v, want one abort for %s", rs, ReasonNoOp)
	}
	if w.outcome("T2") != txn.Committed {
		t.Fatal("T2 did not commit")
	}
}

// TestRecoveryWaitsForPossibleFastQuorumEvidence shows why recovery step 4 waits, and that it
// resumes. N = 5 (FQ = 3). R0's γ (T1: read x, write x) is pre-accepted unchanged at R1 and R2,
// so R0 commits it on the fast path with deps {} and answers its client; its Commits are lost,
// and R0 and R2 crash. Meanwhile R4's δ (T2: read x, write x) is pre-accepted at R3 only. R3
// recovers γ with promises from R1 (unchanged), R3 and R4: one unchanged reply, and R2 unheard
// could be the second that makes a fast quorum with R0, as it is. Restarting Phase 1 here would
// give γ the deps {δ} (R3 knows δ) and contradict the fast commit, so R3 must wait (its
// TryPreAccepts are refused while δ is undecided: TestTryPreAcceptWaitsForUncommittedConflict
// follows that path). When R2 returns, its unchanged promise completes the evidence and R3
// commits γ with R0's attributes; every replica then agrees with the answer R0 gave.
func TestRecoveryWaitsForPossibleFastQuorumEvidence(t *testing.T) {
	w := newWorld(t, 5, nil)
	gamma := w.submit(0, "T1", x, x)
	w.deliver(and(is[*PreAccept], func(e envelope) bool { return e.to == 1 || e.to == 2 }))
	w.deliver(is[*PreAcceptReply])
	w.drop(func(e envelope) bool { return e.from == 0 || e.to == 0 })
	if w.outcome("T1") != txn.Committed {
		t.Fatal("R0 did not commit γ on the fast path")
	}
	w.crash(0)
	w.crash(2)
	w.submit(4, "T2", x, x)
	w.deliver(and(is[*PreAccept], between(4, 3)))
	w.drop(func(e envelope) bool { return e.from == 4 || e.to == 4 })

	r3 := w.reps[3]
	r3.startRecovery(gamma, r3.entry(gamma))
	w.deliver(nil)
	if d := r3.insts[gamma].drive; d == nil || d.phase != preparing {
		t.Fatalf("R3 did not wait for R2 (drive %+v): it would have contradicted γ's fast commit", d)
	}
	w.restart(2)
	w.until(func() bool { return r3.insts[gamma].status >= Committed })
	if e := r3.insts[gamma]; e.status < Committed || len(e.Deps) != 0 {
		t.Fatalf("γ at R3: status %d deps %v; want committed with R0's deps {}", e.status, e.Deps)
	}
	w.restart(0)
	w.settle()
	w.checkInvariants()
	if w.outcome("T1") != txn.Committed || w.outcome("T2") != txn.Aborted {
		t.Fatalf("T1 %v, T2 %v; want T1 committed (as R0 answered) and T2 aborted", w.outcome("T1"), w.outcome("T2"))
	}
}
