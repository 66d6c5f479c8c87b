package wire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestOptionalTxnBatch: a batch (txn.NewBatch) goes through OptionalTxn and comes back equal,
// its footprint rebuilt from its members, and every truncation is refused; a batch cannot be
// encoded as a plain transaction, nor with one member or an id outside the batch range.
func TestOptionalTxnBatch(t *testing.T) {
	t1 := &txn.Txn{ID: txn.NewID(1, 2), Reads: []txn.Read{{Key: "a", Version: txn.NewID(3, 4)}}, Writes: []txn.Write{{Key: "a", Value: []byte("v")}}}
	t2 := &txn.Txn{ID: txn.NewID(2, 1), Reads: []txn.Read{{Key: "b"}}, Writes: []txn.Write{{Key: "a", Value: []byte("w")}}}
	b := txn.NewBatch(txn.BatchID(3, 9), []*txn.Txn{t1, t2})
	if want := []txn.Read{{Key: "a"}, {Key: "b"}}; !reflect.DeepEqual(b.Reads, want) || len(b.Writes) != 1 || b.Writes[0].Key != "a" {
		t.Fatalf("footprint: reads %v, writes %v", b.Reads, b.Writes)
	}
	w := NewWriter(nil)
	w.OptionalTxn(b)
	enc, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(enc)
	if got := r.OptionalTxn(); r.Done() != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("read %#v (%v), want %#v", got, r.Done(), b)
	}
	for i := range enc {
		r := NewReader(enc[:i])
		r.OptionalTxn()
		if r.Done() == nil {
			t.Fatalf("a truncation to %d of %d bytes was accepted", i, len(enc))
		}
	}
	for name, bad := range map[string]*txn.Txn{
		"one member":      txn.NewBatch(txn.BatchID(3, 9), []*txn.Txn{t1}),
		"client batch id": txn.NewBatch(txn.NewID(5, 5), []*txn.Txn{t1, t2}),
	} {
		w := NewWriter(nil)
		w.OptionalTxn(bad)
		if _, err := w.Finish(); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	w = NewWriter(nil)
	w.Txn(b)
	if _, err := w.Finish(); err == nil {
		t.Error("a batch was encoded as a plain transaction")
	}
}

// TestOptionalTxnRefusesHostileBatches decodes batches no replica sends: a flag out of range,
// an id outside the batch range, one member, too many members, a member that is a batch id, a
// repeated member. Each is refused with an error naming the problem.
func TestOptionalTxnRefusesHostileBatches(t *testing.T) {
	member := func(w *Writer, id txn.ID) { w.Txn(&txn.Txn{ID: id}) }
	for _, c := range []struct {
		name, want string
		write      func(w *Writer)
	}{
		{"flag", "transaction flag", func(w *Writer) { w.Byte(3) }},
		{"id", "batch", func(w *Writer) {
			w.Byte(optBatch)
			w.ID(txn.NewID(1, 1))
			w.Count("n", 2, 2)
			member(w, txn.NewID(1, 2))
			member(w, txn.NewID(1, 3))
		}},
		{"one member", "batch", func(w *Writer) {
			w.Byte(optBatch)
			w.ID(txn.BatchID(0, 1))
			w.Count("n", 1, 2)
			member(w, txn.NewID(1, 2))
		}},
		{"too many", "batch members", func(w *Writer) {
			w.Byte(optBatch)
			w.ID(txn.BatchID(0, 1))
			w.Count("n", MaxBatchTxns+1, MaxBatchTxns+1)
			for i := range MaxBatchTxns + 1 {
				member(w, txn.NewID(1, uint32(i+1)))
			}
		}},
		{"nested", "batch member", func(w *Writer) {
			w.Byte(optBatch)
			w.ID(txn.BatchID(0, 1))
			w.Count("n", 2, 2)
			member(w, txn.BatchID(1, 1))
			member(w, txn.NewID(1, 3))
		}},
		{"repeated", "batch member", func(w *Writer) {
			w.Byte(optBatch)
			w.ID(txn.BatchID(0, 1))
			w.Count("n", 2, 2)
			member(w, txn.NewID(1, 2))
			member(w, txn.NewID(1, 2))
		}},
	} {
		w := NewWriter(nil)
		c.write(w)
		b, err := w.Finish()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := NewReader(b)
		if got := r.OptionalTxn(); got != nil || r.Done() == nil || !strings.Contains(r.Done().Error(), c.want) {
			t.Errorf("%s: read %v, error %v; want nil and an error about %q", c.name, got, r.Done(), c.want)
		}
	}
}
