package checker

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

var (
	t1 = txn.NewID(1, 1)
	t2 = txn.NewID(2, 1)
	t3 = txn.NewID(3, 1)
	t9 = txn.NewID(9, 9) // never in a history
)

func committed(id txn.ID, reads []txn.Read, writes ...string) history.Txn {
	return history.Txn{ID: id, Status: txn.Committed, Reads: reads, Writes: writes}
}

func aborted(id txn.ID, reads []txn.Read, writes ...string) history.Txn {
	return history.Txn{ID: id, Status: txn.Aborted, Reason: txn.ReasonStaleRead, Reads: reads, Writes: writes}
}

func reads(kv ...any) []txn.Read {
	var rs []txn.Read
	for i := 0; i < len(kv); i += 2 {
		rs = append(rs, txn.Read{Key: kv[i].(string), Version: kv[i+1].(txn.ID)})
	}
	return rs
}

func replica(name string, orders map[string][]txn.ID) history.Replica {
	return history.Replica{Name: name, VersionOrder: orders}
}

// expect checks that Check finds exactly the anomalies want, in order.
func expect(t *testing.T, h *history.History, want ...Anomaly) Report {
	t.Helper()
	r := Check(h, Options{})
	var l history.Log
	for _, t := range h.Txns {
		l.Append(t)
	}
	if fromLog := CheckLog(&l, h.Replicas, Options{}); !reflect.DeepEqual(fromLog, r) {
		t.Errorf("CheckLog reports\n%v\nCheck\n%v", fromLog, r)
	}
	if r.OK != (len(want) == 0) || !reflect.DeepEqual(r.Anomalies, want) {
		t.Errorf("Check: OK=%v, anomalies:\n%s\nwant:\n%s", r.OK, lines(r.Anomalies), lines(want))
	}
	counts := make(map[string]int)
	for _, a := range want {
		counts[a.Kind]++
	}
	if r.Model != Serializable || !maps.Equal(r.Counts, counts) || r.Info != nil || r.ROTs != 0 || r.Unchecked != 0 {
		t.Errorf("Check: model %v, counts %v, %d info, %d ROTs, %d unchecked; want serializable, counts %v and nothing else",
			r.Model, r.Counts, len(r.Info), r.ROTs, r.Unchecked, counts)
	}
	return r
}

func lines(as []Anomaly) string {
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "  %v %v\n", a, a.Txns)
	}
	return b.String()
}

func TestWriteSkewIsG2(t *testing.T) {
	// Both read x and y initially; t1 writes x, t2 writes y: each missed the other's write.
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, reads("x", txn.None, "y", txn.None), "x"),
			committed(t2, reads("x", txn.None, "y", txn.None), "y"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1}, "y": {t2}})},
	}
	r := expect(t, h, Anomaly{Kind: KindG2, Txns: []txn.ID{t1, t2}, Detail: "t1.1 -rw(y)-> t2.1 -rw(x)-> t1.1"})
	if got, want := r.Summary(), "FAILED: 1 anomaly (1 G2); first: G2: t1.1 -rw(y)-> t2.1 -rw(x)-> t1.1"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

func TestLostUpdateIsG2(t *testing.T) {
	// Both read the initial x and write x: t2 overwrites t1 without having seen it.
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, reads("x", txn.None), "x"),
			committed(t2, reads("x", txn.None), "x"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1, t2}})},
	}
	expect(t, h, Anomaly{Kind: KindG2, Txns: []txn.ID{t1, t2}, Detail: "t1.1 -ww(x)-> t2.1 -rw(x)-> t1.1"})
}

func TestWriteCycleIsG0(t *testing.T) {
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, nil, "x", "y"),
			committed(t2, nil, "x", "y"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1, t2}, "y": {t2, t1}})},
	}
	expect(t, h, Anomaly{Kind: KindG0, Txns: []txn.ID{t1, t2}, Detail: "t1.1 -ww(x)-> t2.1 -ww(y)-> t1.1"})
}

