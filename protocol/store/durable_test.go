package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestRecordsFollowChanges keeps a store's records in a map as a driver keeps them in Pebble
// (Changes after every few transactions, with drops and read-only positions in between) and
// checks that a store restored from the records, in key order, holds exactly the versions not
// dropped, reads as the original at every position, and that the records never outnumber the
// live versions.
func TestRecordsFollowChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	s := New()
	s.TrackChanges(true)
	records := map[string][]byte{}
	deleted, installed := 0, 0
	sync := func() {
		s.Changes(func(key string, seq uint64) {
			k := string(AppendVersionKey(nil, key, seq))
			if _, ok := records[k]; !ok {
				t.Fatalf("Changes deletes %q at %d, which has no record", key, seq)
			}
			delete(records, k)
			deleted++
		}, func(key string, v Version) {
			records[string(AppendVersionKey(nil, key, v.Seq))] = AppendVersionValue(nil, v)
		})
		if len(records) != s.Live() {
			t.Fatalf("%d records, %d live versions", len(records), s.Live())
		}
	}
	keys := []string{"a", "b", "c", "d", "e"}
	for i := range 2000 {
		a, b := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
		if a == b {
			s.Apply(txn.NewID(1, uint32(i+1)), w(a, fmt.Sprint(i)))
		} else {
			s.Apply(txn.NewID(1, uint32(i+1)), w(a, fmt.Sprint(i), b, fmt.Sprint(-i)))
		}
		installed++
		if a != b {
			installed++
		}
		for range 3 { // drop random older versions of random keys
			k := keys[rng.IntN(len(keys))]
			if order := s.VersionOrder()[k]; len(order) > 1 {
				s.Drop(k, order[rng.IntN(len(order)-1)])
			}
		}
		if rng.IntN(10) == 0 { // a position without versions, as read-only transactions take
			s.Apply(txn.NewID(2, uint32(i+1)), nil)
		}
		if rng.IntN(50) == 0 {
			sync()
		}
	}
	sync()
	if deleted == 0 || s.Versions() >= installed {
		t.Fatalf("%d records deleted, %d versions held: the test must drop and compact", deleted, s.Versions())
	}
	r := New()
	for _, k := range slices.Sorted(maps.Keys(records)) {
		if err := r.RestoreVersion([]byte(k), records[k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RestoreSeq(s.Seq()); err != nil {
		t.Fatal(err)
	}
	live := map[string][]txn.ID{}
	for k, order := range s.VersionOrder() {
		for _, id := range order {
			if _, ok := s.ValueOf(k, id); ok {
				live[k] = append(live[k], id)
			}
		}
	}
	if !maps.EqualFunc(r.VersionOrder(), live, slices.Equal) || r.Seq() != s.Seq() {
		t.Fatalf("restored order %v at %d, want %v at %d", r.VersionOrder(), r.Seq(), live, s.Seq())
	}
	for seq := uint64(0); seq <= s.Seq(); seq += 7 {
		for _, k := range keys {
			want := s.GetAt(k, seq)
			if _, ok := s.ValueOf(k, want.Writer); !ok && want.Writer != txn.None {
				continue // dropped: no read selects it
			}
			if got := r.GetAt(k, seq); got.Writer != want.Writer || string(got.Value) != string(want.Value) || got.Seq != want.Seq {
				t.Fatalf("GetAt(%s, %d) = %+v, want %+v", k, seq, got, want)
			}
		}
	}
	if r.RestoreSeq(s.Seq()-1) == nil {
		t.Error("RestoreSeq moved the position back")
	}
	for _, bad := range [][2][]byte{{nil, {1}}, {{9, 'a'}, {1}}, {AppendVersionKey(nil, "a", 0), {1}}, {AppendVersionKey(nil, "a", 3), nil}} {
		if New().RestoreVersion(bad[0], bad[1]) == nil {
			t.Errorf("RestoreVersion(%q, %q) accepted a malformed record", bad[0], bad[1])
		}
	}
	again := New()
	if err := again.RestoreVersion(AppendVersionKey(nil, "a", 5), []byte{1}); err != nil {
		t.Fatal(err)
	}
	if again.RestoreVersion(AppendVersionKey(nil, "a", 5), []byte{2}) == nil {
		t.Error("RestoreVersion accepted a version at the position of the key's latest")
	}
}
