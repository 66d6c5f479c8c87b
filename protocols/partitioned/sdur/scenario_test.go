package sdur

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/verify/checker"
)

func want[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func wantOutcome(t *testing.T, w *world, name, outcome string) {
	t.Helper()
	if got := w.outcome(name); got != outcome {
		t.Fatalf("%s: outcome %q, want %q", name, got, outcome)
	}
}

// TestSD1LocalCertification: t2 read x1, which t1 (committed after t2's snapshot) wrote, so t2
// aborts; reading only x2 it commits.
func TestSD1LocalCertification(t *testing.T) {
	w := newWorld(t, 2, 1, nil)
	t1, t2 := w.tx("t1", 0, "x1", "x1"), w.tx("t2", 0, "x1 x2", "x2")
	w.deliver(0, payloads(t1[0], t2[0]))
	wantOutcome(t, w, "t1", "committed")
	wantOutcome(t, w, "t2", "aborted")
	want(t, "DB", w.db(0), []string{"t1"})

	w = newWorld(t, 2, 1, nil)
	t1, t2 = w.tx("t1", 0, "x1", "x1"), w.tx("t2", 0, "x2", "x2")
	w.deliver(0, payloads(t1[0], t2[0]))
	wantOutcome(t, w, "t2", "committed")
	want(t, "DB", w.db(0), []string{"t1", "t2"})
}

// TestSD2SymmetricTestForGlobals is the source's footnote 2: two globals that each read both
// partitions and write one, delivered in opposite orders, both abort; certified with the local
// test only (the negative control) both commit and the checker finds the write-skew cycle.
func TestSD2SymmetricTestForGlobals(t *testing.T) {
	for _, unsafe := range []bool{false, true} {
		params := protocol.Params{}
		if unsafe {
			params["unsafe_asymmetric_certification"] = "true"
		}
		w := newWorld(t, 2, 1, params)
		ti, tj := w.tx("ti", 0, "x1 y1", "y1"), w.tx("tj", 0, "x1 y1", "x1")
		w.readsOf("ti", "x1=", "y1=")
		w.readsOf("tj", "x1=", "y1=")
		w.deliver(0, payloads(ti[0], tj[0]))
		w.deliver(1, payloads(tj[1], ti[1]))
		w.flush(votesOnly)
		report := w.check()
		if !unsafe {
			wantOutcome(t, w, "ti", "aborted")
			wantOutcome(t, w, "tj", "aborted")
			if !report.OK {
				t.Fatalf("checker: %s", report.Summary())
			}
			continue
		}
		wantOutcome(t, w, "ti", "committed")
		wantOutcome(t, w, "tj", "committed")
		if report.OK || report.Counts[checker.KindG2] == 0 {
			t.Fatalf("negative control: the checker found %s, want a G2 cycle", report.Summary())
		}
	}
}

// TestSD4ThresholdDeterminism: with K=2, g's votes reach s before l2 and s' after l3; both
// replicas commit l1, l2, g, l3.
func TestSD4ThresholdDeterminism(t *testing.T) {
	w := newWorld(t, 2, 2, protocol.Params{"mode": "threshold", "k": "2"})
	s, s2 := w.pl.Node[0][0], w.pl.Node[0][1]
	g, l1, l2, l3 := w.tx("g", 0, "x1 y1", "x1"), w.tx("l1", 0, "x2", "x2"), w.tx("l2", 0, "x3", "x3"), w.tx("l3", 0, "x4", "x4")
	w.deliver(1, payloads(g[1]))
	w.deliver(0, payloads(g[0], l1[0]))
	want(t, "PL at s after l1", w.pendingNames(s), []string{"g"}) // l1 jumped g and committed
	w.flush(votesTo(s))                                           // every vote for g reaches s now
	want(t, "DB at s with g's votes", w.db(s), []string{"l1"})    // DC=2 < rt=3: g waits
	w.deliver(0, payloads(l2[0]), s)
	want(t, "DB at s after l2", w.db(s), []string{"l1", "l2", "g"})
	w.deliver(0, payloads(l3[0]), s)
	w.deliver(0, payloads(l2[0], l3[0]), s2)
	want(t, "PL at s' after l3", w.pendingNames(s2), []string{"g", "l3"})
	w.flush(votesTo(s2)) // g's votes reach s' only now
	for _, n := range []protocol.NodeID{s, s2} {
		want(t, "DB", w.db(n), []string{"l1", "l2", "g", "l3"})
	}
}

// TestSD5VoteBlocksTheJump: l writes x1, which pending g read: THRESHOLD appends l after g, BASE
// too, VOTEBCAST aborts l.
func TestSD5VoteBlocksTheJump(t *testing.T) {
	for _, tc := range []struct{ mode, outcome string }{{"threshold", ""}, {"base", ""}, {"votebcast", "aborted"}} {
		w := newWorld(t, 2, 1, protocol.Params{"mode": tc.mode})
		g, l := w.tx("g", 0, "x1 x2 y1", "x2 y1"), w.tx("l", 0, "x1", "x1")
		w.deliver(0, payloads(g[0], l[0]))
		wantOutcome(t, w, "l", tc.outcome)
		if tc.outcome == "" {
			want(t, tc.mode+": PL", w.pendingNames(0), []string{"g", "l"})
		}
	}
}

// TestSD6StaleRead: l read x2, which pending g writes: every mode aborts l.
func TestSD6StaleRead(t *testing.T) {
	for _, mode := range []string{"base", "threshold", "votebcast"} {
		w := newWorld(t, 2, 1, protocol.Params{"mode": mode})
		g, l := w.tx("g", 0, "x2 y1", "x2"), w.tx("l", 0, "x2", "")
		w.deliver(0, payloads(g[0], l[0]))
		wantOutcome(t, w, "l", "aborted")
	}
}

// TestSD7NeverJumpALocal: THRESHOLD, PL = [g1, l1] with l1 queued behind g1 (l1 writes x1, which
// g1 read); a new unrelated local l2 may not jump l1, so it goes last.
func TestSD7NeverJumpALocal(t *testing.T) {
	w := newWorld(t, 2, 1, protocol.Params{"mode": "threshold", "k": "10"})
	g1, l1, l2 := w.tx("g1", 0, "x1 y1", "y1"), w.tx("l1", 0, "x1", "x1"), w.tx("l2", 0, "x3", "x3")
	w.deliver(0, payloads(g1[0], l1[0], l2[0]))
	want(t, "PL", w.pendingNames(0), []string{"g1", "l1", "l2"})
}

// TestSD8PartialTermination: t's client crashed after broadcasting to p1 only; after τ_vote a p1
// server asks p2 to vote abort, and t aborts. In the race variant p2 delivered t first, certifies
// it normally and ignores the ABORTREQ.
func TestSD8PartialTermination(t *testing.T) {
	for _, race := range []bool{false, true} {
		w := newWorld(t, 2, 1, protocol.Params{"vote_timeout": "1s"})
		tt := w.tx("t", 0, "x1 y1", "x1 y1")
		w.deliver(0, payloads(tt[0]))
		w.flush(votesOnly) // p1's vote reaches p2
		if race {
			w.deliver(1, payloads(tt[1]))
		}
		w.nowUs = 2_000_000
		w.replicas[0].tick(w.nowUs)
		var req *AbortReq
		for _, s := range w.outbox {
			if sub, ok := s.m.(*Submit); ok {
				req, _ = sub.Payload.(*AbortReq)
			}
		}
		if req == nil {
			t.Fatalf("race %v: no ABORTREQ after τ_vote", race)
		}
		w.flush(func(s sent) bool { _, sub := s.m.(*Submit); return !sub }) // the ABORTREQ goes through p2's broadcast, next
		w.deliver(1, []Payload{req})
		w.flush(votesOnly)
		if race {
			wantOutcome(t, w, "t", "committed")
			want(t, "p2's DB", w.db(1), []string{"t"})
		} else {
			wantOutcome(t, w, "t", "aborted")
			want(t, "p1's PL", w.pendingNames(0), []string{})
			w.deliver(1, payloads(tt[1])) // the late TERMINATE is ignored
			want(t, "p2's DB", w.db(1), nil)
		}
	}
}

// TestSD9SnapshotHeadOfLine: A holds T behind T0 (which lacks B's vote) while B committed T.
// The reconciled snapshot is ⟨0,0⟩, and a read-only transaction at it sees none of T's writes;
// without reconciliation (the negative control: with markers, the source's marker-only rule)
// the snapshot is ⟨0,1⟩, fractures T, and the checker finds the cycle. Both snapshot modes.
func TestSD9SnapshotHeadOfLine(t *testing.T) {
	for _, c := range []struct {
		mode   string
		unsafe bool
	}{{SnapshotMarkers, false}, {SnapshotMarkers, true}, {SnapshotReconcile, false}, {SnapshotReconcile, true}} {
		unsafe := c.unsafe
		w := newWorld(t, 2, 1, protocol.Params{"unsafe_snapshot_no_reconcile": boolString(unsafe), "snapshot_mode": c.mode})
		t0, tt := w.tx("T0", 0, "x1 y1", "x1 y1"), w.tx("T", 0, "x2 y2", "x2 y2")
		w.readsOf("T0", "x1=", "y1=")
		w.readsOf("T", "x2=", "y2=")
		w.deliver(0, payloads(t0[0], tt[0]))
		w.deliver(1, payloads(tt[1]))
		b := w.pl.Node[1][0]
		w.flush(func(s sent) bool { return votesOnly(s) && (s.to == b || s.m.(*Vote).Tx == w.names["T"]) })
		want(t, "B's DB", w.db(b), []string{"T"})
		want(t, "A's PL", w.pendingNames(0), []string{"T0", "T"})
		w.nowUs = 2_000_000
		w.replicas[0].snapshotTick(w.nowUs)
		w.flush(nil)
		m, s := w.replicas[b].Snapshot()
		wantS := []uint64{0, 0}
		if unsafe {
			wantS = []uint64{0, 1}
		}
		if m != 1 || !slices.Equal(s, wantS) {
			t.Fatalf("%s, unsafe %v: snapshot %d %v, want 1 %v", c.mode, unsafe, m, s, wantS)
		}
		reads := w.read("ro", s, "x2", "y2")
		// B delivers T0 at last: its vote lets T0 and then T commit at A.
		w.deliver(1, payloads(t0[1]))
		w.flush(nil)
		want(t, "A's DB", w.db(0), []string{"T0", "T"})
		report := w.check()
		if !unsafe {
			want(t, "ro reads", reads, []string{"x2=init", "y2=init"})
			if !report.OK {
				t.Fatalf("checker: %s", report.Summary())
			}
			continue
		}
		want(t, "ro reads (no reconcile)", reads, []string{"x2=init", "y2=T"})
		if report.OK || report.Counts[checker.KindG2] == 0 {
			t.Fatalf("negative control: the checker found %s, want a G2 cycle", report.Summary())
		}
	}
}

// TestSD10Example1WithSnapshots is the source's Example 1: globals ti and tj, ordered ti, tj at
// p_x and tj, ti at p_y. Read-only ta at p_x and tb at p_y between them see opposite sides when
// they read the latest state (not serializable: the checker finds the cycle); at the published
// snapshot they see the same side.
func TestSD10Example1WithSnapshots(t *testing.T) {
	w := newWorld(t, 2, 1, nil)
	ti, tj := w.tx("ti", 0, "x1 y1", "x1 y1"), w.tx("tj", 0, "x2 y2", "x2 y2")
	w.readsOf("ti", "x1=", "y1=")
	w.readsOf("tj", "x2=", "y2=")
	w.deliver(0, payloads(ti[0], tj[0]))
	w.deliver(1, payloads(tj[1], ti[1]))
	w.nowUs = 2_000_000
	w.replicas[0].snapshotTick(w.nowUs) // both globals pending everywhere: the cut is ⟨0,0⟩
	w.flush(func(s sent) bool { _, vote := s.m.(*Vote); return !vote })
	_, s := w.replicas[1].Snapshot()
	w.flush(nil) // the votes: ti and tj commit in opposite orders
	want(t, "p_x DB", w.db(0), []string{"ti", "tj"})
	want(t, "p_y DB", w.db(1), []string{"tj", "ti"})
	latestX, latestY := []uint64{1, 0}, []uint64{0, 1} // ta at p_x after ti; tb at p_y after tj
	ta := w.read("ta", []uint64{latestX[0], 0}, "x1", "x2")
	tb := w.read("tb", []uint64{0, latestY[1]}, "y1", "y2")
	want(t, "ta", ta, []string{"x1=ti", "x2=init"})
	want(t, "tb", tb, []string{"y1=init", "y2=tj"})
	if report := w.check(); report.OK {
		t.Fatal("Example 1 read at the latest state: the checker accepted it")
	}
	delete(w.txns, w.names["ta"])
	delete(w.txns, w.names["tb"])
	want(t, "ta at the snapshot", w.read("ta2", s, "x1", "x2"), []string{"x1=init", "x2=init"})
	want(t, "tb at the snapshot", w.read("tb2", s, "y1", "y2"), []string{"y1=init", "y2=init"})
	if report := w.check(); !report.OK {
		t.Fatalf("checker: %s", report.Summary())
	}
}

// TestExample2GlobalReadOnly is the source's Example 2: a global read-only transaction reading
// the latest SC of each partition sees a global update at one partition and misses it at the
// other; the reconciled snapshot includes it at both or neither.
func TestExample2GlobalReadOnly(t *testing.T) {
	w := newWorld(t, 2, 1, nil)
	g := w.tx("g", 0, "x1 y1", "x1 y1")
	w.readsOf("g", "x1=", "y1=")
	w.deliver(0, payloads(g[0]))
	w.deliver(1, payloads(g[1]))
	w.flush(votesTo(w.pl.Node[1][0])) // g commits at p_y only, so far
	latest := []uint64{w.replicas[0].SC(), w.replicas[1].SC()}
	want(t, "latest reads", w.read("ro", latest, "x1", "y1"), []string{"x1=init", "y1=g"})
	w.nowUs = 2_000_000
	w.replicas[0].snapshotTick(w.nowUs)
	w.flush(func(s sent) bool { _, vote := s.m.(*Vote); return !vote })
	_, s := w.replicas[1].Snapshot()
	snap := w.read("ro2", s, "x1", "y1")
	w.flush(nil) // g commits at p_x too
	if w.check().OK {
		t.Fatal("Example 2 at the latest SCs: the checker accepted it")
	}
	delete(w.txns, w.names["ro"])
	want(t, "snapshot reads", snap, []string{"x1=init", "y1=init"})
	if report := w.check(); !report.OK {
		t.Fatalf("checker: %s", report.Summary())
	}
}

// TestSD11DelayOnlyGlobalsOfTheCoordinator: with delay 40 ms a local is submitted at once, and a
// global's own-partition slice waits while its remote slice leaves at once.
func TestSD11DelayOnlyGlobalsOfTheCoordinator(t *testing.T) {
	w := newWorld(t, 2, 1, protocol.Params{"delay": "40ms"})
	r := w.replicas[0]
	r.HandleRequest(protocol.Request{Client: 1, Seq: 1, Kind: protocol.Operation,
		Op: &CommitReq{Tx: 1, Slices: []Slice{{Part: 0, RS: []string{key("x1")}}}}})
	if len(r.ab.held) != 0 || len(r.log) != 1 {
		t.Fatalf("a local waited: held %d, committed %d", len(r.ab.held), len(r.log))
	}
	r.HandleRequest(protocol.Request{Client: 2, Seq: 1, Kind: protocol.Operation,
		Op: &CommitReq{Tx: 2, Slices: []Slice{{Part: 0, RS: []string{key("x2")}}, {Part: 1, RS: []string{key("y2")}}}}})
	if r.delayed.Len() != 1 || len(w.outbox) != 1 {
		t.Fatalf("global: %d own slices delayed, %d messages sent; want 1 and 1 (the remote slice)", r.delayed.Len(), len(w.outbox))
	}
}

// TestSD12DuplicateFinal: VOTEBCAST, three replicas; FINAL(g) delivered twice completes g once.
func TestSD12DuplicateFinal(t *testing.T) {
	w := newWorld(t, 2, 3, protocol.Params{"mode": "votebcast"})
	g := w.tx("g", 0, "x1 y1", "x1 y1")
	w.deliver(0, payloads(g[0]))
	w.deliver(1, payloads(g[1]))
	f := &Final{Tx: w.names["g"], Commit: true}
	w.deliver(0, []Payload{f, f})
	for _, n := range w.pl.Node[0] {
		want(t, "DB", w.db(n), []string{"g"})
	}
}

// TestInvariant9DelayKeepsOutcomes: for one delivery order (SD1's and SD2's transactions and a
// conflicting local behind a global), the delay variant commits and aborts exactly what the
// baseline does: delay.ms changes when a slice is broadcast, never what its delivery decides.
func TestInvariant9DelayKeepsOutcomes(t *testing.T) {
	var outcomes [2][]string
	for i, params := range []protocol.Params{nil, {"delay": "40ms"}} {
		w := newWorld(t, 2, 3, params)
		t1, t2 := w.tx("t1", 0, "x1", "x1"), w.tx("t2", 0, "x1 x2", "x2")
		ti, tj := w.tx("ti", 0, "x3 y1", "y1"), w.tx("tj", 0, "x3 y1", "x3")
		l := w.tx("l", 0, "x4", "x4")
		g := w.tx("g", 0, "x4 y2", "y2")
		w.deliver(0, payloads(t1[0], t2[0], ti[0], tj[0], g[0], l[0]))
		w.deliver(1, payloads(tj[1], ti[1], g[1]))
		w.flush(nil)
		for _, name := range []string{"t1", "t2", "ti", "tj", "g", "l"} {
			outcomes[i] = append(outcomes[i], name+"="+w.outcome(name))
		}
		outcomes[i] = append(outcomes[i], w.db(0)...)
	}
	want(t, "outcomes with delay", outcomes[1], outcomes[0])
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestThresholdNoopTickDespiteSnapshots: a global whose votes are all in waits for K later
// deliveries; with none coming, THRESHOLD's no-op tick (B20) closes its window. Partition 0's
// broadcast also orders the snapshot decisions (SnapDecided), which do not count in DC: when they
// come at least as often as tick_noop, they must not hold the tick off forever (the 10,000-seed
// campaign's sdur-threshold seeds 616, 803 and 4579, whose snapshot interval was 20 ms).
func TestThresholdNoopTickDespiteSnapshots(t *testing.T) {
	w := newWorld(t, 2, 1, protocol.Params{"mode": "threshold", "k": "3", "tick_noop": "20ms"})
	g := w.tx("g", 0, "x1 y1", "x1 y1")
	w.deliver(0, payloads(g[0]))
	w.deliver(1, payloads(g[1]))
	w.flush(votesOnly)
	want(t, "PL at p0 with g's votes", w.pendingNames(0), []string{"g"}) // DC=1 < rt=4
	r := w.replicas[0]
	for m := uint64(1); m <= 10 && w.outcome("g") == ""; m++ {
		w.nowUs += 10_000 // a snapshot decision every 10 ms, half of tick_noop
		w.deliver(0, []Payload{&SnapDecided{M: m, S: []uint64{0, 0}}})
		r.tick(w.nowUs)
		w.flush(nil)
	}
	wantOutcome(t, w, "g", "committed")
	want(t, "DB at p0", w.db(0), []string{"g"})
}

// TestSnapshotMarkersHoldGlobals: with markers (spec §3.6), SNAPBEGIN makes a partition hold the
// globals it delivers, uncertified and without a vote, while its locals commit; once every
// partition's marker is in, the leaders report and broadcast SNAPRESUME, the held global is
// certified and votes, and the snapshot is published. A hold whose round never completes (a
// marker lost) ends at the leader's timeout.
func TestSnapshotMarkersHoldGlobals(t *testing.T) {
	w := newWorld(t, 2, 1, nil)
	a, b := w.pl.Node[0][0], w.pl.Node[1][0]
	w.nowUs = 2_000_000
	w.replicas[a].snapshotTick(w.nowUs) // A joins round 1: SNAPBEGIN delivered at A (one replica)
	if w.replicas[a].holdM != 1 {
		t.Fatalf("A holds round %d, want 1", w.replicas[a].holdM)
	}
	g, l := w.tx("g", 0, "x1 y1", "x1 y1"), w.tx("l", 0, "x2", "x2")
	w.readsOf("g", "x1=", "y1=")
	w.readsOf("l", "x2=")
	w.deliver(0, payloads(g[0], l[0]))
	want(t, "A's DB during the hold", w.db(a), []string{"l"})
	want(t, "A's PL during the hold", w.pendingNames(a), []string{})
	if slices.ContainsFunc(w.outbox, func(s sent) bool { _, vote := s.m.(*Vote); return vote }) {
		t.Fatal("A voted on a held global")
	}
	w.flush(nil) // markers, reports, SNAPRESUME, the snapshot
	if w.replicas[a].holdM != 0 || w.replicas[b].holdM != 0 {
		t.Fatalf("holds after the round: A %d, B %d", w.replicas[a].holdM, w.replicas[b].holdM)
	}
	want(t, "A's PL after the round", w.pendingNames(a), []string{"g"})
	if m, s := w.replicas[b].Snapshot(); m != 1 || !slices.Equal(s, []uint64{1, 0}) {
		t.Fatalf("snapshot %d %v, want 1 [1 0]", m, s)
	}
	w.deliver(1, payloads(g[1]))
	w.flush(nil)
	want(t, "A's DB", w.db(a), []string{"l", "g"})
	if report := w.check(); !report.OK {
		t.Fatalf("checker: %s", report.Summary())
	}

	// Round 2 loses B's marker: A holds until election_timeout, then resumes by itself.
	w.nowUs += 2_000_000
	w.replicas[a].snapshotTick(w.nowUs)
	w.outbox = nil
	w.nowUs += 999_000
	w.replicas[a].holdTick(w.nowUs)
	if w.replicas[a].holdM != 2 {
		t.Fatalf("A stopped holding before the timeout")
	}
	w.nowUs += 1_000
	w.replicas[a].holdTick(w.nowUs)
	if w.replicas[a].holdM != 0 {
		t.Fatalf("A still holds round %d after the timeout", w.replicas[a].holdM)
	}
}

// TestGarbageCollectionAdmission: a TERMINATE is certified while its age (the partition's stamp
// minus its COMMIT time) is at most half the horizon, only votes abort when it is late, and is
// ignored once expired; a partition forgets a completed transaction's records once the stamp is
// a horizon past its COMMIT, and a copy of its TERMINATE delivered then is ignored.
func TestGarbageCollectionAdmission(t *testing.T) {
	w := newWorld(t, 2, 1, protocol.Params{"gc_horizon": "20s", "snapshot_interval": "0s"})
	a := w.pl.Node[0][0]
	stamp := func(submitUs int64, ts map[int]*Terminate) map[int]*Terminate {
		for _, t := range ts {
			t.SubmitUs = submitUs
		}
		return ts
	}
	now := stamp(30_000_000, w.tx("now", 0, "x1", "x1"))
	w.deliver(0, payloads(now[0])) // the stamp: 30 s
	fresh := stamp(20_000_000, w.tx("fresh", 0, "x2", "x2"))
	late := stamp(19_000_000, w.tx("late", 0, "x3 y3", "x3 y3"))
	old := stamp(9_000_000, w.tx("old", 0, "x4", "x4"))
	w.deliver(0, payloads(fresh[0], late[0], old[0]))
	want(t, "A's DB", w.db(a), []string{"now", "fresh"})
	wantOutcome(t, w, "late", "aborted")
	wantOutcome(t, w, "old", "")
	if !slices.ContainsFunc(w.outbox, func(s sent) bool { v, ok := s.m.(*Vote); return ok && v.Tx == w.names["late"] && !v.Commit }) {
		t.Fatal("the late global's abort vote was not sent")
	}
	r := w.replicas[a]
	next := stamp(41_000_000, w.tx("next", 0, "x5", "x5"))
	w.deliver(0, payloads(next[0])) // the stamp passes 40 s: "fresh" and "late" (20 s, 19 s) may go
	w.nowUs = 10_000_000
	r.collect(w.nowUs)
	if r.seen[w.names["fresh"]] != nil || r.seen[w.names["late"]] != nil || r.seen[w.names["next"]] == nil {
		t.Fatalf("records after collection: fresh %v, late %v, next %v", r.seen[w.names["fresh"]] != nil,
			r.seen[w.names["late"]] != nil, r.seen[w.names["next"]] != nil)
	}
	sc := r.SC()
	w.deliver(0, payloads(fresh[0])) // a copy after its record went: expired, ignored
	if r.SC() != sc {
		t.Fatalf("a forgotten transaction's copy was certified again: SC %d → %d", sc, r.SC())
	}
}
