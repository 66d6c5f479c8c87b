package checker_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
)

// tx returns the id of client c's seq-th transaction.
func tx(c txn.ClientID, seq uint32) txn.ID { return txn.NewID(c, seq) }

// wot is a committed write-only transaction.
func wot(id txn.ID, keys ...string) history.Txn {
	return history.Txn{ID: id, Status: txn.Committed, Writes: keys}
}

// rot is a read-only transaction that read kv: key, writer, key, writer, ...
func rot(id txn.ID, kv ...any) history.Txn {
	t := history.Txn{ID: id, Status: txn.Committed, Rounds: 1}
	for i := 0; i < len(kv); i += 2 {
		t.Reads = append(t.Reads, txn.Read{Key: kv[i].(string), Version: kv[i+1].(txn.ID)})
	}
	return t
}

func rounds(t history.Txn, n int) history.Txn { t.Rounds = n; return t }

func withStatus(t history.Txn, s txn.Status) history.Txn { t.Status = s; return t }

// partitioned records orders the way a partitioned store does: each key in its own owner
// partition's replica (here one partition per key).
func partitioned(txns []history.Txn, orders map[string][]txn.ID) *history.History {
	h := &history.History{Txns: txns}
	for _, key := range slices.Sorted(maps.Keys(orders)) {
		h.Replicas = append(h.Replicas, history.Replica{Name: "p/" + key, VersionOrder: map[string][]txn.ID{key: orders[key]}})
	}
	return h
}

// causal checks C1–C4 only.
var causal = checker.Options{Model: checker.Causal}

// expectCausal checks that Check (with opts, whose Model is Causal) finds exactly the anomalies
// of the oracles want (in report order) and returns the report.
func expectCausal(t *testing.T, h *history.History, opts checker.Options, want ...string) checker.Report {
	t.Helper()
	r := checker.Check(h, opts)
	var got []string
	counts := make(map[string]int)
	for _, a := range r.Anomalies {
		got = append(got, a.Kind)
		counts[a.Kind]++
	}
	if r.OK != (len(want) == 0) || !slices.Equal(got, want) || r.Model != checker.Causal || !maps.Equal(r.Counts, counts) {
		t.Errorf("Check (%v) found %v (counts %v), want %v:\n%v", r.Model, got, r.Counts, want, r)
	}
	return r
}

// The thesis's T^1 = {w(ka)=a1, w(kb)=b1} and T^2 = {w(ka)=a2, w(kb)=b2}, T^1 ⇝ T^2 because the
// same client ran them one after the other (spec §1.3).
var (
	tA1, tA2 = tx(1, 1), tx(1, 2)
	x1to3    = []history.Txn{wot(tA1, "ka", "kb"), wot(tA2, "ka", "kb")}
	x1to3Ord = map[string][]txn.ID{"ka": {tA1, tA2}, "kb": {tA1, tA2}}
)

func x1to3With(reads ...history.Txn) *history.History {
	return partitioned(append(slices.Clone(x1to3), reads...), x1to3Ord)
}

func TestX1CausalViolation(t *testing.T) {
	r := expectCausal(t, x1to3With(rot(tx(2, 1), "kb", tA2, "ka", tA1)), causal, checker.TCCSnapshot)
	a := r.Anomalies[0]
	if a.Key != "ka" || a.Read != tA1 || a.Required != tA2 || !slices.Equal(a.Txns, []txn.ID{tx(2, 1), tA2}) {
		t.Errorf("anomaly %+v: want ROT t2.1 reading ka=t1.1 with t1.2 required", a)
	}
	want := `C2: t2.1 read "ka"=t1.1, but t1.2, in its causal past (it read "kb" from it), wrote a later version of "ka"`
	if a.String() != want {
		t.Errorf("anomaly renders as\n%s\nwant\n%s", a, want)
	}
}

func TestX2FracturedRead(t *testing.T) {
	r := expectCausal(t, x1to3With(rot(tx(2, 1), "kb", tA1, "ka", tA2)), causal, checker.TCCSnapshot)
	if a := r.Anomalies[0]; a.Key != "kb" || a.Read != tA1 || a.Required != tA2 {
		t.Errorf("anomaly %+v: want kb=t1.1 with t1.2 required", a)
	}
}

