package ogre

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/internal/scripted"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// abc is the spec's three-datacenter world of §5.2, with 10 ms between every pair.
func abc(t *testing.T) *scripted.World {
	t.Helper()
	topo := &topology.Topology{Name: "abc", DCs: []string{"A", "B", "C"},
		RTTMs: [][]float64{{0, 10, 10}, {10, 0, 10}, {10, 10, 0}}, StdDevMs: [][]float64{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}}
	w, err := scripted.New(topo, New(true), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	return w
}

const (
	dcA = iota
	dcB
	dcC
	dcD
	dcE
)

// hold holds the Prepare and Decision messages of the named transactions to the listed
// datacenters until releaseMs (spec §5.2: "hold the prepare and decision messages to the
// excluded replica").
func hold(w *scripted.World, releaseMs int64, held map[string][]int) {
	w.Hold = func(_, to int, _ int64, m protocol.Message) int64 {
		var id txn.ID
		switch m := m.(type) {
		case *Prepare:
			id = m.Txn.ID
		case *Decision:
			id = m.Txn.ID
		default:
			return 0
		}
		for name, dcs := range held {
			if w.ID(name) == id && slices.Contains(dcs, to) {
				return releaseMs
			}
		}
		return 0
	}
}

// holdDecisions holds only the Decision messages of the named transactions.
func holdDecisions(w *scripted.World, releaseMs int64, held map[string][]int) {
	w.Hold = func(_, to int, _ int64, m protocol.Message) int64 {
		if d, ok := m.(*Decision); ok {
			for name, dcs := range held {
				if w.ID(name) == d.Txn.ID && slices.Contains(dcs, to) {
					return releaseMs
				}
			}
		}
		return 0
	}
}

// curVersions renders dc's current storage as "x:2 y:1 z:2" over keys.
func curVersions(w *scripted.World, dc int, keys ...string) string {
	r := w.Replicas[dc].(*Replica)
	var parts []string
	for _, k := range keys {
		v := uint64(0)
		if c := r.cur[k]; c != nil {
			v = c.ver
		}
		parts = append(parts, fmt.Sprintf("%s:%d", k, v))
	}
	return strings.Join(parts, " ")
}

// rotVersions renders dc's RoT-Storage as "x:1 y:1 z:0" over keys, and its buffered
// transactions by name.
func rotVersions(w *scripted.World, dc int, names []string, keys ...string) (string, string) {
	r := w.Replicas[dc].(*Replica)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, r.rot.ver[k]))
	}
	var buffered []string
	for _, n := range names {
		if _, ok := r.rot.buffered[w.ID(n)]; ok {
			buffered = append(buffered, n)
		}
	}
	return strings.Join(parts, " "), strings.Join(buffered, ",")
}

// snapshot reads keys from dc's RoT-Storage as a read-only transaction does (Alg. 9), naming
// each version's writer: "x=t1 y=t1 z=-".
func snapshot(w *scripted.World, dc int, keys ...string) string {
	st := w.Store(dc)
	at := st.Seq()
	writers := map[txn.ID]string{}
	for _, n := range []string{"t1", "t2", "t3", "Ta", "Tb", "T1", "T2", "T3"} {
		if id := w.ID(n); id != txn.None {
			writers[id] = n
		}
	}
	var parts []string
	for _, k := range keys {
		name := "-"
		if v := st.GetAt(k, at); v.Writer != txn.None {
			name = writers[v.Writer]
		}
		parts = append(parts, k+"="+name)
	}
	return strings.Join(parts, " ")
}

func committed(t *testing.T, w *scripted.World, names ...string) {
	t.Helper()
	for _, n := range names {
		if o, ok := w.Outcome(n); !ok || o.Status != txn.Committed {
			t.Fatalf("%s: %+v, want committed\n%s", n, o, w.Trace())
		}
	}
}

