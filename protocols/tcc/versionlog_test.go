package tcc

import (
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestVersionLogOrdersByRankThenWriter adds versions out of order, with negative and extreme
// ranks, ties broken by writer, duplicates, and keys that prefix each other, and requires each
// key's writers sorted as the protocols' orders are.
func TestVersionLogOrdersByRankThenWriter(t *testing.T) {
	disk := store.NewMemDisk()
	l := &VersionLog{disk: disk}
	if got := l.Order(); len(got) != 0 {
		t.Fatalf("empty log: %v", got)
	}
	adds := []struct {
		key    string
		writer txn.ID
		rank   []int64
	}{
		{"a", 5, []int64{10}}, {"a", 3, []int64{-4}}, {"ab", 1, []int64{0}}, {"a", 9, []int64{10}},
		{"a", 2, []int64{math.MinInt64}}, {"a", 7, []int64{math.MaxInt64}}, {"a", 9, []int64{10}},
		{"", 4, []int64{1}}, {"b\x00", 6, []int64{2}}, {"a", 1 << 63, []int64{10}},
	}
	for _, a := range adds {
		l.Add(a.key, a.writer, a.rank...)
	}
	want := map[string][]txn.ID{"a": {2, 3, 5, 9, 1 << 63, 7}, "ab": {1}, "": {4}, "b\x00": {6}}
	if got := l.Order(); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if disk.Len() != len(adds)-1 {
		t.Fatalf("%d Disk keys for %d versions", disk.Len(), len(adds)-1)
	}

	// Ranks of several elements order element by element (the geo extension's).
	g := &VersionLog{disk: store.NewMemDisk()}
	g.Add("k", 1, 5, 2, 9)
	g.Add("k", 2, 5, 1, 100)
	g.Add("k", 3, 4, 9, 9)
	g.Add("k", 4, 5, 2, 8)
	if got := g.Order()["k"]; !slices.Equal(got, []txn.ID{3, 2, 4, 1}) {
		t.Fatalf("ranked order %v", got)
	}
}

// TestVersionLogSkipsForeignKeys: keys in its range that Add did not write (a corrupted Disk)
// are skipped, never a panic.
func TestVersionLogSkipsForeignKeys(t *testing.T) {
	disk := store.NewMemDisk()
	l := &VersionLog{disk: disk}
	l.Add("k", 7, 1)
	for _, k := range []string{"tcc-versions/", "tcc-versions/\xff", "tcc-versions/\x05ab", "tcc-versions/\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01abcdefghij"} {
		disk.Set([]byte(k), nil)
	}
	if got := l.Order(); !maps.EqualFunc(got, map[string][]txn.ID{"k": {7}}, slices.Equal) {
		t.Fatalf("order %v", got)
	}
}
