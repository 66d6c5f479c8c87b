package epaxos

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// fastCommitThenCrash is the start of the TryPreAccept scenarios, N = 5 (FQ = CQ = 3): R0's γ
// (T1: read x, write x) is pre-accepted unchanged at R1 and R2, so R0 commits it on the fast path
// with its ballot-0 attributes and answers its client; its Commits are lost, and R0 and R2
// crash. Only R1 of the survivors holds the evidence, so a recovery hears one unchanged reply,
// and R2, unheard, might be the second.
func fastCommitThenCrash(t *testing.T) (*world, Instance, Attrs) {
	w := newWorld(t, 5, nil)
	gamma := w.submit(0, "T1", x, x)
	w.deliver(and(is[*PreAccept], func(e envelope) bool { return e.to == 1 || e.to == 2 }))
	w.deliver(is[*PreAcceptReply])
	w.drop(func(e envelope) bool { return e.from == 0 || e.to == 0 })
	if w.outcome("T1") != txn.Committed {
		t.Fatal("R0 did not commit γ on the fast path")
	}
	proposal := w.reps[0].insts[gamma].Attrs
	w.crash(0)
	w.crash(2)
	return w, gamma, proposal
}

// TestTryPreAcceptAdoptsFastCommittedValue: after fastCommitThenCrash, R3 recovers γ with
// promises from R1 (unchanged), R3 and R4 (γ unknown). It cannot tell whether γ was committed, so
// it tries γ's ballot-0 value at R3 and R4; neither knows an interfering command, both
// pre-accept it, and with R1 that is a classic quorum of holders: R3 accepts and commits γ with
// R0's attributes while R0 and R2 are still down (before TryPreAccept, it waited for R2).
func TestTryPreAcceptAdoptsFastCommittedValue(t *testing.T) {
	w, gamma, proposal := fastCommitThenCrash(t)
	r3 := w.reps[3]
	r3.startRecovery(gamma, r3.entry(gamma))
	w.deliver(nil)
	if e := r3.insts[gamma]; e.status != Executed || e.Seq != proposal.Seq || !slices.Equal(e.Deps, proposal.Deps) {
		t.Fatalf("γ at R3: status %d %+v; want executed with R0's attributes %+v", e.status, e.Attrs, proposal)
	}
	if e := w.reps[4].insts[gamma]; e.status != Executed {
		t.Fatalf("γ at R4: status %d, want executed", e.status)
	}
	w.restart(0)
	w.restart(2)
	w.settle()
	w.checkInvariants()
	if w.outcome("T1") != txn.Committed {
		t.Fatal("T1 did not stay committed")
	}
}

// TestTryPreAcceptWaitsForUncommittedConflict: as TestRecoveryWaitsForPossibleFastQuorumEvidence,
// R4's δ (T2: read x, write x) is pre-accepted at R3 only before R3 recovers γ, but R2 stays
// down. R3 and R4 refuse γ's TryPreAccept: they know δ, uncommitted, interfering and unordered
// with γ's value. Adopting γ's value could then contradict δ, and restarting Phase 1 (deps {δ})
// could contradict γ's fast commit, so R3 keeps trying while δ gets decided: R4 retransmits δ's
// PreAccept, R1 adds γ to δ's deps, δ commits after γ, the retried TryPreAccepts succeed and γ
// commits with R0's attributes, all without R2. T1 stays committed and T2, which read x before
// T1's write, aborts.
func TestTryPreAcceptWaitsForUncommittedConflict(t *testing.T) {
	w, gamma, proposal := fastCommitThenCrash(t)
	delta := w.submit(4, "T2", x, x)
	w.deliver(and(is[*PreAccept], between(4, 3)))
	w.drop(func(e envelope) bool { return e.from == 4 || e.to == 4 })

	r3 := w.reps[3]
	r3.startRecovery(gamma, r3.entry(gamma))
	var refusals int
	w.deliver(func(e envelope) bool {
		if m, ok := e.m.(*TryPreAcceptReply); ok && m.Conflict && !m.Impossible {
			refusals++
		}
		return true
	})
	if d := r3.insts[gamma].drive; d == nil || !d.trying || refusals != 1 || d.holders[3] {
		t.Fatalf("R3's drive %+v after %d refusals; want it trying, refused by itself and R4 (δ uncommitted)", d, refusals)
	}
	w.until(func() bool { return r3.insts[gamma].status >= Committed })
	if e := r3.insts[gamma]; e.status < Committed || e.Seq != proposal.Seq || !slices.Equal(e.Deps, proposal.Deps) {
		t.Fatalf("γ at R3: status %d %+v; want committed with R0's attributes %+v", e.status, e.Attrs, proposal)
	}
	w.restart(0)
	w.restart(2)
	w.settle()
	if e := w.reps[4].insts[delta]; e.status != Executed || !slices.Contains(e.Deps, gamma) {
		t.Fatalf("δ at R4: status %d deps %v; want executed after γ", e.status, e.Deps)
	}
	w.checkInvariants()
	if w.outcome("T1") != txn.Committed || w.outcome("T2") != txn.Aborted {
		t.Fatalf("T1 %v, T2 %v; want T1 committed (as R0 answered) and T2 aborted", w.outcome("T1"), w.outcome("T2"))
	}
}

// TestTriedValueIsNoProofAgainstFastCommit: a recoverer that tried γ's ballot-0 value crashes
// before accepting it; the next recoverer must neither read the tried replies (pre-accepted at a
// ballot above 0) as a recoverer's proof that no fast commit happened, which would restart Phase
// 1, nor ignore them. After fastCommitThenCrash, R3 recovers γ; its TryPreAccept reaches R4,
// which pre-accepts it, and R3 crashes before the reply arrives. R4 recovers at a higher ballot;
// once R3 is back, the promises of R1 (unchanged at ballot 0), R3 and R4 (tried) are a classic
// quorum of holders, and R4 commits γ with R0's attributes without a new Phase 1.
func TestTriedValueIsNoProofAgainstFastCommit(t *testing.T) {
	w, gamma, proposal := fastCommitThenCrash(t)
	r3 := w.reps[3]
	r3.startRecovery(gamma, r3.entry(gamma))
	w.deliver(func(e envelope) bool { return !is[*TryPreAcceptReply](e) })
	w.drop(func(e envelope) bool { return e.from == 3 || e.to == 3 })
	w.crash(3)
	if e := w.reps[4].insts[gamma]; e.status != PreAccepted || !e.tried {
		t.Fatalf("γ at R4: status %d tried %v; want pre-accepted from R3's TryPreAccept", e.status, e.tried)
	}

	r4 := w.reps[4]
	r4.startRecovery(gamma, r4.insts[gamma])
	w.restart(3)
	var restarted bool
	for range 50 {
		if r4.insts[gamma].status >= Committed {
			break
		}
		w.deliver(func(e envelope) bool {
			if m, ok := e.m.(*PreAccept); ok && m.Inst == gamma && m.Ballot > 0 {
				restarted = true
			}
			return e.to != 0 && e.to != 2
		})
		w.tick(10_000)
	}
	if e := r4.insts[gamma]; e.status < Committed || e.Seq != proposal.Seq || !slices.Equal(e.Deps, proposal.Deps) || restarted {
		t.Fatalf("γ at R4: status %d %+v (Phase 1 restarted: %v); want committed with R0's attributes %+v and no new Phase 1",
			e.status, e.Attrs, restarted, proposal)
	}
	w.restart(0)
	w.restart(2)
	w.settle()
	w.checkInvariants()
	if w.outcome("T1") != txn.Committed {
		t.Fatal("T1 did not stay committed")
	}
}