// TestOgreFigure5_1 is scenario S1 (the seed's Fig. 5.1): three transactions, each decided by a
// majority while its messages to the third datacenter are held. Current storages disagree and
// are not consistent snapshots; every RoT-Storage is a consistent, possibly stale snapshot; once
// every message arrives, everything converges and C applies t1, t2, t3 in order.
func TestOgreFigure5_1(t *testing.T) {
	w := abc(t)
	// t1 (coordinated at A) is held to C, t2 (at B) to A, t3 (at C) to B, all until 1 s.
	hold(w, 1000, map[string][]int{"t1": {dcC}, "t2": {dcA}, "t3": {dcB}})
	w.Request(dcA, "t1", nil, []string{"x", "y"})
	w.RunTo(100)
	w.Request(dcB, "t2", nil, []string{"y", "z"})
	w.RunTo(200)
	w.Request(dcC, "t3", nil, []string{"x", "z"})
	w.RunTo(300)
	committed(t, w, "t1", "t2", "t3")
	names := []string{"t1", "t2", "t3"}
	for dc, want := range []string{"x:2 y:1 z:2", "x:1 y:2 z:1", "x:2 y:2 z:2"} {
		if got := curVersions(w, dc, "x", "y", "z"); got != want {
			t.Errorf("%s current storage %s, want %s", w.Topo.DCs[dc], got, want)
		}
	}
	for dc, want := range [][2]string{{"x:1 y:1 z:0", "t3"}, {"x:1 y:2 z:1", ""}, {"x:0 y:0 z:0", "t2,t3"}} {
		got, buffered := rotVersions(w, dc, names, "x", "y", "z")
		if got != want[0] || buffered != want[1] {
			t.Errorf("%s RoT %s buffering [%s], want %s buffering [%s]", w.Topo.DCs[dc], got, buffered, want[0], want[1])
		}
	}
	if got := snapshot(w, dcA, "x", "y", "z"); got != "x=t1 y=t1 z=-" {
		t.Errorf("read-only transaction at A read %s, want x=t1 y=t1 z=- (x1, y1, z0)", got)
	}
	w.RunTo(2000)
	for dc := range 3 {
		cur := curVersions(w, dc, "x", "y", "z")
		rot, buffered := rotVersions(w, dc, names, "x", "y", "z")
		if cur != "x:2 y:2 z:2" || rot != cur || buffered != "" {
			t.Errorf("%s after delivery: current %s, RoT %s buffering [%s]; want x:2 y:2 z:2 everywhere, nothing buffered", w.Topo.DCs[dc], cur, rot, buffered)
		}
		if got := snapshot(w, dc, "x", "y", "z"); got != "x=t3 y=t2 z=t3" {
			t.Errorf("%s reads %s, want x=t3 y=t2 z=t3", w.Topo.DCs[dc], got)
		}
	}
	order := w.Store(dcC).VersionOrder()
	if !slices.Equal(order["x"], []txn.ID{w.ID("t1"), w.ID("t3")}) || !slices.Equal(order["y"], []txn.ID{w.ID("t1"), w.ID("t2")}) ||
		!slices.Equal(order["z"], []txn.ID{w.ID("t2"), w.ID("t3")}) {
		t.Errorf("C's RoT applied %v, want t1, t2, t3 in order", order)
	}
}

// TestOgreReadBeforeBuffering is scenario S2: Tb overwrites the version of x that Ta read, so C
// must apply Ta before Tb although Tb's decision arrives first; a read-only transaction in
// between sees neither.
func TestOgreReadBeforeBuffering(t *testing.T) {
	w := abc(t)
	// Ta (at A) reads x and writes y; its decision to C is held (its prepare is not, so Ta is
	// pending at C when Tb arrives, and C votes no on Tb).
	holdDecisions(w, 1000, map[string][]int{"Ta": {dcC}})
	w.Request(dcA, "Ta", []string{"x="}, []string{"y"})
	w.RunTo(50)
	committed(t, w, "Ta")
	w.Request(dcB, "Tb", nil, []string{"x"})
	w.RunTo(100)
	committed(t, w, "Tb")
	tb := w.Replicas[dcB].(*Replica)
	if len(tb.cur["x"].writer.String()) == 0 || tb.cur["x"].ver != 1 {
		t.Fatalf("Tb installed x at version %d at B, want 1", tb.cur["x"].ver)
	}
	rot, buffered := rotVersions(w, dcC, []string{"Ta", "Tb"}, "x", "y")
	if rot != "x:0 y:0" || buffered != "Tb" {
		t.Fatalf("C's RoT %s buffering [%s], want x:0 y:0 buffering [Tb]\n%s", rot, buffered, w.Trace())
	}
	if got := snapshot(w, dcC, "x", "y"); got != "x=- y=-" {
		t.Errorf("read-only at C before Ta arrives: %s, want x=- y=-", got)
	}
	w.RunTo(2000)
	if got := snapshot(w, dcC, "x", "y"); got != "x=Tb y=Ta" {
		t.Errorf("read-only at C at the end: %s, want x=Tb y=Ta", got)
	}
	st := w.Store(dcC)
	if ta, tb := st.Get("y").Seq, st.Get("x").Seq; ta >= tb {
		t.Errorf("C applied Ta at %d and Tb at %d: Ta must come first", ta, tb)
	}
}

