package helios

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/scripted"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
	"github.com/meridian-kv/meridian/topology"
)

const dcA, dcB = 0, 1

// twoDCs is the setting of Figure 4.2: datacenters A and B, one-way delay 4 (RTT 8).
func twoDCs() *topology.Topology {
	return &topology.Topology{Name: "figure-4.2", DCs: []string{"A", "B"},
		RTTMs: [][]float64{{0, 8}, {8, 0}}, StdDevMs: [][]float64{{0, 0}, {0, 0}}}
}

// newFigure42 builds Figure 4.2's world: co_A[B] = −1 and co_B[A] = +1 (L_A = 3, L_B = 5), and
// replicas that start at tick 0.
func newFigure42(t *testing.T, params protocol.Params, clockOffsetMs []int64) *scripted.World {
	t.Helper()
	if params == nil {
		params = protocol.Params{}
	}
	if _, ok := params[ParamLatencies]; !ok {
		params[ParamLatencies] = "3,5"
	}
	w, err := scripted.New(twoDCs(), New(0, false), params, clockOffsetMs)
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	return w
}

// runTicks advances tick by tick to last: deliveries first, then the requests scheduled for
// that tick, then both datacenters' periodic sends (spec §7.2 conventions).
func runTicks(w *scripted.World, from, last int64, requests map[int64]func()) {
	for tick := from; tick <= last; tick++ {
		w.RunTo(tick)
		if req, ok := requests[tick]; ok {
			req()
		}
		for dc := range w.Replicas {
			w.Send(dc)
		}
	}
}

func wantOutcome(t *testing.T, w *scripted.World, name string, status txn.Status, atMs int64) {
	t.Helper()
	got, ok := w.Outcome(name)
	if !ok {
		t.Fatalf("%s: no decision, want %s at %d\ntrace:\n%s", name, status, atMs, w.Trace())
	}
	if got.Status != status || got.AtMs != atMs {
		t.Fatalf("%s: %s at %d, want %s at %d\ntrace:\n%s", name, got.Status, got.AtMs, status, atMs, w.Trace())
	}
}

// TestHeliosFigure4_2 replays the reconstruction of Figure 4.2 (spec §7.2.2): B's message sent at
// tick 3 arrives one tick late, which delays t2; t3 at B learns of t2's preparing record at tick
// 8 and aborts.
func TestHeliosFigure4_2(t *testing.T) {
	w := newFigure42(t, nil, nil)
	w.DelayMs = func(from, _ int, sendMs int64) int64 {
		if from == dcB && sendMs == 3 {
			return 5
		}
		return 4
	}
	runTicks(w, 1, 12, map[int64]func(){
		1: func() { w.Request(dcB, "t1", []string{"y"}, []string{"y"}) },
		4: func() { w.Request(dcA, "t2", []string{"x"}, []string{"x"}) },
		7: func() { w.Request(dcB, "t3", []string{"x"}, []string{"x"}) },
	})
	wantOutcome(t, w, "t1", txn.Committed, 6) // latency 5 = L_B
	wantOutcome(t, w, "t2", txn.Committed, 8) // latency 4: 3 without the late message
	wantOutcome(t, w, "t3", txn.Aborted, 8)   // t2's preparing record meets r(x)
	for dc := range 2 {
		st := w.Store(dc)
		if st.Get("x").Writer != w.ID("t2") || st.Get("y").Writer != w.ID("t1") {
			t.Errorf("%s: x by %s, y by %s; want x by t2, y by t1", w.Topo.DCs[dc], st.Get("x").Writer, st.Get("y").Writer)
		}
	}
	r := w.Replicas[dcA].(*Replica)
	if len(r.eptPool) != 0 || len(r.ptPool) != 0 {
		t.Errorf("A's pools not empty at the end: PTPool %d, EPTPool %d", len(r.ptPool), len(r.eptPool))
	}
}

// TestHeliosFigure4_2Variants covers the variants of §7.2.2: without the late message t2
// commits at 7; if t3 accesses z instead it commits at 12; with A's clock 2 ahead the two
// latencies become L_A + θ = 5 and L_B − θ = 3, still summing to the RTT.
func TestHeliosFigure4_2Variants(t *testing.T) {
	t.Run("a-no-late-message", func(t *testing.T) {
		w := newFigure42(t, nil, nil)
		runTicks(w, 1, 12, map[int64]func(){
			1: func() { w.Request(dcB, "t1", []string{"y"}, []string{"y"}) },
			4: func() { w.Request(dcA, "t2", []string{"x"}, []string{"x"}) },
		})
		wantOutcome(t, w, "t2", txn.Committed, 7)
	})
	t.Run("b-no-conflict", func(t *testing.T) {
		w := newFigure42(t, nil, nil)
		runTicks(w, 1, 13, map[int64]func(){
			4: func() { w.Request(dcA, "t2", []string{"x"}, []string{"x"}) },
			7: func() { w.Request(dcB, "t3", []string{"z"}, []string{"z"}) },
		})
		wantOutcome(t, w, "t3", txn.Committed, 12)
	})
	t.Run("c-clock-skew", func(t *testing.T) {
		w := newFigure42(t, nil, []int64{2, 0})
		runTicks(w, 1, 12, map[int64]func(){
			4: func() {
				w.Request(dcA, "ta", []string{"x"}, []string{"x"})
				w.Request(dcB, "tb", []string{"z"}, []string{"z"})
			},
		})
		wantOutcome(t, w, "ta", txn.Committed, 9) // latency 5 = L_A + θ
		wantOutcome(t, w, "tb", txn.Committed, 7) // latency 3 = L_B − θ
	})
}