func TestReadCycleIsG1c(t *testing.T) {
	// Each read the other's write. t2 also missed t1's write of z (an rw edge closing a G2 cycle
	// too): the component is reported once, as the stronger G1c.
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, reads("y", t2), "x", "z"),
			committed(t2, reads("x", t1, "z", txn.None), "y"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1}, "y": {t2}, "z": {t1}})},
	}
	expect(t, h, Anomaly{Kind: KindG1c, Txns: []txn.ID{t1, t2}, Detail: "t1.1 -wr(x)-> t2.1 -wr(y)-> t1.1"})
}

func TestG0WinsOverWeakerCyclesInTheSameComponent(t *testing.T) {
	// t3 closes G2 and G1c cycles with t1 and t2, whose ww cycle makes the component G0.
	h := &history.History{
		Txns: []history.Txn{
			committed(t3, reads("x", t2, "w", txn.None)),
			committed(t1, nil, "x", "y", "w"),
			committed(t2, nil, "x", "y"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1, t2}, "y": {t2, t1}, "w": {t1}})},
	}
	expect(t, h, Anomaly{Kind: KindG0, Txns: []txn.ID{t1, t2}, Detail: "t1.1 -ww(x)-> t2.1 -ww(y)-> t1.1"})
}

func TestAbortedReadIsG1a(t *testing.T) {
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, reads("x", t2)),
			aborted(t2, nil, "x"),
			aborted(t3, reads("x", t2)), // an aborted reader is not G1a
		},
		Replicas: []history.Replica{replica("V", nil)},
	}
	expect(t, h, Anomaly{Kind: KindG1a, Txns: []txn.ID{t1, t2}, Detail: `t1.1 read "x" from aborted t2.1`})
}

func TestUnknownVersion(t *testing.T) {
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, reads("x", t9, "z", t2)),
			committed(t2, nil, "y"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"y": {t2}, "w": {t9, t2}})},
	}
	expect(t, h,
		Anomaly{Kind: KindUnknownVersion, Txns: []txn.ID{t9}, Detail: `replica "V" installed a version of "w" by t9.9, which is not in the history`},
		Anomaly{Kind: KindUnknownVersion, Txns: []txn.ID{t1, t9}, Detail: `t1.1 read "x" from t9.9, which is not in the history`},
		Anomaly{Kind: KindUnknownVersion, Txns: []txn.ID{t1, t2}, Detail: `t1.1 read "z" from t2.1, which replica "V" never installed`},
		Anomaly{Kind: KindUnknownVersion, Txns: []txn.ID{t2}, Detail: `replica "V" installed a version of "w" by t2.1, which did not write it`},
	)
}

func TestDivergedReplicas(t *testing.T) {
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, nil, "x"),
			committed(t2, nil, "x"),
		},
		Replicas: []history.Replica{
			replica("V", map[string][]txn.ID{"x": {t1, t2}}),
			replica("O", map[string][]txn.ID{"x": {t1, t2}}),
			replica("I", map[string][]txn.ID{"x": {t2, t1}}),
		},
	}
	expect(t, h, Anomaly{Kind: KindDiverged, Txns: []txn.ID{t1, t2}, Detail: `key "x": at position 0 replica "V" has t1.1, replica "I" has t2.1`})
}

func TestAbortedWriteInstalled(t *testing.T) {
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, nil, "x"),
			aborted(t2, nil, "x"),
			committed(t3, reads("x", t1), "y"), // t2 is skipped: no rw edge to it
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1, t2}, "y": {t3}})},
	}
	expect(t, h, Anomaly{Kind: KindAbortedInstalled, Txns: []txn.ID{t2}, Detail: `replica "V" installed aborted t2.1's write of "x"`})
}

func TestLostCommit(t *testing.T) {
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, nil, "x", "y"),
			aborted(t2, nil, "z"),
		},
		Replicas: []history.Replica{
			replica("V", map[string][]txn.ID{"x": {t1}, "y": {t1}}),
			replica("O", map[string][]txn.ID{"x": {t1}, "y": {t1}}),
			replica("I", map[string][]txn.ID{"x": {t1}}),
		},
	}
	expect(t, h,
		Anomaly{Kind: KindDiverged, Txns: []txn.ID{t1}, Detail: `key "y": at position 0 replica "V" has t1.1, replica "I" has no version`},
		Anomaly{Kind: KindLostCommit, Txns: []txn.ID{t1}, Detail: `replica "I" never installed committed t1.1's write of "y"`},
	)
}