func TestX3FracturedReadOtherOrder(t *testing.T) {
	r := expectCausal(t, x1to3With(rot(tx(2, 1), "ka", tA1, "kb", tA2)), causal, checker.TCCSnapshot)
	if a := r.Anomalies[0]; a.Key != "ka" {
		t.Errorf("anomaly %+v: want it on ka", a)
	}
}

func TestX4ConsistentSnapshotsPass(t *testing.T) {
	r := expectCausal(t, x1to3With(
		rot(tx(2, 1), "ka", tA1, "kb", tA1),
		rot(tx(3, 1), "ka", tA2, "kb", tA2),
		rot(tx(4, 1), "ka", txn.None, "kb", txn.None),
	), causal)
	if r.ROTs != 3 || r.Committed != 2 || r.Aborted != 0 || r.Summary() != "ok: 3 ROTs, 2 committed WOTs, 0 aborted" {
		t.Errorf("report %v", r)
	}
}

func TestX5Friendship(t *testing.T) {
	befriend, unfriend := tx(1, 1), tx(1, 2)
	h := partitioned([]history.Txn{
		wot(befriend, "friends/ua", "friends/ub"),
		wot(unfriend, "friends/ua", "friends/ub"),
		// u_a is still in u_b's list, but u_b is no longer in u_a's.
		rot(tx(2, 1), "friends/ub", befriend, "friends/ua", unfriend),
	}, map[string][]txn.ID{"friends/ua": {befriend, unfriend}, "friends/ub": {befriend, unfriend}})
	expectCausal(t, h, causal, checker.TCCSnapshot)
}

func TestX6SharedFolder(t *testing.T) {
	revoke, addDoc := tx(1, 1), tx(1, 2)
	separate := partitioned([]history.Txn{
		wot(revoke, "acl"), wot(addDoc, "folder"),
		rot(tx(2, 1), "acl", txn.None, "folder", addDoc), // old ACL (U allowed) with the new doc
	}, map[string][]txn.ID{"acl": {revoke}, "folder": {addDoc}})
	expectCausal(t, separate, causal, checker.TCCSnapshot)

	both := tx(3, 1)
	oneWOT := partitioned([]history.Txn{
		wot(both, "acl", "folder"),
		rot(tx(2, 1), "acl", txn.None, "folder", both),
	}, map[string][]txn.ID{"acl": {both}, "folder": {both}})
	expectCausal(t, oneWOT, causal, checker.TCCSnapshot)
}

func TestX7MAVIsNotEnough(t *testing.T) {
	t1, t2 := tx(1, 1), tx(1, 2)
	h := partitioned([]history.Txn{
		wot(t1, "ka", "kb"), wot(t2, "kc", "kd"),
		rot(tx(2, 1), "ka", txn.None, "kc", t2),
	}, map[string][]txn.ID{"ka": {t1}, "kb": {t1}, "kc": {t2}, "kd": {t2}})
	r := expectCausal(t, h, causal, checker.TCCSnapshot)
	if a := r.Anomalies[0]; a.Key != "ka" || a.Required != t1 || !strings.Contains(a.Detail, `via its read of "kc"=t1.2`) {
		t.Errorf("anomaly %v: want ka with t1.1 required, reached via the read of kc", a)
	}
}

// TestX8DirtyReads: a version of an aborted WOT, of a transaction that did not write the key and
// of one that is not in the history. (The spec's other dirty read, an intermediate value of a WOT
// that wrote x twice, cannot be recorded: versions are named by their writer, spec A20.)
func TestX8DirtyReads(t *testing.T) {
	t1, t2 := tx(1, 1), tx(2, 1)
	h := partitioned([]history.Txn{
		wot(t1, "x"),
		withStatus(wot(t2, "x"), txn.Aborted),
		rot(tx(3, 1), "x", t2),
		rot(tx(3, 2), "y", t1),
		rot(tx(3, 3), "x", tx(9, 9)),
	}, map[string][]txn.ID{"x": {t1}})
	r := expectCausal(t, h, causal, checker.TCCDirtyRead, checker.TCCDirtyRead, checker.TCCDirtyRead)
	for i, want := range []string{"aborted", "did not write", "not in the history"} {
		if !strings.Contains(r.Anomalies[i].Detail, want) {
			t.Errorf("anomaly %d is %v, want it to say %q", i, r.Anomalies[i], want)
		}
	}
	if r.Committed != 1 || r.Aborted != 1 {
		t.Errorf("counted %d committed, %d aborted WOTs", r.Committed, r.Aborted)
	}
}

