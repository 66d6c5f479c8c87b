package flstore_test

import (
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/log/logtest"
	"github.com/meridian-kv/meridian/topology"
)

// TestCHS1RangeMapping is scenario CH-S1 (Fig. 7.5): B = 1000, maintainers A, B, C.
func TestCHS1RangeMapping(t *testing.T) {
	const a, b, c = 0, 1, 2
	j := flstore.Journal{{StartLId: 1, Maintainers: []protocol.NodeID{a, b, c}, B: 1000}}
	for l, want := range map[uint64]protocol.NodeID{1: a, 1000: a, 1001: b, 3000: c, 3001: a, 7500: b, 9000: c} {
		if got := j.Owner(l); got != want {
			t.Errorf("owner(%d) = %d, want %d", l, got, want)
		}
	}
	// NextOwned walks a maintainer's ranges: A owns 1–1000, 3001–4000, 6001–7000.
	for _, tc := range []struct{ m, after, want uint64 }{{a, 0, 1}, {a, 1000, 3001}, {b, 0, 1001}, {c, 2500, 2501}, {c, 3000, 5001}} {
		if got := j.NextOwned(protocol.NodeID(tc.m), tc.after); got != tc.want {
			t.Errorf("NextOwned(%d, %d) = %d, want %d", tc.m, tc.after, got, tc.want)
		}
	}
}

// TestCHS11MaintainerEpoch is scenario CH-S11: journal [{1,[A,B],1000}, {4001,[A,B,C],1000}].
func TestCHS11MaintainerEpoch(t *testing.T) {
	const a, b, c = 0, 1, 2
	j := flstore.Journal{{StartLId: 1, Maintainers: []protocol.NodeID{a, b}, B: 1000},
		{StartLId: 4001, Maintainers: []protocol.NodeID{a, b, c}, B: 1000}}
	for l, want := range map[uint64]protocol.NodeID{3500: b, 4500: a, 5500: b, 6500: c} {
		if got := j.Owner(l); got != want {
			t.Errorf("owner(%d) = %d, want %d", l, got, want)
		}
	}
	// C's first position is 6001; B's after 3500 is 5001 (its old range 3001–4000 is A's... no:
	// epoch 1 deals A 1–1000, B 1001–2000, A 2001–3000, B 3001–4000).
	if got := j.NextOwned(c, 0); got != 6001 {
		t.Errorf("C's first position %d, want 6001", got)
	}
	if got := j.NextOwned(b, 4000); got != 5001 {
		t.Errorf("B's position after 4000 is %d, want 5001", got)
	}
}