func TestMalformed(t *testing.T) {
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, nil, "x"),
			committed(txn.None, nil),
			{ID: t2, Status: 0},
			committed(t1, nil, "y"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1, t1}})},
	}
	expect(t, h,
		Anomaly{Kind: KindMalformed, Detail: "transaction 1 of the history has id txn.None; ignored"},
		Anomaly{Kind: KindMalformed, Txns: []txn.ID{t2}, Detail: "t2.1 has invalid status 0; ignored"},
		Anomaly{Kind: KindMalformed, Txns: []txn.ID{t1}, Detail: "t1.1 occurs twice in the history; the second is ignored"},
		Anomaly{Kind: KindMalformed, Txns: []txn.ID{t1}, Detail: `replica "V" installed t1.1's version of "x" twice`},
	)
	expect(t, &history.History{Txns: h.Txns[:1]},
		Anomaly{Kind: KindMalformed, Detail: "the history has no replica, so there is no version order to check against"})
	expect(t, &history.History{})
}

func TestOneCyclePerComponent(t *testing.T) {
	// Two independent write skews: two components, two anomalies, in history order.
	t4 := txn.NewID(4, 1)
	h := &history.History{
		Txns: []history.Txn{
			committed(t1, reads("a", txn.None, "b", txn.None), "a"),
			committed(t3, reads("c", txn.None, "d", txn.None), "c"),
			committed(t2, reads("a", txn.None, "b", txn.None), "b"),
			committed(t4, reads("c", txn.None, "d", txn.None), "d"),
		},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"a": {t1}, "b": {t2}, "c": {t3}, "d": {t4}})},
	}
	r := expect(t, h,
		Anomaly{Kind: KindG2, Txns: []txn.ID{t1, t2}, Detail: "t1.1 -rw(b)-> t2.1 -rw(a)-> t1.1"},
		Anomaly{Kind: KindG2, Txns: []txn.ID{t3, t4}, Detail: "t3.1 -rw(d)-> t4.1 -rw(c)-> t3.1"},
	)
	if got, want := r.Summary(), "FAILED: 2 anomalies (2 G2); first: G2: t1.1 -rw(b)-> t2.1 -rw(a)-> t1.1"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

func TestLongCycle(t *testing.T) {
	// t1 -ww-> t2 -ww-> ... -ww-> tn -rw-> t1: one cycle as long as the history, which a
	// recursive search would need n stack frames for.
	const n = 200_000
	h := &history.History{Replicas: []history.Replica{replica("V", map[string][]txn.ID{})}}
	order := make([]txn.ID, n)
	for i := range n {
		order[i] = txn.NewID(1, uint32(i+1))
		h.Txns = append(h.Txns, committed(order[i], nil, "x"))
	}
	h.Txns[0].Writes = append(h.Txns[0].Writes, "y")
	h.Txns[n-1].Reads = reads("y", txn.None)
	h.Replicas[0].VersionOrder["x"] = order
	h.Replicas[0].VersionOrder["y"] = order[:1]
	r := Check(h, Options{})
	if len(r.Anomalies) != 1 || r.Anomalies[0].Kind != KindG2 || !slices.Equal(r.Anomalies[0].Txns, order) {
		t.Fatalf("want one G2 through all %d transactions, got %d anomalies; first: %.200s", n, len(r.Anomalies), r.Summary())
	}
}