// TestX9ReadSkew: a ROT that lists x twice and gets two versions. C2 fires too: the older of the
// two was overwritten by the other one's writer, which the ROT read.
func TestX9ReadSkew(t *testing.T) {
	t1 := tx(1, 1)
	h := partitioned([]history.Txn{wot(t1, "x"), rot(tx(2, 1), "x", txn.None, "x", t1)}, map[string][]txn.ID{"x": {t1}})
	expectCausal(t, h, causal, checker.TCCSnapshot, checker.TCCCutIsolation)
	same := partitioned([]history.Txn{wot(t1, "x"), rot(tx(2, 1), "x", t1, "x", t1)}, map[string][]txn.ID{"x": {t1}})
	expectCausal(t, same, causal)
}

func TestX10ReadYourWrites(t *testing.T) {
	h := partitioned([]history.Txn{wot(tx(1, 1), "a"), rot(tx(1, 2), "a", txn.None)}, map[string][]txn.ID{"a": {tx(1, 1)}})
	r := expectCausal(t, h, causal, checker.TCCSnapshot)
	if !strings.Contains(r.Anomalies[0].Detail, "(its session predecessor)") {
		t.Errorf("anomaly %v does not name the session order", r.Anomalies[0])
	}
}

func TestX11MonotonicReads(t *testing.T) {
	v1, v2 := tx(1, 1), tx(2, 1)
	h := partitioned([]history.Txn{
		wot(v1, "a"), wot(v2, "a"),
		rot(tx(3, 1), "a", v2), rot(tx(3, 2), "a", v1),
	}, map[string][]txn.ID{"a": {v1, v2}})
	r := expectCausal(t, h, causal, checker.TCCSnapshot)
	if a := r.Anomalies[0]; a.Txns[0] != tx(3, 2) || !strings.Contains(a.Detail, "via its session predecessor t3.1") {
		t.Errorf("anomaly %v: want t3.2, via t3.1", a)
	}
}

func TestX12WritesFollowReads(t *testing.T) {
	v1, w := tx(1, 1), tx(2, 2)
	h := partitioned([]history.Txn{
		wot(v1, "a"),
		rot(tx(2, 1), "a", v1), wot(w, "b"), // s1 reads a=v1, then writes b
		rot(tx(3, 1), "b", w, "a", txn.None), // s2 sees b but not a=v1
	}, map[string][]txn.ID{"a": {v1}, "b": {w}})
	expectCausal(t, h, causal, checker.TCCSnapshot)
}

// TestX13DirtyWriteAllowed is Fig. 2.2 (and scenario S10): concurrent WOTs ordered differently
// by the owners of a and b. TCC allows it; strict mode reports the write cycle as info.
func TestX13DirtyWriteAllowed(t *testing.T) {
	t1, t2 := tx(1, 1), tx(2, 1)
	h := partitioned([]history.Txn{
		wot(t1, "a", "b"), wot(t2, "a", "b"),
		rot(tx(3, 1), "a", t2, "b", t1),
	}, map[string][]txn.ID{"a": {t1, t2}, "b": {t2, t1}})
	if r := expectCausal(t, h, causal); len(r.Info) != 0 {
		t.Errorf("info without strict mode: %v", r)
	}
	r := expectCausal(t, h, checker.Options{Model: checker.Causal, StrictG0: true})
	if len(r.Info) != 1 || r.Info[0].Kind != checker.TCCWriteCycle || len(r.Info[0].Txns) != 2 {
		t.Fatalf("strict mode: want one G0 info through t1.1 and t2.1, got %v", r)
	}
	if want := "t1.1 -ww(a)-> t2.1 -ww(b)-> t1.1"; !strings.Contains(r.Info[0].Detail, want) {
		t.Errorf("info %v does not show %s", r.Info[0], want)
	}
	if !strings.HasSuffix(r.Summary(), "[1 info]") {
		t.Errorf("Summary() = %q", r.Summary())
	}
}