// TestOgrePendingConflict is scenario S3: a transaction that reads a key a pending transaction
// writes is voted down by the majority holding the pending one; an unrelated one commits.
func TestOgrePendingConflict(t *testing.T) {
	w := abc(t)
	// T1 (coordinated at C) writes x; its decisions to A and B are held, so it stays pending
	// there.
	holdDecisions(w, 1000, map[string][]int{"T1": {dcA, dcB}})
	w.Request(dcC, "T1", nil, []string{"x"})
	w.RunTo(20)
	w.Request(dcA, "T2", []string{"x="}, []string{"z"})
	w.Request(dcB, "T3", []string{"q="}, []string{"r"})
	w.RunTo(50)
	if o, _ := w.Outcome("T2"); o.Status != txn.Aborted || o.Reason != ReasonPendingConflict {
		t.Errorf("T2: %+v, want aborted (pending-conflict)\n%s", o, w.Trace())
	}
	committed(t, w, "T1", "T3")
}

// fiveDCs is S4 and S5's world: five datacenters 10 ms apart.
func fiveDCs(t *testing.T) *scripted.World {
	t.Helper()
	n := 5
	topo := &topology.Topology{Name: "five", DCs: []string{"A", "B", "C", "D", "E"}}
	for i := range n {
		topo.RTTMs, topo.StdDevMs = append(topo.RTTMs, make([]float64, n)), append(topo.StdDevMs, make([]float64, n))
		for j := range n {
			if i != j {
				topo.RTTMs[i][j] = 10
			}
		}
	}
	w, err := scripted.New(topo, New(true), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	return w
}

// TestOgreStaleLocalRead is scenario S4: T1 commits and is applied at A, B and D only; a client
// at C that read x's initial version is voted down by them (stale read) and aborts.
func TestOgreStaleLocalRead(t *testing.T) {
	w := fiveDCs(t)
	hold(w, 1000, map[string][]int{"T1": {dcC, dcE}})
	w.Request(dcA, "T1", nil, []string{"x"})
	w.RunTo(50)
	committed(t, w, "T1")
	w.Request(dcC, "T2", []string{"x="}, []string{"y"})
	w.RunTo(100)
	if o, _ := w.Outcome("T2"); o.Status != txn.Aborted || o.Reason != txn.ReasonStaleRead {
		t.Errorf("T2: %+v, want aborted (stale-read)\n%s", o, w.Trace())
	}
}

// TestOgreThomasWriteRule is scenario S5: E receives T2's decision before T1's; its current
// storage keeps T2's version (T1's write is skipped there), while its RoT applies T1, then T2.
func TestOgreThomasWriteRule(t *testing.T) {
	w := fiveDCs(t)
	hold(w, 1000, map[string][]int{"T1": {dcE}})
	w.Request(dcA, "T1", nil, []string{"x"})
	w.RunTo(50)
	w.Request(dcB, "T2", []string{"x=T1"}, []string{"x"})
	w.RunTo(100)
	committed(t, w, "T1", "T2")
	e := w.Replicas[dcE].(*Replica)
	if got := curVersions(w, dcE, "x"); got != "x:2" || e.cur["x"].writer != w.ID("T2") {
		t.Errorf("E's current storage x: %s by %v, want x:2 by T2", got, e.cur["x"].writer)
	}
	if rot, buffered := rotVersions(w, dcE, []string{"T1", "T2"}, "x"); rot != "x:0" || buffered != "T2" {
		t.Errorf("E's RoT %s buffering [%s], want x:0 buffering [T2]", rot, buffered)
	}
	w.RunTo(2000)
	if got := curVersions(w, dcE, "x"); got != "x:2" || e.cur["x"].writer != w.ID("T2") {
		t.Errorf("E's current storage x after T1's decision: %s, want x:2 by T2 (Thomas' rule)", got)
	}
	if order := w.Store(dcE).VersionOrder()["x"]; !slices.Equal(order, []txn.ID{w.ID("T1"), w.ID("T2")}) {
		t.Errorf("E's RoT applied %v, want T1 then T2", order)
	}
}

// TestOgreReadModifyWriteChain is scenario S6: T1 and T2 read and write x in turn, T3 only
// writes it. Neither is a reader of its own version (A2), so T3's read-before set is empty and
// every RoT applies all three without waiting forever.
func TestOgreReadModifyWriteChain(t *testing.T) {
	w := abc(t)
	w.Request(dcA, "T1", []string{"x="}, []string{"x"})
	w.RunTo(50)
	w.Request(dcB, "T2", []string{"x=T1"}, []string{"x"})
	w.RunTo(100)
	w.Request(dcC, "T3", nil, []string{"x"})
	w.RunTo(500)
	committed(t, w, "T1", "T2", "T3")
	for dc := range 3 {
		r := w.Replicas[dc].(*Replica)
		if len(r.readers["x"]) != 0 || len(r.rot.histReaders["x"]) != 0 || len(r.rot.buffered) != 0 {
			t.Errorf("%s: readers %v, RoT readers %v, buffered %d; want none", w.Topo.DCs[dc], r.readers["x"], r.rot.histReaders["x"], len(r.rot.buffered))
		}
		if got := curVersions(w, dc, "x"); got != "x:3" {
			t.Errorf("%s: %s, want x:3", w.Topo.DCs[dc], got)
		}
	}
}

// TestOgreVoteMerge is scenario S7: positive votes for x are merged by version (the newest
// replaces, an equal one merges its readers), in any order.
func TestOgreVoteMerge(t *testing.T) {
	t5, t7, t8 := txn.NewID(5, 1), txn.NewID(7, 1), txn.NewID(8, 1)
	votes := map[string]struct {
		ver  uint64
		deps []txn.ID
	}{"a": {3, []txn.ID{t7}}, "b": {2, []txn.ID{t5}}, "c": {3, []txn.ID{t8}}}
	for _, order := range [][]string{{"a", "b", "c"}, {"b", "a", "c"}, {"b", "c", "a"}} {
		w := fiveDCs(t)
		r := w.Replicas[dcA].(*Replica)
		id := txn.NewID(1, 1)
		c := &coordinated{t: &txn.Txn{ID: id, Writes: []txn.Write{{Key: "x"}}}, voted: make([]bool, 5), pred: []int64{-1}, rbdeps: make([][]txn.ID, 1)}
		r.coords[id] = c
		for i, name := range order {
			v := votes[name]
			r.onVote(i+1, &Vote{Txn: id, Positive: true, Versions: []uint64{v.ver}, RBDeps: [][]txn.ID{v.deps}})
		}
		if c.decision == nil || c.decision.Pred[0] != 3 || !slices.Equal(c.decision.RBDeps[0], []txn.ID{t7, t8}) {
			t.Errorf("order %v: decision %+v, want Pred 3 (new version 4) with read-before {t7, t8}", order, c.decision)
		}
	}
}

// countingEnv is a protocol.Env that counts sends and keeps replies, for single-replica checks.
type countingEnv struct {
	store   *store.Store
	sends   int
	replies []protocol.Reply
}

func (e *countingEnv) NowUs() int64                           { return 0 }
func (e *countingEnv) Rand() *rand.Rand                       { return rand.New(rand.NewPCG(1, 1)) }
func (e *countingEnv) Send(protocol.NodeID, protocol.Message) { e.sends++ }
func (e *countingEnv) SetTimer(int64, protocol.TimerID)       {}
func (e *countingEnv) Reply(r protocol.Reply)                 { e.replies = append(e.replies, r) }
func (e *countingEnv) Store() *store.Store                    { return e.store }

// TestOgreReadOnlyIsLocal: a read-only transaction is answered by the local RoT-Storage with no
// message to another datacenter (I8), touching neither the pending set nor the readers (I9);
// Basic-Ogre, which has no RoT-Storage, refuses it with an error.
func TestOgreReadOnlyIsLocal(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	nodes := make([]protocol.Node, topo.N())
	for i := range nodes {
		nodes[i] = protocol.Node{ID: protocol.NodeID(i), DC: i}
	}
	for _, tracking := range []bool{true, false} {
		env := &countingEnv{store: store.New()}
		rep, err := New(tracking)(protocol.Config{Self: 0, Nodes: nodes, Topology: topo}, env)
		if err != nil {
			t.Fatal(err)
		}
		r := rep.(*Replica)
		r.rot.ingest(&Decision{Txn: &txn.Txn{ID: txn.NewID(1, 1), Writes: []txn.Write{{Key: "x", Value: []byte("v")}}}, Commit: true, Pred: []uint64{0}, RBDeps: [][]txn.ID{nil}})
		r.HandleRequest(protocol.Request{Client: 9, Seq: 1, Kind: protocol.ReadSnapshot, Keys: []string{"x", "y"}})
		if env.sends != 0 || len(r.pending) != 0 || len(r.readers) != 0 || len(env.replies) != 1 {
			t.Fatalf("tracking %v: %d sends, %d pending, %d readers, %d replies", tracking, env.sends, len(r.pending), len(r.readers), len(env.replies))
		}
		got := env.replies[0]
		if tracking && (got.Err != "" || len(got.Snapshot) != 2 || string(got.Snapshot[0].Value) != "v" || got.Snapshot[1].Version != txn.None) {
			t.Errorf("ogre: %+v", got)
		}
		if !tracking && !strings.Contains(got.Err, "no RoT-Storage") {
			t.Errorf("ogre-basic answered a read-only transaction: %+v", got)
		}
	}
}
