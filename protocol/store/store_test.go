package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

func w(kv ...string) []txn.Write {
	var out []txn.Write
	for i := 0; i < len(kv); i += 2 {
		out = append(out, txn.Write{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

func TestEmptyStoreHoldsInitialVersions(t *testing.T) {
	s := New()
	if s.Seq() != 0 {
		t.Fatalf("Seq = %d, want 0", s.Seq())
	}
	for _, v := range []Version{s.Get("x"), s.GetAt("x", 0), s.GetAt("x", 99)} {
		if v.Writer != txn.None || v.Value != nil || v.Seq != 0 {
			t.Fatalf("initial version %+v, want the zero Version", v)
		}
	}
	if got := s.VersionOrder(); len(got) != 0 {
		t.Fatalf("VersionOrder of an empty store = %v", got)
	}
}

func TestApplyInstallsAllWritesAtOnePosition(t *testing.T) {
	s := New()
	t1, t2, t3 := txn.NewID(1, 1), txn.NewID(2, 1), txn.NewID(1, 2)
	s.Apply(t1, w("a", "a1", "b", "b1", "c", "c1"))
	if s.Seq() != 1 {
		t.Fatalf("Seq after one Apply = %d", s.Seq())
	}
	for _, k := range []string{"a", "b", "c"} {
		v := s.Get(k)
		if v.Writer != t1 || v.Seq != 1 || string(v.Value) != k+"1" {
			t.Fatalf("Get(%s) = %+v, want %s1 by %v at 1", k, v, k, t1)
		}
	}
	s.Apply(t2, w("b", "b2"))
	s.Apply(t3, nil) // a read-only commit still takes a position
	if s.Seq() != 3 {
		t.Fatalf("Seq = %d, want 3", s.Seq())
	}
	if v := s.Get("b"); v.Writer != t2 || v.Seq != 2 || string(v.Value) != "b2" {
		t.Fatalf("Get(b) = %+v", v)
	}
	if v := s.Get("a"); v.Writer != t1 || v.Seq != 1 {
		t.Fatalf("Get(a) changed to %+v by a write of another key", v)
	}
}

func TestGetAtReadsSnapshotBetweenInstalls(t *testing.T) {
	s := New()
	ids := []txn.ID{txn.NewID(1, 1), txn.NewID(1, 2), txn.NewID(1, 3), txn.NewID(1, 4)}
	s.Apply(ids[0], w("x", "1"))           // seq 1
	s.Apply(ids[1], w("y", "1"))           // seq 2
	s.Apply(ids[2], w("x", "3", "y", "3")) // seq 3
	s.Apply(ids[3], w("z", "4"))           // seq 4
	cases := []struct {
		key    string
		at     uint64
		writer txn.ID
		value  string
	}{
		{"x", 0, txn.None, ""},
		{"x", 1, ids[0], "1"},
		{"x", 2, ids[0], "1"}, // between installs of x
		{"x", 3, ids[2], "3"},
		{"x", 4, ids[2], "3"},
		{"x", 1000, ids[2], "3"},
		{"y", 1, txn.None, ""},
		{"y", 2, ids[1], "1"},
		{"y", 3, ids[2], "3"},
		{"z", 3, txn.None, ""},
		{"z", 4, ids[3], "4"},
		{"never", 4, txn.None, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s@%d", c.key, c.at), func(t *testing.T) {
			v := s.GetAt(c.key, c.at)
			if v.Writer != c.writer || string(v.Value) != c.value || v.Seq > c.at {
				t.Fatalf("GetAt = %+v, want %q by %v at or before %d", v, c.value, c.writer, c.at)
			}
		})
	}
	// A snapshot taken now is unaffected by later installs.
	at := s.Seq()
	before := s.GetAt("x", at)
	s.Apply(txn.NewID(2, 1), w("x", "later"))
	if after := s.GetAt("x", at); after.Writer != before.Writer || string(after.Value) != string(before.Value) {
		t.Fatalf("snapshot at %d changed from %+v to %+v", at, before, after)
	}
	if v := s.Get("x"); string(v.Value) != "later" {
		t.Fatalf("Get(x) = %+v after a later install", v)
	}
}

func TestStale(t *testing.T) {
	s := New()
	t1, t2 := txn.NewID(1, 1), txn.NewID(2, 1)
	s.Apply(t1, w("a", "1", "b", "1"))
	s.Apply(t2, w("b", "2"))
	cases := []struct {
		name  string
		reads []txn.Read
		stale bool
	}{
		{"no reads", nil, false},
		{"latest versions", []txn.Read{{Key: "a", Version: t1}, {Key: "b", Version: t2}}, false},
		{"overwritten version", []txn.Read{{Key: "a", Version: t1}, {Key: "b", Version: t1}}, true},
		{"initial version of a never-written key", []txn.Read{{Key: "c", Version: txn.None}}, false},
		{"initial version of a written key", []txn.Read{{Key: "a", Version: txn.None}}, true},
		{"version that was never installed", []txn.Read{{Key: "c", Version: t1}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.Stale(c.reads); got != c.stale {
				t.Fatalf("Stale = %v, want %v", got, c.stale)
			}
		})
	}
}

func TestVersionOrderListsWritersInInstallOrder(t *testing.T) {
	s := New()
	t1, t2, t3 := txn.NewID(1, 1), txn.NewID(2, 1), txn.NewID(3, 1)
	s.Apply(t2, w("k", "x"))
	s.Apply(t1, w("k", "y", "j", "z"))
	s.Apply(t3, w("j", "w"))
	s.Apply(t2, w("k", "again")) // a writer may appear twice (the checker flags it, not the store)
	want := map[string][]txn.ID{"k": {t2, t1, t2}, "j": {t1, t3}}
	got := s.VersionOrder()
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("VersionOrder = %v, want %v", got, want)
	}
	// Appending to one key's order leaves the others alone.
	for k := range got {
		got[k] = append(got[k], txn.None)
	}
	if !slices.Equal(got["k"], append(want["k"], txn.None)) || !slices.Equal(got["j"], append(want["j"], txn.None)) {
		t.Fatalf("after appending to each order: %v", got)
	}
	// The result is a copy.
	got["k"][0] = txn.None
	if s.VersionOrder()["k"][0] != t2 {
		t.Fatal("VersionOrder exposes the store's internals")
	}
	again := s.VersionOrder()
	again["j"][0] = txn.None // in place, without an append first
	if s.VersionOrder()["j"][0] != t1 {
		t.Fatal("changing VersionOrder's result changed the next one")
	}
	// A version installed after a call is in the next call (byKey keeps its grouping only
	// while nothing is installed).
	s.Apply(t3, w("k", "last"))
	if got := s.VersionOrder()["k"]; !slices.Equal(got, []txn.ID{t2, t1, t2, t3}) {
		t.Fatalf("after one more install, VersionOrder[k] = %v", got)
	}
}

// TestSameOrderSeesNewVersions: SameOrder compares what the stores hold at each call, however
// often it was called before.
func TestSameOrderSeesNewVersions(t *testing.T) {
	keys := NewKeys()
	a, b := NewShared(keys), NewShared(keys)
	t1, t2 := txn.NewID(1, 1), txn.NewID(2, 1)
	a.Apply(t1, w("k", "x"))
	b.Apply(t1, w("k", "x"))
	if !a.SameOrder(b) {
		t.Fatal("stores with the same version differ")
	}
	a.Apply(t2, w("j", "y")) // numbers a new key
	b.Apply(t2, w("k", "y"))
	if a.SameOrder(b) {
		t.Fatal("stores that installed t2 on different keys agree")
	}
	b.Apply(txn.NewID(3, 1), w("j", "z"))
	a.Apply(txn.NewID(3, 1), w("k", "z"))
	if a.SameOrder(b) {
		t.Fatal("stores with different orders agree")
	}
}

// TestGetAtMatchesModel compares every (key, position) read against a model that snapshots the
// whole map after each Apply.
func TestGetAtMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	keys := []string{"a", "b", "c", "d", "e"}
	s := New()
	snapshots := []map[string]Version{{}} // snapshots[p]: latest version of every key at position p
	for i := range 200 {
		id := txn.NewID(txn.ClientID(1+rng.IntN(4)), uint32(i+1))
		var writes []txn.Write
		for _, k := range keys {
			if rng.IntN(3) == 0 {
				writes = append(writes, txn.Write{Key: k, Value: []byte(fmt.Sprint(i))})
			}
		}
		s.Apply(id, writes)
		next := maps.Clone(snapshots[len(snapshots)-1])
		for _, wr := range writes {
			next[wr.Key] = Version{Writer: id, Value: wr.Value, Seq: s.Seq()}
		}
		snapshots = append(snapshots, next)
	}
	if s.Seq() != 200 {
		t.Fatalf("Seq = %d, want 200", s.Seq())
	}
	for p, snap := range snapshots {
		for _, k := range keys {
			got, want := s.GetAt(k, uint64(p)), snap[k]
			if got.Writer != want.Writer || got.Seq != want.Seq || string(got.Value) != string(want.Value) {
				t.Fatalf("GetAt(%s, %d) = %+v, want %+v", k, p, got, want)
			}
		}
	}
	for _, k := range keys {
		if got, want := s.Get(k), snapshots[200][k]; got.Writer != want.Writer || got.Seq != want.Seq {
			t.Fatalf("Get(%s) = %+v, want %+v", k, got, want)
		}
	}
}

// TestVersionsIgnoresReadOnly: a read-only commit advances Seq but adds no version, so two
// replicas with the same writes hold as many versions whatever read-only work each did.
func TestVersionsIgnoresReadOnly(t *testing.T) {
	a, b := New(), New()
	w := []txn.Write{{Key: "k", Value: []byte("v")}, {Key: "j", Value: []byte("w")}}
	a.Apply(txn.NewID(1, 1), w)
	b.Apply(txn.NewID(1, 1), w)
	b.Apply(txn.NewID(2, 1), nil) // read-only
	if a.Versions() != 2 || b.Versions() != 2 || a.Seq() == b.Seq() {
		t.Fatalf("versions %d and %d, seqs %d and %d", a.Versions(), b.Versions(), a.Seq(), b.Seq())
	}
}

// TestStoresSharingKeysStayApart: stores that share a key table behave exactly as stores with
// tables of their own, whatever keys the others write, including stores added to the table after
// it numbered keys.
func TestStoresSharingKeysStayApart(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	keys := NewKeys()
	var shared, own []*Store
	addPair := func() {
		shared, own = append(shared, NewShared(keys)), append(own, New())
	}
	addPair()
	addPair()
	for i := range 6000 { // more versions than one arena chunk holds
		if i == 1000 {
			addPair()
		}
		s := rng.IntN(len(shared))
		var writes []txn.Write
		for k := rng.IntN(300); len(writes) < 3 && k < 300; k += 1 + rng.IntN(100) {
			writes = append(writes, txn.Write{Key: fmt.Sprint("k", k), Value: []byte(fmt.Sprint(i))})
		}
		id := txn.NewID(txn.ClientID(1+s), uint32(i+1))
		shared[s].Apply(id, writes)
		own[s].Apply(id, writes)
	}
	for s := range shared {
		a, b := shared[s], own[s]
		if a.Seq() != b.Seq() || a.Versions() != b.Versions() {
			t.Fatalf("store %d: seq %d, %d versions; alone: seq %d, %d versions", s, a.Seq(), a.Versions(), b.Seq(), b.Versions())
		}
		if got, want := a.VersionOrder(), b.VersionOrder(); !maps.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("store %d: VersionOrder differs from the store with its own keys", s)
		}
		for k := range 310 {
			key := fmt.Sprint("k", k)
			at := uint64(rng.IntN(int(a.Seq()) + 1))
			if got, want := a.GetAt(key, at), b.GetAt(key, at); got.Writer != want.Writer || got.Seq != want.Seq {
				t.Fatalf("store %d: GetAt(%s, %d) = %+v, alone %+v", s, key, at, got, want)
			}
			if got, want := a.Get(key), b.Get(key); got.Writer != want.Writer || got.Seq != want.Seq {
				t.Fatalf("store %d: Get(%s) = %+v, alone %+v", s, key, got, want)
			}
		}
	}
}