func TestC3WriteOrderAgainstCausality(t *testing.T) {
	// Monotonic writes: one session's two writes of a installed in the reverse order.
	h := partitioned([]history.Txn{wot(tx(1, 1), "a"), wot(tx(1, 2), "a")}, map[string][]txn.ID{"a": {tx(1, 2), tx(1, 1)}})
	r := expectCausal(t, h, causal, checker.TCCWriteOrder)
	if a := r.Anomalies[0]; !slices.Equal(a.Txns, []txn.ID{tx(1, 1), tx(1, 2)}) || a.Key != "a" {
		t.Errorf("anomaly %+v", a)
	}
	// Across sessions: t2.2 depends on t1.1 through t2.1's read, yet comes first.
	h = partitioned([]history.Txn{
		wot(tx(1, 1), "a"), rot(tx(2, 1), "a", tx(1, 1)), wot(tx(2, 2), "a"),
	}, map[string][]txn.ID{"a": {tx(2, 2), tx(1, 1)}})
	expectCausal(t, h, causal, checker.TCCWriteOrder)
}

func TestC5RoundBound(t *testing.T) {
	h := partitioned([]history.Txn{rounds(rot(tx(1, 1), "a", txn.None), 3), rounds(rot(tx(1, 2), "a", txn.None), 2)}, nil)
	expectCausal(t, h, causal)
	r := expectCausal(t, h, checker.Options{Model: checker.Causal, MaxRounds: 2}, checker.TCCRounds)
	if r.Anomalies[0].Txns[0] != tx(1, 1) {
		t.Errorf("anomaly %v", r.Anomalies[0])
	}
	expectCausal(t, h, checker.Options{Model: checker.Causal, MaxRounds: 3})
}

func TestC6EventualVisibility(t *testing.T) {
	t1, t2 := tx(1, 1), tx(1, 2)
	h := partitioned([]history.Txn{
		wot(t1, "a"), wot(t2, "a"),
		rot(tx(2, 1), "a", t1, "b", txn.None), // stale, allowed unless final
		rot(tx(3, 1), "a", t2, "b", txn.None),
	}, map[string][]txn.ID{"a": {t1, t2}})
	expectCausal(t, h, checker.Options{Model: checker.Causal, Final: []txn.ID{tx(3, 1)}})
	r := expectCausal(t, h, checker.Options{Model: checker.Causal, Final: []txn.ID{tx(2, 1), tx(3, 1)}}, checker.TCCVisibility)
	if a := r.Anomalies[0]; a.Read != t1 || a.Required != t2 || a.Key != "a" {
		t.Errorf("anomaly %+v", a)
	}
	expectCausal(t, h, checker.Options{Model: checker.Causal, Final: []txn.ID{t1}}, checker.TCCMalformed)
}

// TestCausalCycleIsFlagged: a ROT that read a WOT its own session issued afterwards.
func TestCausalCycleIsFlagged(t *testing.T) {
	h := partitioned([]history.Txn{
		rot(tx(1, 1), "x", tx(1, 2)),
		wot(tx(1, 2), "x"),
		rot(tx(2, 1), "x", tx(1, 2)), // after the cycle: not checked
	}, map[string][]txn.ID{"x": {tx(1, 2)}})
	r := expectCausal(t, h, causal, checker.TCCCycle)
	if a := r.Anomalies[0]; !slices.Equal(a.Txns, []txn.ID{tx(1, 1), tx(1, 2)}) || !strings.Contains(a.Detail, `t1.1 -so-> t1.2 -wr(x)-> t1.1`) {
		t.Errorf("anomaly %v", a)
	}
	if r.Unchecked != 3 {
		t.Errorf("Unchecked = %d, want 3", r.Unchecked)
	}
}

