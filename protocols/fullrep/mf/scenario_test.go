package mf

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/scripted"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
)

const dcA, dcB = 0, 1

// figure31 is the setting of Figure 3.1: datacenters A and B, one-way delay 5 (RTT 10).
func figure31(t *testing.T, commitFirst bool) *scripted.World {
	t.Helper()
	topo := &topology.Topology{Name: "figure-3.1", DCs: []string{"A", "B"},
		RTTMs: [][]float64{{0, 10}, {10, 0}}, StdDevMs: [][]float64{{0, 0}, {0, 0}}}
	w, err := scripted.New(topo, New, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range w.Replicas {
		r.(*Replica).unsafeCommitFirst = commitFirst
	}
	w.Start()
	// A sends at 10, 30, 40, 60 and B at 20, 33, 44, 60; requests as in spec §7.2.1.
	script := []struct {
		atMs int64
		do   func()
	}{
		{10, func() { w.Send(dcA) }},
		{12, func() { w.Request(dcA, "t1", []string{"x"}, []string{"x"}) }},
		{20, func() { w.Send(dcB) }},
		{22, func() { w.Request(dcB, "t3", []string{"y"}, []string{"y"}) }},
		{27, func() { w.Request(dcA, "t2", []string{"y"}, []string{"y"}) }},
		{30, func() { w.Send(dcA) }},
		{31, func() { w.Request(dcA, "t4", []string{"z"}, []string{"z"}) }},
		{33, func() { w.Send(dcB) }},
		{34, func() { w.Request(dcB, "t5", []string{"u"}, []string{"u"}) }},
		{40, func() { w.Send(dcA) }},
		{44, func() { w.Send(dcB) }},
		{60, func() { w.Send(dcA); w.Send(dcB) }},
	}
	for _, step := range script {
		w.RunTo(step.atMs)
		step.do()
	}
	w.RunTo(100)
	return w
}

func wantOutcome(t *testing.T, w *scripted.World, name string, status txn.Status, atMs int64) {
	t.Helper()
	got, ok := w.Outcome(name)
	if !ok || got.Status != status || got.AtMs != atMs {
		t.Fatalf("%s: %v at %d (decided %v), want %s at %d\ntrace:\n%s", name, got.Status, got.AtMs, ok, status, atMs, w.Trace())
	}
}

// TestMFFigure3_1 replays the reconstruction of Figure 3.1 (spec §7.2.1), including the abort of
// t3 at t=35 by a message that also satisfies t3's commit condition.
func TestMFFigure3_1(t *testing.T) {
	w := figure31(t, false)
	wantOutcome(t, w, "t1", txn.Committed, 25) // latency 13
	wantOutcome(t, w, "t2", txn.Committed, 27) // immediate: inside the Immediate Commit Zone
	wantOutcome(t, w, "t3", txn.Aborted, 35)   // t2's write of y arrives; the abort wins
	wantOutcome(t, w, "t5", txn.Committed, 45) // latency 11
	wantOutcome(t, w, "t4", txn.Committed, 49) // latency 18
	want := map[string]string{"x": "t1", "y": "t2", "z": "t4", "u": "t5"}
	for dc := range 2 {
		for key, writer := range want {
			if got := w.Store(dc).Get(key).Writer; got != w.ID(writer) {
				t.Errorf("%s: %s written by %s, want %s (INV-2)", w.Topo.DCs[dc], key, got, writer)
			}
		}
	}
	if h := scriptHistory(w, []string{"t1", "t2", "t3", "t4", "t5"}); !checker.Check(h, checker.Options{}).OK {
		t.Errorf("checker: %s", checker.Check(h, checker.Options{}).Summary())
	}
}

// TestMFFigure3_1CommitBeforeConflicts is the negative check of §7.2.1: evaluating commit
// conditions before a message's records lets t3 commit at t=35 too, and the checker must flag
// the lost update between t2 and t3.
func TestMFFigure3_1CommitBeforeConflicts(t *testing.T) {
	w := figure31(t, true)
	wantOutcome(t, w, "t3", txn.Committed, 35)
	rep := checker.Check(scriptHistory(w, []string{"t1", "t2", "t3", "t4", "t5"}), checker.Options{})
	if rep.OK {
		t.Fatal("checker accepted t2 and t3 both committing their read-modify-write of y")
	}
	t.Logf("checker: %s", rep.Summary())
}

// scriptHistory turns a scripted run into a checker history: every transaction read and wrote
// the keys of its name's script line at the initial version.
func scriptHistory(w *scripted.World, names []string) *history.History {
	keys := map[string]string{"t1": "x", "t2": "y", "t3": "y", "t4": "z", "t5": "u"}
	h := &history.History{}
	for _, n := range names {
		o, _ := w.Outcome(n)
		k := keys[n]
		h.Txns = append(h.Txns, history.Txn{ID: w.ID(n), Status: o.Status,
			Reads: []txn.Read{{Key: k, Version: txn.None}}, Writes: []string{k}})
	}
	for dc := range 2 {
		h.Replicas = append(h.Replicas, history.Replica{Name: w.Topo.DCs[dc], VersionOrder: w.Store(dc).VersionOrder()})
	}
	return h
}

// TestMFRequestTimeAborts is §7.2.7 for Message Futures (and §2.6's table): a stale read, a
// local pending writer and a remote pending writer each abort a request at once, and a write
// that meets only a remote read does not (conflicts are directional).
func TestMFRequestTimeAborts(t *testing.T) {
	newWorld := func(t *testing.T) *scripted.World {
		topo := &topology.Topology{Name: "two", DCs: []string{"A", "B"},
			RTTMs: [][]float64{{0, 10}, {10, 0}}, StdDevMs: [][]float64{{0, 0}, {0, 0}}}
		w, err := scripted.New(topo, New, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.Start()
		return w
	}
	// Both replicas send every 10 ms from 10 to 100.
	sendsUntil := func(w *scripted.World, lastMs int64, at map[int64]func()) {
		for ms := int64(1); ms <= lastMs; ms++ {
			w.RunTo(ms)
			if f, ok := at[ms]; ok {
				f()
			}
			if ms%10 == 0 {
				w.Send(dcA)
				w.Send(dcB)
			}
		}
	}
	wantAbort := func(t *testing.T, w *scripted.World, name string, reason txn.AbortReason) {
		t.Helper()
		if got, _ := w.Outcome(name); got.Status != txn.Aborted || got.Reason != reason {
			t.Fatalf("%s: %s (%s), want aborted (%s)\n%s", name, got.Status, got.Reason, reason, w.Trace())
		}
	}
	t.Run("stale-read", func(t *testing.T) {
		w := newWorld(t)
		sendsUntil(w, 100, map[int64]func(){
			12: func() { w.Request(dcB, "u", nil, []string{"x"}) },
			90: func() { w.Request(dcA, "t", []string{"x=init"}, []string{"y"}) },
		})
		wantAbort(t, w, "t", txn.ReasonStaleRead)
	})
	t.Run("local-pending-writer", func(t *testing.T) {
		w := newWorld(t)
		sendsUntil(w, 40, map[int64]func(){
			12: func() {
				w.Request(dcA, "u", nil, []string{"x"})
				w.Request(dcA, "t", []string{"x"}, nil)
			},
		})
		wantAbort(t, w, "t", txn.ReasonLocalConflict)
	})
	t.Run("remote-pending-writer", func(t *testing.T) {
		w := newWorld(t)
		sendsUntil(w, 40, map[int64]func(){
			12: func() { w.Request(dcB, "u", nil, []string{"x"}) }, // Ep(u) reaches A at 25
			26: func() { w.Request(dcA, "t", []string{"x"}, nil) },
		})
		wantAbort(t, w, "t", txn.ReasonRemoteConflict)
	})
	t.Run("directional-no-false-abort", func(t *testing.T) {
		w := newWorld(t)
		// u commits at 25, before Ep(t) reaches B; Ep(u) writes only y, which t does not access.
		sendsUntil(w, 100, map[int64]func(){
			12: func() { w.Request(dcB, "u", []string{"x"}, []string{"y"}) }, // reads x
			26: func() { w.Request(dcA, "t", nil, []string{"x"}) },           // writes x only
		})
		for _, name := range []string{"t", "u"} {
			if got, _ := w.Outcome(name); got.Status != txn.Committed {
				t.Errorf("%s: %s, want committed\n%s", name, got.Status, w.Trace())
			}
		}
	})
}
