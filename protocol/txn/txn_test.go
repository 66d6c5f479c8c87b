package txn

import "testing"

func TestPoolIndex(t *testing.T) {
	reader := &Txn{ID: NewID(1, 1), Reads: []Read{{Key: "x"}}, Writes: []Write{{Key: "y"}}}
	writer := &Txn{ID: NewID(2, 1), Writes: []Write{{Key: "x"}}}
	p := PoolIndex{}
	p.Add(reader)
	if p.WritesMeet(&Txn{Reads: []Read{{Key: "x"}}}) {
		t.Error("a pooled read of x made a read of x conflict")
	}
	if !p.WritesMeet(&Txn{Reads: []Read{{Key: "y"}}}) || !p.WritesMeet(&Txn{Writes: []Write{{Key: "y"}}}) {
		t.Error("the pooled write of y did not meet an access of y")
	}
	if !p.AccessedBy(writer.Writes) || p.AccessedBy([]Write{{Key: "z"}}) {
		t.Error("AccessedBy: want x accessed, z not")
	}
	p.Add(writer)
	p.Remove(reader)
	if !p.WritesMeet(&Txn{Reads: []Read{{Key: "x"}}}) || p.WritesMeet(&Txn{Reads: []Read{{Key: "y"}}}) {
		t.Error("after removing the reader: want x written, y free")
	}
	p.Remove(writer)
	if len(p) != 0 {
		t.Errorf("empty pool keeps %d keys", len(p))
	}
	p.AddWrites(reader)
	if !p.WritesMeet(&Txn{Reads: []Read{{Key: "y"}}}) || p.AccessedBy([]Write{{Key: "x"}}) {
		t.Error("AddWrites must record the writes only")
	}
	p.RemoveWrites(reader)
	if len(p) != 0 {
		t.Errorf("pool keeps %d keys after RemoveWrites", len(p))
	}
}