// TestUnknownOutcome: a WOT whose client never learned the outcome counts as committed when it
// was installed or read; its own session does not depend on it, but whoever read it depends on
// its session past.
func TestUnknownOutcome(t *testing.T) {
	u := tx(1, 2)
	h := partitioned([]history.Txn{
		wot(tx(1, 1), "b"),
		withStatus(wot(u, "a"), txn.Unknown),
		rot(tx(1, 3), "a", txn.None), // no read-your-writes for an unknown outcome
		wot(tx(1, 4), "a"),           // and no C3 edge from it either
	}, map[string][]txn.ID{"a": {tx(1, 4), u}, "b": {tx(1, 1)}})
	r := expectCausal(t, h, causal)
	if r.Committed != 3 {
		t.Errorf("report %v: want the unknown WOT counted as committed", r)
	}

	h.Txns = append(h.Txns, rot(tx(2, 1), "a", u, "b", txn.None)) // u's past holds t1.1
	r = expectCausal(t, h, causal, checker.TCCSnapshot)
	if a := r.Anomalies[0]; a.Key != "b" || a.Required != tx(1, 1) || !strings.Contains(a.Detail, `via its read of "a"=t1.2`) {
		t.Errorf("anomaly %v", a)
	}

	// Read but installed nowhere: committed (so the read is no dirty read), and its write lost.
	lost := partitioned([]history.Txn{
		withStatus(wot(u, "a"), txn.Unknown),
		rot(tx(2, 1), "a", u),
	}, nil)
	lost.Replicas = []history.Replica{{Name: "p0", VersionOrder: map[string][]txn.ID{}}}
	expectCausal(t, lost, causal, checker.TCCVersionOrder)

	// Neither read nor installed: aborted.
	r = expectCausal(t, partitioned([]history.Txn{withStatus(wot(u, "a"), txn.Unknown)}, map[string][]txn.ID{}), causal)
	if r.Aborted != 1 || r.Committed != 0 {
		t.Errorf("report %v: want the unread, uninstalled unknown WOT aborted", r)
	}
}

func TestVersionOrderFindings(t *testing.T) {
	h := partitioned([]history.Txn{
		wot(tx(1, 1), "a", "b"),
		withStatus(wot(tx(2, 1), "a"), txn.Aborted),
		rot(tx(3, 1), "a", tx(1, 1)),
	}, map[string][]txn.ID{
		"a": {tx(1, 1), tx(2, 1), tx(3, 1), tx(9, 9), tx(1, 1)},
		// b: t1.1's committed write is missing
	})
	r := expectCausal(t, h, causal, slices.Repeat([]string{checker.TCCVersionOrder}, 5)...)
	for i, want := range []string{"which aborted", "which did not write it", "not in the history", "twice", "no replica installed committed t1.1's write of \"b\""} {
		if !strings.Contains(r.Anomalies[i].Detail, want) {
			t.Errorf("anomaly %d is %v, want it to say %q", i, r.Anomalies[i], want)
		}
	}
	noReplica := &history.History{Txns: []history.Txn{wot(tx(1, 1), "a"), rot(tx(2, 1), "a", txn.None)}}
	expectCausal(t, noReplica, causal, checker.TCCMalformed)
}

func TestMalformedTransactions(t *testing.T) {
	mixed := wot(tx(1, 1), "a")
	mixed.Reads = []txn.Read{{Key: "a"}}
	h := partitioned([]history.Txn{
		wot(txn.None, "a"),
		mixed,
		withStatus(rot(tx(2, 1), "a", txn.None), txn.Aborted),
		withStatus(wot(tx(3, 1), "a"), 9),
		wot(tx(4, 1), "a"), wot(tx(4, 1), "a"),
		{ID: tx(5, 1), Status: txn.Committed}, // empty: a no-op, ignored silently
	}, map[string][]txn.ID{"a": {tx(4, 1)}})
	expectCausal(t, h, causal, slices.Repeat([]string{checker.TCCMalformed}, 5)...)
}

