package wire

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestComposeRoundTrip writes every composite field of a checkpoint (compose.go) and reads it
// back: the same values, nil kept apart from empty, and every truncation refused.
func TestComposeRoundTrip(t *testing.T) {
	t1 := &txn.Txn{ID: txn.NewID(1, 2), Reads: []txn.Read{{Key: "a", Version: txn.NewID(3, 4)}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}}}
	t2 := &txn.Txn{ID: txn.NewID(1, 1)}
	pool := map[txn.ID]*txn.Txn{t1.ID: t1, t2.ID: t2}
	req := protocol.Request{Client: 7, Seq: 9, Kind: protocol.Commit, Txn: t1}
	rep := protocol.Reply{Client: 7, Seq: 9, Status: txn.Aborted, Reason: "x"}
	w := NewWriter(nil)
	w.TxnsByID(pool)
	w.IDs([]txn.ID{5, 6})
	w.Uvarints(nil)
	w.Uvarints([]uint64{})
	w.Varints([]int64{-1, 2})
	w.Bools([]bool{true, false})
	w.OptionalTxn(nil)
	w.OptionalTxn(t2)
	w.Request(req, nil)
	w.Reply(rep)
	w.Message(noteCodec, &note{text: "hi"})
	b, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	again := NewWriter(nil)
	again.TxnsByID(map[txn.ID]*txn.Txn{t2.ID: t2, t1.ID: t1})
	if first, _ := again.Finish(); string(first) != string(b[:len(first)]) {
		t.Fatal("TxnsByID depends on the map's order")
	}
	read := func(b []byte) (*Reader, []any) {
		r := NewReader(b)
		return r, []any{r.TxnsByID(), r.IDs(), r.Uvarints(), r.Uvarints(), r.Varints(), r.Bools(), r.OptionalTxn(), r.OptionalTxn(),
			r.Request(nil), r.Reply(), r.Message(noteCodec)}
	}
	r, got := read(b)
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
	want := []any{pool, []txn.ID{5, 6}, []uint64(nil), []uint64{}, []int64{-1, 2}, []bool{true, false}, (*txn.Txn)(nil), t2, req, rep, &note{text: "hi"}}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("field %d: read %#v, want %#v", i, got[i], want[i])
		}
	}
	for i := range b {
		if r, _ := read(b[:i]); r.Done() == nil {
			t.Fatalf("a truncation to %d of %d bytes was accepted", i, len(b))
		}
	}
}