// TestHeliosRule1Necessary is §7.2.3: with co_A[B] = −3 and co_B[A] = +1 (sum −2, allowed only
// by the unsafe test switch) two conflicting transactions both commit; with co_B[A] = +3 (sum 0)
// the later one sees the other's preparing record and aborts.
func TestHeliosRule1Necessary(t *testing.T) {
	for _, tc := range []struct {
		latencies string
		tPrime    txn.Status
	}{
		{"1,5", txn.Committed}, // co = (−3, +1): Rule 1 violated
		{"1,7", txn.Aborted},   // co = (−3, +3): Rule 1 holds with equality
	} {
		t.Run(tc.latencies, func(t *testing.T) {
			w := newFigure42(t, protocol.Params{ParamLatencies: tc.latencies, ParamUnsafeSkipRule1: "true"}, nil)
			runTicks(w, 1, 12, map[int64]func(){
				2: func() { w.Request(dcB, "t'", []string{"x"}, []string{"x"}) },
				4: func() { w.Request(dcA, "t", []string{"x"}, []string{"x"}) },
			})
			wantOutcome(t, w, "t", txn.Committed, 5)
			if got, _ := w.Outcome("t'"); got.Status != tc.tPrime {
				t.Fatalf("t': %s at %d, want %s\ntrace:\n%s", got.Status, got.AtMs, tc.tPrime, w.Trace())
			}
		})
	}
}

// TestHeliosRefusesRule1Violation checks INV-7: offsets violating Rule 1 are rejected at start.
func TestHeliosRefusesRule1Violation(t *testing.T) {
	_, err := scripted.New(twoDCs(), New(0, false), protocol.Params{ParamLatencies: "1,5"}, nil)
	if err == nil {
		t.Fatal("Helios started with offsets whose Rule-1 sum is −2")
	}
}

// TestHeliosRequestTimeAborts is §7.2.7: a stale read and a pool conflict abort at request time,
// and a write that only meets a remote read does not abort (conflicts are directional).
func TestHeliosRequestTimeAborts(t *testing.T) {
	t.Run("stale-read", func(t *testing.T) {
		w := newFigure42(t, nil, nil)
		runTicks(w, 1, 12, map[int64]func(){
			1:  func() { w.Request(dcB, "u", nil, []string{"x"}) },
			12: func() { w.Request(dcA, "t", []string{"x=init"}, []string{"y"}) },
		})
		wantOutcome(t, w, "u", txn.Committed, 6)
		if got, _ := w.Outcome("t"); got.Status != txn.Aborted || got.Reason != txn.ReasonStaleRead {
			t.Fatalf("t: %s (%s), want aborted for a stale read\n%s", got.Status, got.Reason, w.Trace())
		}
	})
	t.Run("remote-pool-conflict", func(t *testing.T) {
		w := newFigure42(t, nil, nil)
		runTicks(w, 1, 6, map[int64]func(){
			1: func() { w.Request(dcB, "u", nil, []string{"x"}) },
			5: func() { w.Request(dcA, "t", []string{"x"}, nil) }, // u's record arrived at 5
		})
		if got, _ := w.Outcome("t"); got.Status != txn.Aborted || got.Reason != txn.ReasonRemoteConflict {
			t.Fatalf("t: %s (%s), want aborted by the remote preparing u\n%s", got.Status, got.Reason, w.Trace())
		}
	})
	t.Run("local-pool-conflict", func(t *testing.T) {
		w := newFigure42(t, nil, nil)
		runTicks(w, 1, 2, map[int64]func(){
			1: func() {
				w.Request(dcB, "u", nil, []string{"x"}) // waits for kts_A = 2 until tick 6
				w.Request(dcB, "t", []string{"x"}, nil)
			},
		})
		if got, _ := w.Outcome("t"); got.Status != txn.Aborted || got.Reason != txn.ReasonLocalConflict {
			t.Fatalf("t: %s (%s), want aborted by the local preparing u\n%s", got.Status, got.Reason, w.Trace())
		}
	})
	t.Run("directional-no-false-abort", func(t *testing.T) {
		w := newFigure42(t, nil, nil)
		// u commits at 6, before t's preparing record reaches B at 9; u's record reaches A at 5,
		// before t requests, and writes only y, which t does not access.
		runTicks(w, 1, 14, map[int64]func(){
			1: func() { w.Request(dcB, "u", []string{"x"}, []string{"y"}) }, // reads x
			5: func() { w.Request(dcA, "t", nil, []string{"x"}) },           // writes x only
		})
		wantOutcome(t, w, "u", txn.Committed, 6)
		wantOutcome(t, w, "t", txn.Committed, 8)
	})
}

// TestHeliosIgnoresMalformedMessages: a message of another type, from the wrong peer, or with a
// record missing its transaction changes nothing and does not crash the replica.
func TestHeliosIgnoresMalformedMessages(t *testing.T) {
	w := newFigure42(t, nil, nil)
	r := w.Replicas[dcA]
	table := make([]int64, 4)
	for _, m := range []struct {
		from protocol.NodeID
		msg  protocol.Message
	}{
		{dcB, nil},
		{dcA, &Message{From: dcB, Full: true, Table: table}}, // claims to be B, arrives from A
		{dcB, &Message{From: dcB, Full: true, Table: table, Records: []rlog.Record[Entry]{{Host: dcB, TS: 5, Payload: Entry{Kind: Preparing}}}}},
		{dcB, &Message{From: dcB, Full: true, Table: table, Records: []rlog.Record[Entry]{{Host: dcB, TS: 5, Payload: Entry{Kind: 9}}}}},
		{dcB, &Message{From: dcB, Full: true, Table: []int64{1}}},
	} {
		r.HandleMessage(m.from, m.msg)
	}
	if got := r.(*Replica).log.T(dcA, dcB); got != 0 {
		t.Fatalf("A's knowledge of B moved to %d after malformed messages", got)
	}
}
