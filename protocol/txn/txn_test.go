package txn

import (
	"slices"
	"testing"
)

func TestPoolIndex(t *testing.T) {
	kt := NewKeyTable()
	reader := &Txn{ID: NewID(1, 1), Reads: []Read{{Key: "x"}}, Writes: []Write{{Key: "y"}}}
	writer := &Txn{ID: NewID(2, 1), Writes: []Write{{Key: "x"}}}
	var p PoolIndex
	p.Add(reader, kt)
	if p.WritesMeet(&Txn{Reads: []Read{{Key: "x"}}}, kt) {
		t.Error("a pooled read of x made a read of x conflict")
	}
	if !p.WritesMeet(&Txn{Reads: []Read{{Key: "y"}}}, kt) || !p.WritesMeet(&Txn{Writes: []Write{{Key: "y"}}}, kt) {
		t.Error("the pooled write of y did not meet an access of y")
	}
	if !p.AccessedBy(writer, kt) || p.AccessedBy(&Txn{Writes: []Write{{Key: "z"}}}, kt) {
		t.Error("AccessedBy: want x accessed, z not")
	}
	p.Add(writer, kt)
	p.Remove(reader, kt)
	if !p.WritesMeet(&Txn{Reads: []Read{{Key: "x"}}}, kt) || p.WritesMeet(&Txn{Reads: []Read{{Key: "y"}}}, kt) {
		t.Error("after removing the reader: want x written, y free")
	}
	p.Remove(writer, kt)
	if slices.ContainsFunc(p.counts, func(c uint64) bool { return c != 0 }) {
		t.Errorf("empty pool keeps counts %v", p.counts)
	}
	p.AddWrites(reader, kt)
	if !p.WritesMeet(&Txn{Reads: []Read{{Key: "y"}}}, kt) || p.AccessedBy(&Txn{Writes: []Write{{Key: "x"}}}, kt) {
		t.Error("AddWrites must record the writes only")
	}
	p.RemoveWrites(reader, kt)
	if slices.ContainsFunc(p.counts, func(c uint64) bool { return c != 0 }) {
		t.Errorf("pool keeps counts %v after RemoveWrites", p.counts)
	}
}

func TestKeyNumbers(t *testing.T) {
	kt, other := NewKeyTable(), NewKeyTable()
	other.Number("y")
	tx := &Txn{Reads: []Read{{Key: "x"}, {Key: "y"}}, Writes: []Write{{Key: "y"}, {Key: "z"}}}
	reads, writes := tx.KeyNumbers(kt)
	if !slices.Equal(reads, []int32{0, 1}) || !slices.Equal(writes, []int32{1, 2}) {
		t.Fatalf("numbers in a fresh table: reads %v, writes %v; want [0 1] and [1 2]", reads, writes)
	}
	if kt.Len() != 3 || kt.Name(2) != "z" {
		t.Errorf("table holds %d keys, key 2 is %q; want 3 keys, z", kt.Len(), kt.Name(2))
	}
	reads, writes = tx.KeyNumbers(other) // another table: numbered again there
	if !slices.Equal(reads, []int32{1, 0}) || !slices.Equal(writes, []int32{0, 2}) {
		t.Errorf("numbers in the other table: reads %v, writes %v; want [1 0] and [0 2]", reads, writes)
	}
	if k, ok := kt.FindBytes([]byte("y")); !ok || k != 1 {
		t.Errorf("FindBytes(y) = %d, %v; want 1, true", k, ok)
	}
}

// TestPoolIndexCounts: a key stays written while one of its writers is pooled, and accessed
// while one of its readers is.
func TestPoolIndexCounts(t *testing.T) {
	kt := NewKeyTable()
	w1 := &Txn{ID: NewID(1, 1), Writes: []Write{{Key: "x"}}}
	w2 := &Txn{ID: NewID(2, 1), Writes: []Write{{Key: "x"}}}
	r := &Txn{ID: NewID(3, 1), Reads: []Read{{Key: "x"}}}
	readX := &Txn{Reads: []Read{{Key: "x"}}}
	var p PoolIndex
	p.Add(w1, kt)
	p.Add(w2, kt)
	p.Add(r, kt)
	p.Remove(w1, kt)
	if !p.WritesMeet(readX, kt) {
		t.Error("x is still written by w2")
	}
	p.Remove(w2, kt)
	if p.WritesMeet(readX, kt) || !p.AccessedBy(w1, kt) {
		t.Error("with only the reader pooled: want x accessed, not written")
	}
	p.Remove(r, kt)
	if p.AccessedBy(w1, kt) {
		t.Error("empty pool: x still accessed")
	}
}