func TestValueOfFindsAWritersVersion(t *testing.T) {
	s := New()
	t1, t2 := txn.NewID(1, 1), txn.NewID(2, 1)
	s.Apply(t1, w("a", "a1", "b", "b1"))
	s.Apply(t2, w("a", "a2"))
	for _, c := range []struct {
		key    string
		writer txn.ID
		value  string
		ok     bool
	}{{"a", t1, "a1", true}, {"a", t2, "a2", true}, {"b", t1, "b1", true}, {"b", t2, "", false}, {"c", t1, "", false}} {
		if v, ok := s.ValueOf(c.key, c.writer); ok != c.ok || string(v) != c.value {
			t.Errorf("ValueOf(%s, %v) = %q, %v; want %q, %v", c.key, c.writer, v, ok, c.value, c.ok)
		}
	}
}

// TestNumberedPathsMatch: ApplyTxn and StaleTxn, which use a transaction's key numbers, act as
// Apply and Stale; SameOrder agrees with comparing VersionOrders, for stores sharing a key table
// and for stores that do not.
func TestNumberedPathsMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	keys := NewKeys()
	a, b, alone := NewShared(keys), NewShared(keys), New()
	var txns []*txn.Txn
	for i := range 3000 {
		tx := &txn.Txn{ID: txn.NewID(1, uint32(i+1))}
		for k := rng.IntN(50); len(tx.Writes) < 3 && k < 200; k += 1 + rng.IntN(60) {
			tx.Writes = append(tx.Writes, txn.Write{Key: fmt.Sprint("k", k), Value: []byte{byte(i)}})
		}
		key := fmt.Sprint("k", rng.IntN(220)) // some never written
		tx.Reads = []txn.Read{{Key: key, Version: a.Get(key).Writer}}
		if rng.IntN(4) == 0 {
			tx.Reads[0].Version = txn.NewID(2, 1) // a version no store holds
		}
		if got, want := a.StaleTxn(tx), a.Stale(tx.Reads); got != want {
			t.Fatalf("txn %d: StaleTxn = %v, Stale = %v", i, got, want)
		}
		a.ApplyTxn(tx)
		alone.Apply(tx.ID, tx.Writes)
		txns = append(txns, tx)
	}
	if !a.SameOrder(alone) || !alone.SameOrder(a) {
		t.Fatal("SameOrder: a store and the same writes applied alone differ")
	}
	for i, tx := range txns {
		if b.SameOrder(a) {
			t.Fatalf("SameOrder: equal after %d of %d transactions", i, len(txns))
		}
		b.ApplyTxn(tx)
	}
	if !b.SameOrder(a) || !maps.EqualFunc(a.VersionOrder(), b.VersionOrder(), slices.Equal) {
		t.Fatal("SameOrder: b replayed a's transactions and differs")
	}
	c := NewShared(keys) // the same versions, two of them in another order
	last := len(txns) - 1
	for _, tx := range append(slices.Clone(txns[:last-1]), txns[last], txns[last-1]) {
		c.ApplyTxn(tx)
	}
	overlap := slices.ContainsFunc(txns[last].Writes, func(w txn.Write) bool { return txns[last-1].WritesKey(w.Key) })
	if got, want := c.SameOrder(a), maps.EqualFunc(a.VersionOrder(), c.VersionOrder(), slices.Equal); got != want || overlap == got {
		t.Fatalf("SameOrder with the last two swapped = %v, VersionOrders equal = %v, the two overlap: %v", got, want, overlap)
	}
}

