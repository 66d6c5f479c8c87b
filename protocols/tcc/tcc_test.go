package tcc

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

func TestPartitionOfIsStableAndSpreads(t *testing.T) {
	counts := make([]int, 8)
	for i := range 8000 {
		k := "k" + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + string(rune('0'+i%10)) + string(rune(i))
		p := PartitionOf(k, 8)
		if p != PartitionOf(k, 8) || p < 0 || p >= 8 {
			t.Fatalf("PartitionOf(%q) = %d", k, p)
		}
		counts[p]++
	}
	for p, n := range counts {
		if n < 700 || n > 1300 {
			t.Errorf("partition %d got %d of 8000 keys", p, n)
		}
	}
	if PartitionOf("k1", 1) != 0 {
		t.Error("one partition must own every key")
	}
}

func TestNewLayout(t *testing.T) {
	l, err := NewLayout(PartitionedNodes(2, 3), 2)
	if err != nil {
		t.Fatal(err)
	}
	if l.Partitions() != 3 || l.Node[1][2] != 5 || l.Node[0][1] != 1 {
		t.Fatalf("layout %v", l.Node)
	}
	bad := map[string][]protocol.Node{
		"two nodes for partition 0":   {{ID: 0, DC: 0, Partition: 0}, {ID: 1, DC: 0, Partition: 0}},
		"has no node for partition 1": {{ID: 0, DC: 0, Partition: 0}, {ID: 1, DC: 0, Partition: 2}},
		"malformed placement":         {{ID: 1, DC: 0, Partition: 0}},
		"datacenter 1 has 1 partitions": {{ID: 0, DC: 0, Partition: 0}, {ID: 1, DC: 0, Partition: 1},
			{ID: 2, DC: 1, Partition: 0}},
	}
	for _, want := range slices.Sorted(maps.Keys(bad)) {
		dcs := 1
		if strings.HasPrefix(want, "datacenter 1") {
			dcs = 2
		}
		if _, err := NewLayout(bad[want], dcs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewLayout: error %v, want one saying %q", err, want)
		}
	}
	if _, err := SingleDC("x", "why", PartitionedNodes(2, 2), 2); err == nil || !strings.Contains(err.Error(), "one datacenter only (why)") {
		t.Errorf("SingleDC on two datacenters: %v", err)
	}
	if nodes, err := SingleDC("x", "why", PartitionedNodes(1, 2), 1); err != nil || !slices.Equal(nodes, []protocol.NodeID{0, 1}) {
		t.Errorf("SingleDC = %v, %v", nodes, err)
	}
}

func TestGroupKeysDeduplicatesInOrder(t *testing.T) {
	keys := []string{"a", "b", "c", "a", "d", "e", "b"}
	parts, keysOf := GroupKeys(keys, 3)
	if !slices.IsSorted(parts) {
		t.Fatalf("partitions %v not in order", parts)
	}
	var all []string
	for _, p := range parts {
		for _, k := range keysOf[p] {
			if PartitionOf(k, 3) != p {
				t.Errorf("%s grouped under partition %d", k, p)
			}
		}
		all = append(all, keysOf[p]...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("grouped keys %v", all)
	}
}

func TestStampOrder(t *testing.T) {
	a, b := Stamp{Time: 5, Writer: txn.NewID(2, 1)}, Stamp{Time: 5, Writer: txn.NewID(3, 1)}
	if a.Compare(b) != -1 || b.Compare(a) != 1 || a.Compare(a) != 0 || (Stamp{Time: 4, Writer: b.Writer}).Compare(a) != -1 {
		t.Fatal("stamps must order by time, then writer")
	}
}

func TestWaitingReleasesByThreshold(t *testing.T) {
	var w Waiting[int64]
	in := []int64{5, 3, 9, 1, 7, 3, 2, 8}
	for _, x := range in {
		w.Add(x, x)
	}
	var out []int64
	w.Release(4, func(x int64) { out = append(out, x) })
	if !slices.Equal(out, []int64{1, 2, 3, 3}) || w.Len() != 4 {
		t.Fatalf("released %v up to 4, %d left", out, w.Len())
	}
	w.Release(100, func(x int64) { out = append(out, x) })
	if want := []int64{1, 2, 3, 3, 5, 7, 8, 9}; !slices.Equal(out, want) || w.Len() != 0 {
		t.Fatalf("released %v, want %v", out, want)
	}
}