// serial executes n random transactions one after another against a map, as a correct store
// would, and records the history with three identical replicas. A tenth of the transactions
// abort; their writes are not applied.
func serial(seed uint64, n, nKeys int) *history.History {
	rng := rand.New(rand.NewPCG(seed, 0))
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	dcs := []string{"V", "O", "I"}
	store := make(map[string]txn.ID)
	order := make(map[string][]txn.ID)
	var seq [9]uint32
	h := &history.History{Txns: make([]history.Txn, 0, n)}
	for i := range n {
		c := txn.ClientID(1 + rng.IntN(len(seq)-1))
		seq[c]++
		t := history.Txn{
			ID: txn.NewID(c, seq[c]), DC: dcs[int(c)%len(dcs)], Client: fmt.Sprintf("%s/%d", dcs[int(c)%len(dcs)], c),
			Status: txn.Committed, StartUs: int64(10 * i), EndUs: int64(10*i + 7),
		}
		for range 1 + rng.IntN(4) {
			key := keys[rng.IntN(nKeys)]
			if slices.Contains(t.Writes, key) || slices.ContainsFunc(t.Reads, func(r txn.Read) bool { return r.Key == key }) {
				continue
			}
			op := rng.IntN(3) // 0 read, 1 write, 2 read-modify-write
			if op != 1 {
				t.Reads = append(t.Reads, txn.Read{Key: key, Version: store[key]})
			}
			if op != 0 {
				t.Writes = append(t.Writes, key)
			}
		}
		if rng.IntN(10) == 0 {
			t.Status, t.Reason = txn.Aborted, txn.ReasonLocalConflict
		} else {
			for _, key := range t.Writes {
				store[key] = t.ID
				order[key] = append(order[key], t.ID)
			}
		}
		h.Txns = append(h.Txns, t)
	}
	for _, dc := range dcs {
		vo := make(map[string][]txn.ID, len(order))
		for key, o := range order {
			vo[key] = slices.Clone(o)
		}
		h.Replicas = append(h.Replicas, replica(dc, vo))
	}
	return h
}

// injectStaleRead makes the first committed read-modify-write of a non-initial version read the
// version before instead, a lost update, and returns the transaction it changed.
func injectStaleRead(t *testing.T, h *history.History) txn.ID {
	for i := range h.Txns {
		tx := &h.Txns[i]
		for j, r := range tx.Reads {
			if tx.Status != txn.Committed || r.Version == txn.None || !slices.Contains(tx.Writes, r.Key) {
				continue
			}
			o := h.Replicas[0].VersionOrder[r.Key]
			if p := slices.Index(o, r.Version); p > 0 {
				tx.Reads[j].Version = o[p-1]
			} else {
				tx.Reads[j].Version = txn.None
			}
			return tx.ID
		}
	}
	t.Fatal("the generator made no read-modify-write of a written version")
	return txn.None
}

func TestSerialHistoriesPass(t *testing.T) {
	for seed := range uint64(50) {
		h := serial(seed, 500, 20)
		r := Check(h, Options{})
		if !r.OK || !strings.HasPrefix(r.Summary(), "ok: ") || r.Committed+r.Aborted != len(h.Txns) || r.Aborted == 0 {
			t.Errorf("seed %d: %s", seed, r.Summary())
		}
	}
}

func TestInjectedStaleReadFails(t *testing.T) {
	for seed := range uint64(50) {
		h := serial(seed, 500, 20)
		stale := injectStaleRead(t, h)
		r := Check(h, Options{})
		if r.OK || len(r.Anomalies) != 1 || r.Anomalies[0].Kind != KindG2 || !slices.Contains(r.Anomalies[0].Txns, stale) {
			t.Errorf("seed %d: stale read by %v: %s", seed, stale, r.Summary())
		}
	}
}

func BenchmarkCheckSerializable(b *testing.B) {
	h := serial(1, 200_000, 50_000)
	for b.Loop() {
		if r := Check(h, Options{}); !r.OK {
			b.Fatal(r.Summary())
		}
	}
}

// TestUnknownOutcomeResolvedByReplicas: a transaction whose client never learned the outcome
// counts as committed when the replicas installed its write (and must then be everywhere), and
// as aborted when they did not.
func TestUnknownOutcomeResolvedByReplicas(t *testing.T) {
	installed, missing := txn.NewID(1, 1), txn.NewID(2, 1)
	h := &history.History{
		Txns: []history.Txn{
			{ID: installed, Status: txn.Unknown, Writes: []string{"x"}},
			{ID: missing, Status: txn.Unknown, Writes: []string{"y"}},
		},
		Replicas: []history.Replica{
			{Name: "A", VersionOrder: map[string][]txn.ID{"x": {installed}}},
			{Name: "B", VersionOrder: map[string][]txn.ID{"x": {installed}}},
		},
	}
	if r := Check(h, Options{}); !r.OK || r.Summary() != "ok: 1 committed, 1 aborted" {
		t.Fatalf("report %+v, want ok with 1 committed and 1 aborted", r)
	}
	if h.Txns[0].Status != txn.Unknown {
		t.Fatal("Check modified the history")
	}
	h.Replicas[1].VersionOrder = map[string][]txn.ID{}
	if r := Check(h, Options{}); r.OK {
		t.Fatal("a resolved-committed transaction missing at replica B was not reported")
	}
}