// TestGeoReplicatedOrders: with several datacenters each key is in several replicas. A lagging
// replica holds a subsequence: fine, and the merged order is used; opposite orders diverge.
func TestGeoReplicatedOrders(t *testing.T) {
	t1, t2 := tx(1, 1), tx(2, 1)
	txns := []history.Txn{wot(t1, "a"), wot(t2, "a"), rot(tx(2, 2), "a", t1)} // t2.2 misses its own t2.1
	geo := func(dc0, dc1 []txn.ID) *history.History {
		return &history.History{Txns: txns, Replicas: []history.Replica{
			{Name: "dc0/p0", VersionOrder: map[string][]txn.ID{"a": dc0}},
			{Name: "dc1/p0", VersionOrder: map[string][]txn.ID{"a": dc1}},
		}}
	}
	expectCausal(t, geo([]txn.ID{t1}, []txn.ID{t1, t2}), causal, checker.TCCSnapshot)
	txns[2] = rot(tx(2, 2), "a", t2)
	expectCausal(t, geo([]txn.ID{t1}, []txn.ID{t1, t2}), checker.Options{Model: checker.Causal, Final: []txn.ID{tx(2, 2)}})
	// Replicas that share no version: merged in order of first appearance, t1.1 < t2.1.
	expectCausal(t, geo([]txn.ID{t1}, []txn.ID{t2}), checker.Options{Model: checker.Causal, Final: []txn.ID{tx(2, 2)}})
	r := expectCausal(t, geo([]txn.ID{t1, t2}, []txn.ID{t2, t1}), causal, checker.TCCDiverged)
	if a := r.Anomalies[0]; !strings.Contains(a.Detail, `"dc1/p0" has t2.1 before t1.1, "dc0/p0" the reverse`) {
		t.Errorf("anomaly %v", a)
	}
	three := &history.History{Txns: []history.Txn{wot(t1, "a"), wot(t2, "a"), wot(tx(3, 1), "a")}, Replicas: []history.Replica{
		{Name: "x", VersionOrder: map[string][]txn.ID{"a": {t1, t2}}},
		{Name: "y", VersionOrder: map[string][]txn.ID{"a": {t2, tx(3, 1)}}},
		{Name: "z", VersionOrder: map[string][]txn.ID{"a": {tx(3, 1), t1}}},
	}}
	r = expectCausal(t, three, causal, checker.TCCDiverged)
	if !strings.Contains(r.Anomalies[0].Detail, "in a cycle") {
		t.Errorf("anomaly %v", r.Anomalies[0])
	}
}

// FastCCS scenarios of spec §5.2 (N = 2: a on partition A, b on B). S1: c1 runs T1 = {a:=a1,
// b:=b1}; the scenarios continue from there.
var (
	s1T1    = tx(1, 1)
	s1      = []history.Txn{wot(s1T1, "a", "b")}
	s1Order = map[string][]txn.ID{"a": {s1T1}, "b": {s1T1}}
)

func scenario(orders map[string][]txn.ID, txns ...history.Txn) *history.History {
	return partitioned(append(slices.Clone(s1), txns...), orders)
}

var fastCCS = checker.Options{Model: checker.Causal, MaxRounds: 2}

func TestScenarioS2CommittedNotVisible(t *testing.T) {
	expectCausal(t, scenario(s1Order, rot(tx(2, 1), "a", txn.None, "b", txn.None)), fastCCS)
}

func TestScenarioS3ReadYourWrites(t *testing.T) {
	expectCausal(t, scenario(s1Order, rot(tx(1, 2), "a", s1T1, "b", s1T1), rot(tx(2, 1), "a", s1T1, "b", s1T1)), fastCCS)
}

func TestScenarioS4RoundTwo(t *testing.T) {
	expectCausal(t, scenario(s1Order, rounds(rot(tx(2, 1), "a", s1T1, "b", s1T1), 2)), fastCCS)
	// The bug the scenario guards against: (a1, ⊥).
	expectCausal(t, scenario(s1Order, rot(tx(2, 1), "a", s1T1, "b", txn.None)), fastCCS, checker.TCCSnapshot)
}

func TestScenarioS5RacingWOT(t *testing.T) {
	t2 := tx(1, 3)
	orders := map[string][]txn.ID{"a": {s1T1, t2}, "b": {s1T1, t2}}
	txns := []history.Txn{
		rot(tx(1, 2), "a", s1T1, "b", s1T1), // S3
		rot(tx(2, 1), "a", s1T1, "b", s1T1),
		wot(t2, "a", "b"),
		rot(tx(2, 2), "a", s1T1, "b", s1T1), // step 2
		rot(tx(2, 3), "a", s1T1, "b", s1T1), // step 5
		rounds(rot(tx(2, 4), "a", t2, "b", t2), 2),
	}
	expectCausal(t, scenario(orders, txns...), fastCCS)
	for _, bad := range []history.Txn{rot(tx(2, 5), "a", t2, "b", s1T1), rot(tx(2, 5), "a", s1T1, "b", t2)} {
		expectCausal(t, scenario(orders, append(slices.Clone(txns[:2]), wot(t2, "a", "b"), bad)...), fastCCS, checker.TCCSnapshot)
	}
}