// standalone builds a one-datacenter FLStore of 3 maintainers (A, B, C = nodes 0–2) and one
// indexer (node 3).
func standalone(t *testing.T, params protocol.Params) *logtest.World {
	t.Helper()
	topo := &topology.Topology{Name: "one", DCs: []string{"X"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	l, err := flstore.LayoutFromParams(1, flstore.Roles, params, map[flstore.Role]int{flstore.Maintainer: 3, flstore.Indexer: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := logtest.New(topo, l.Nodes, flstore.Factory, params)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// appendN appends n records at maintainer m from client 1.
func appendN(w *logtest.World, m protocol.NodeID, n int) {
	for i := range n {
		w.Request(1, uint64(i+1), m, &flstore.AppendOp{Record: &flstore.Record{Body: []byte("r")}})
	}
}

func hl(w *logtest.World, m protocol.NodeID) uint64 {
	return w.Reps[m].(*flstore.LogMaintainer).State().HL
}

// TestCHS2HeadOfLog is scenario CH-S2 under both rules: A fills 1–1000, B 1001–1900, C nothing;
// then C fills 2001–2500; then B fills to 2000.
func TestCHS2HeadOfLog(t *testing.T) {
	for _, tc := range []struct {
		rule string
		want [3]uint64
	}{{"exact", [3]uint64{1900, 1900, 2500}}, {"source", [3]uint64{0, 1000, 1000}}} {
		t.Run(tc.rule, func(t *testing.T) {
			w := standalone(t, protocol.Params{"hl": tc.rule, "noop_after": "0s"})
			check := func(step int) {
				w.RunUntil(w.NowUs() + 10_000) // gossip settles
				for m := protocol.NodeID(0); m < 3; m++ {
					if got := hl(w, m); got != tc.want[step] {
						t.Fatalf("step %d: maintainer %d's head of log %d, want %d", step, m, got, tc.want[step])
					}
				}
			}
			appendN(w, 0, 1000)
			appendN(w, 1, 900)
			check(0)
			appendN(w, 2, 500)
			check(1)
			appendN(w, 1, 100)
			check(2)
		})
	}
}

// TestCHS8ExplicitOrder is scenario CH-S8: B = 10, maintainers X (1–10, 21–30) and Y (11–20).
// r1 to Y gets 11; r2 to X with MinLId 11 while X's next free is 4 waits until X has filled
// 4–10, then gets 21 (CH-I8).
func TestCHS8ExplicitOrder(t *testing.T) {
	w := standalone(t, protocol.Params{"maintainers": "2", "b": "10", "noop_after": "0s"})
	const x, y = 0, 1
	appendN(w, x, 3) // X has filled 1–3
	w.Request(2, 1, y, &flstore.AppendOp{Record: &flstore.Record{Body: []byte("r1")}})
	w.RunUntil(1000)
	r1 := result(t, w, 2, 1)
	if r1.LId != 11 {
		t.Fatalf("r1 at %d, want 11", r1.LId)
	}
	w.Request(3, 1, x, &flstore.AppendOp{Record: &flstore.Record{Body: []byte("r2"), MinLId: r1.LId}})
	w.RunUntil(2000)
	if _, ok := find(w, 3, 1); ok {
		t.Fatal("r2 placed while X's next free position is 4")
	}
	for i := range 7 { // X fills 4–10 with other records
		w.Request(4, uint64(i+1), x, &flstore.AppendOp{Record: &flstore.Record{Body: []byte("o")}})
	}
	w.RunUntil(3000)
	if r2 := result(t, w, 3, 1); r2.LId != 21 || r2.LId <= r1.LId {
		t.Fatalf("r2 at %d, want 21", r2.LId)
	}
}

func find(w *logtest.World, c txn.ClientID, seq uint64) (*flstore.AppendResult, bool) {
	for _, r := range w.Replies {
		if r.Client == c && r.Seq == seq {
			res, ok := r.Op.(*flstore.AppendResult)
			return res, ok
		}
	}
	return nil, false
}

func result(t *testing.T, w *logtest.World, c txn.ClientID, seq uint64) *flstore.AppendResult {
	t.Helper()
	res, ok := find(w, c, seq)
	if !ok {
		t.Fatalf("no answer to client %d's append %d", c, seq)
	}
	return res
}

// TestIdleMaintainerNoOpFill shows spec A6: C receives no appends, so the head of the log
// stalls at 20 while A and B fill 31–35 and 41–45, until C fills 21–30 with no-op records (and
// then A, which now holds it back, fills 36–40); readers skip no-ops and indexers never see them.
func TestIdleMaintainerNoOpFill(t *testing.T) {
	w := standalone(t, protocol.Params{"b": "10", "noop_after": "20ms"})
	for i := range 30 {
		w.Request(1, uint64(i+1), protocol.NodeID(i%2), &flstore.AppendOp{Record: &flstore.Record{Body: []byte("r"),
			Tags: []flstore.Tag{{Name: "k", Value: []byte(fmt.Sprint(i % 10))}}}})
	}
	w.RunUntil(5000)
	if got := hl(w, 0); got != 20 {
		t.Fatalf("head of log %d with C idle, want 20 (C owns 21–30)", got)
	}
	w.RunUntil(100_000)
	if got := hl(w, 0); got != 45 {
		t.Fatalf("head of log %d after the no-op fills, want 45", got)
	}
	// Read C's positions: no-ops.
	w.Request(9, 1, 2, &flstore.ReadOp{From: 1, To: 100})
	// The indexer (node 3) knows the 20 tagged records, most recent first, capped at HL.
	w.Request(9, 2, 3, &flstore.LookupOp{Tag: "k", Op: flstore.Ge, Value: []byte("5"), MaxLId: 45, Limit: 3, MostRecentFirst: true})
	w.RunUntil(101_000)
	for _, r := range w.Replies {
		switch op := r.Op.(type) {
		case *flstore.ReadResult:
			if len(op.Records) != 10 || !op.Records[0].NoOp || op.Records[0].LId != 21 {
				t.Fatalf("C's read: %d records, want its 10 no-ops 21–30", len(op.Records))
			}
		case *flstore.LookupResult:
			if fmt.Sprint(op.LIds) != "[45 44 43]" {
				t.Fatalf("lookup k ≥ 5: %v, want [45 44 43]", op.LIds)
			}
		}
	}
}