// TestSerializableReportString: String lists the first anomalies after the summary, as it does
// for the causal model.
func TestSerializableReportString(t *testing.T) {
	h := &history.History{
		Txns:     []history.Txn{aborted(t2, nil, "x")},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{})},
	}
	for c := range txn.ClientID(22) {
		h.Txns = append(h.Txns, committed(txn.NewID(10+c, 1), reads("x", t2)))
	}
	r := Check(h, Options{})
	s := r.String()
	if r.Counts[KindG1a] != 22 || !strings.HasPrefix(s, `FAILED: 22 anomalies (22 G1a); first: G1a: t10.1 read "x" from aborted t2.1`+"\n") ||
		!strings.HasSuffix(s, "\n  ... 2 more") || strings.Count(s, "\n") != 21 {
		t.Errorf("String() =\n%s", s)
	}
}

func TestModelString(t *testing.T) {
	for m, want := range map[Model]string{Serializable: "serializable", Causal: "causal", Model(7): "Model(7)"} {
		if got := m.String(); got != want {
			t.Errorf("Model(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}

// TestUnknownModelFails: a Model that is neither Serializable nor Causal fails the check rather
// than being taken for one of them.
func TestUnknownModelFails(t *testing.T) {
	h := &history.History{
		Txns:     []history.Txn{committed(t1, nil, "x")},
		Replicas: []history.Replica{replica("V", map[string][]txn.ID{"x": {t1}})},
	}
	r := Check(h, Options{Model: Model(7)})
	want := "FAILED: 1 anomaly (1 malformed); first: malformed: Options.Model is Model(7), neither Serializable nor Causal"
	if r.OK || r.Model != Model(7) || r.Summary() != want {
		t.Errorf("Summary() = %q, want %q", r.Summary(), want)
	}
}

// TestSnapshotsPerDC: two independent writes seen in opposite orders by snapshots of two
// datacenters (a long fork) fail one global check but pass the per-datacenter check; a snapshot
// that sees a write without the write it read from fails both.
func TestSnapshotsPerDC(t *testing.T) {
	w1, w2 := txn.NewID(1, 1), txn.NewID(2, 1)
	r1, r2 := txn.NewID(3, 1), txn.NewID(4, 1)
	snap := func(id txn.ID, dc string, rs []txn.Read) history.Txn {
		return history.Txn{ID: id, DC: dc, Status: txn.Committed, Reads: rs, Snapshot: true}
	}
	orders := replica("A", map[string][]txn.ID{"x": {w1}, "y": {w2}})
	fork := &history.History{Txns: []history.Txn{committed(w1, nil, "x"), committed(w2, nil, "y"),
		snap(r1, "A", reads("x", w1, "y", txn.None)), snap(r2, "B", reads("x", txn.None, "y", w2))}, Replicas: []history.Replica{orders}}
	if r := Check(fork, Options{}); r.OK || r.Counts[KindG2] != 1 {
		t.Errorf("global check of a long fork: %s", r.Summary())
	}
	if r := Check(fork, Options{SnapshotsPerDC: true}); !r.OK || r.Committed != 4 {
		t.Errorf("per-datacenter check of a long fork: %s", r.Summary())
	}
	// w2 read x from w1; a snapshot sees w2's y but not w1's x.
	torn := &history.History{Txns: []history.Txn{committed(w1, nil, "x"), committed(w2, reads("x", w1), "y"),
		snap(r1, "A", reads("x", txn.None, "y", w2))}, Replicas: []history.Replica{orders}}
	if r := Check(torn, Options{SnapshotsPerDC: true}); r.OK {
		t.Errorf("per-datacenter check of a torn snapshot: %s", r.Summary())
	}
}