func TestScenarioS6CausalityAcrossClients(t *testing.T) {
	a1, b1 := tx(1, 1), tx(2, 2)
	orders := map[string][]txn.ID{"a": {a1}, "b": {b1}}
	run := func(final history.Txn) *history.History {
		return partitioned([]history.Txn{wot(a1, "a"), rot(tx(2, 1), "a", a1), wot(b1, "b"), final}, orders)
	}
	expectCausal(t, run(rounds(rot(tx(3, 1), "a", a1, "b", txn.None), 2)), fastCCS) // faithful
	expectCausal(t, run(rounds(rot(tx(3, 1), "a", a1, "b", b1), 2)), fastCCS)       // [A11]
	expectCausal(t, run(rot(tx(3, 1), "a", txn.None, "b", b1)), fastCCS, checker.TCCSnapshot)
}

func TestScenarioS10OppositeOrders(t *testing.T) {
	t1, t2 := tx(1, 1), tx(2, 1)
	h := partitioned([]history.Txn{wot(t1, "a", "b"), wot(t2, "a", "b"), rot(tx(3, 1), "a", t2, "b", t1)},
		map[string][]txn.ID{"a": {t1, t2}, "b": {t2, t1}})
	if r := expectCausal(t, h, checker.Options{Model: checker.Causal, MaxRounds: 2, StrictG0: true}); len(r.Info) != 1 {
		t.Errorf("want the write cycle as info: %v", r)
	}
}

// TestWrenW1CacheReadYourWrites: c1 reads its own a1 from its write cache before the stable
// snapshot covers it, while c2 still gets ⊥; every Wren ROT takes 2 rounds.
func TestWrenW1CacheReadYourWrites(t *testing.T) {
	a1 := tx(1, 1)
	h := partitioned([]history.Txn{wot(a1, "a"), rounds(rot(tx(1, 2), "a", a1), 2), rounds(rot(tx(2, 1), "a", txn.None), 2)},
		map[string][]txn.ID{"a": {a1}})
	expectCausal(t, h, checker.Options{Model: checker.Causal, MaxRounds: 2})
}

// TestECX1FracturedRead is the eventual-consistency negative control: a ROT between the two
// partitions' application of {a:=a1, b:=b1} returns (a1, ⊥).
func TestECX1FracturedRead(t *testing.T) {
	t1 := tx(1, 1)
	h := partitioned([]history.Txn{wot(t1, "a", "b"), rot(tx(2, 1), "a", t1, "b", txn.None)}, map[string][]txn.ID{"a": {t1}, "b": {t1}})
	expectCausal(t, h, checker.Options{Model: checker.Causal, MaxRounds: 1}, checker.TCCSnapshot)
}

func TestCausalReportString(t *testing.T) {
	var txns []history.Txn
	for i := range uint32(25) {
		txns = append(txns, rounds(rot(tx(1, i+1), "a", txn.None), 3))
	}
	r := checker.Check(partitioned(txns, nil), checker.Options{Model: checker.Causal, MaxRounds: 2})
	s := r.String()
	if r.Counts[checker.TCCRounds] != 25 || !strings.HasPrefix(s, "FAILED: 25 anomalies (25 C5); first: C5: t1.1 took 3 rounds, more than 2\n") ||
		!strings.HasSuffix(s, "\n  ... 5 more") || strings.Count(s, "\n") != 21 {
		t.Errorf("String() =\n%s", s)
	}
}

func ExampleCheck_causal() {
	t1, t2 := txn.NewID(1, 1), txn.NewID(1, 2) // one client writes T^1, then T^2
	h := &history.History{
		Txns: []history.Txn{
			{ID: t1, Status: txn.Committed, Writes: []string{"ka", "kb"}},
			{ID: t2, Status: txn.Committed, Writes: []string{"ka", "kb"}},
			{ID: txn.NewID(2, 1), Status: txn.Committed, Rounds: 1,
				Reads: []txn.Read{{Key: "kb", Version: t2}, {Key: "ka", Version: t1}}},
		},
		Replicas: []history.Replica{{Name: "p0", VersionOrder: map[string][]txn.ID{"ka": {t1, t2}, "kb": {t1, t2}}}},
	}
	r := checker.Check(h, checker.Options{Model: checker.Causal, MaxRounds: 2})
	fmt.Println(r.OK, r.Counts[checker.TCCSnapshot])
	fmt.Println(r.Anomalies[0])
	// Output:
	// false 1
	// C2: t2.1 read "ka"=t1.1, but t1.2, in its causal past (it read "kb" from it), wrote a later version of "ka"
}