// TestDropAndCompact drops random superseded versions from a store written at random and
// requires that the latest versions are never dropped, that a dropped version's value is gone
// while the order still lists it, that Compact removes exactly the dropped versions keeping the
// others' order and positions, and that a store restored from the compacted store's checkpoint
// (the server's whole segment after a compaction) is that store.
func TestDropAndCompact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 16))
	s := New()
	keys := []string{"a", "b", "c", "d"}
	for i := range 300 {
		k := keys[rng.IntN(len(keys))]
		s.Apply(txn.NewID(1, uint32(i+1)), w(k, fmt.Sprint(i)))
	}
	before := s.VersionOrder()
	dropped := map[string]map[txn.ID]bool{}
	for _, k := range keys {
		dropped[k] = map[txn.ID]bool{}
		order := before[k]
		for _, id := range order {
			if rng.IntN(2) == 0 {
				s.Drop(k, id)
				if id != order[len(order)-1] {
					dropped[k][id] = true
				}
			}
		}
		s.Drop(k, txn.NewID(9, 9)) // never written: nothing happens
	}
	total := 0
	for _, k := range keys {
		total += len(dropped[k])
		if got := s.Get(k).Writer; got != before[k][len(before[k])-1] {
			t.Fatalf("latest of %s is %v after drops, want %v", k, got, before[k][len(before[k])-1])
		}
		for _, id := range before[k] {
			if _, ok := s.ValueOf(k, id); ok == dropped[k][id] {
				t.Fatalf("ValueOf(%s, %v) found %v, dropped %v", k, id, ok, dropped[k][id])
			}
		}
	}
	if s.Dropped() != total || !maps.EqualFunc(s.VersionOrder(), before, slices.Equal) {
		t.Fatalf("%d dropped, want %d; the order before Compact must list every version", s.Dropped(), total)
	}
	seq := s.Seq()
	live := map[string]Version{}
	for _, k := range keys {
		live[k] = s.Get(k)
	}
	if !s.Compact() || s.Dropped() != 0 || s.Versions() != 300-total || s.Seq() != seq {
		t.Fatalf("after Compact: %d dropped, %d versions (want %d), seq %d (want %d)", s.Dropped(), s.Versions(), 300-total, s.Seq(), seq)
	}
	if s.Compact() {
		t.Fatal("a second Compact found versions to remove")
	}
	for _, k := range keys {
		want := slices.DeleteFunc(slices.Clone(before[k]), func(id txn.ID) bool { return dropped[k][id] })
		if got := s.VersionOrder()[k]; !slices.Equal(got, want) {
			t.Fatalf("order of %s after Compact %v, want %v", k, got, want)
		}
		if got := s.Get(k); got.Writer != live[k].Writer || got.Seq != live[k].Seq || string(got.Value) != string(live[k].Value) {
			t.Fatalf("latest of %s after Compact %+v, want %+v", k, got, live[k])
		}
	}
	s.Apply(txn.NewID(2, 1), w("e", "new")) // installing after a compaction works as before
	r := New()
	if err := r.RestoreCheckpoint(s.AppendCheckpoint(nil)); err != nil {
		t.Fatal(err)
	}
	if !r.SameOrder(s) || r.Seq() != s.Seq() || string(r.Get("e").Value) != "new" {
		t.Fatal("the store restored from a compacted store's checkpoint differs from it")
	}
}

// TestVersionOrderAfterCompact checks that the grouping VersionOrder keeps is forgotten by
// Compact: back at the same number of versions, the store must not answer from it.
func TestVersionOrderAfterCompact(t *testing.T) {
	s := New()
	for i := range 4 {
		s.Apply(txn.NewID(1, uint32(i+1)), w("a", "x"))
	}
	s.VersionOrder()
	s.Drop("a", txn.NewID(1, 1))
	s.Drop("a", txn.NewID(1, 2))
	s.Compact()
	s.Apply(txn.NewID(2, 1), w("a", "y"))
	s.Apply(txn.NewID(2, 2), w("a", "z"))
	want := []txn.ID{txn.NewID(1, 3), txn.NewID(1, 4), txn.NewID(2, 1), txn.NewID(2, 2)}
	if got := s.VersionOrder()["a"]; !slices.Equal(got, want) {
		t.Fatalf("VersionOrder after Compact and two installs: %v, want %v", got, want)
	}
}
