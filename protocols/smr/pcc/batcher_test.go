package pcc

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// timerEnv is fakeEnv that records the timers set.
type timerEnv struct {
	fakeEnv
	timers []protocol.TimerID
}

func (e *timerEnv) SetTimer(_ int64, id protocol.TimerID) { e.timers = append(e.timers, id) }

// TestBatcherClosesBatches: the first transaction of a batch arms the window timer once; a
// repeated transaction is ignored; the timer closes the batch (one transaction: itself; more: a
// batch with the node's next id, members in arrival order); MaxBatchTxns closes it at once; an
// empty window closes nothing.
func TestBatcherClosesBatches(t *testing.T) {
	env := &timerEnv{fakeEnv: fakeEnv{st: store.New()}}
	b := NewBatcher(env, 2, 20_000, 7)
	t1, t2 := write(txn.NewID(1, 1), "x", "1"), write(txn.NewID(2, 1), "y", "1")
	if b.Add(t1) != nil || b.Add(t1) != nil || len(env.timers) != 1 || env.timers[0] != 7 || b.Len() != 1 {
		t.Fatalf("after adding t1 twice: timers %v, %d pending", env.timers, b.Len())
	}
	if got := b.Fire(); got != t1 {
		t.Fatalf("a window with one transaction closed as %v, want the transaction", got)
	}
	b.Add(t1)
	b.Add(t2)
	got := b.Fire()
	if got.ID != txn.BatchID(2, 1) || !reflect.DeepEqual(got.Members, []*txn.Txn{t1, t2}) || len(env.timers) != 2 {
		t.Fatalf("batch %+v (timers %v), want batch %v of t1, t2", got, env.timers, txn.BatchID(2, 1))
	}
	if b.Fire() != nil {
		t.Fatal("an empty window closed a batch")
	}
	var full *txn.Txn
	for i := range MaxBatchTxns {
		full = b.Add(write(txn.NewID(3, uint32(i+1)), "z", "1"))
	}
	if full == nil || len(full.Members) != MaxBatchTxns || full.ID != txn.BatchID(2, 2) || b.Len() != 0 {
		t.Fatalf("%d transactions did not close a batch at once", MaxBatchTxns)
	}
}

// TestBatcherCheckpoint: an open batch, the counter and the timer flag survive a checkpoint; a
// checkpoint with instance batching is refused by a replica without it.
func TestBatcherCheckpoint(t *testing.T) {
	env := &timerEnv{fakeEnv: fakeEnv{st: store.New()}}
	b := NewBatcher(env, 1, 20_000, 7)
	b.Add(write(txn.NewID(1, 1), "x", "1"))
	b.Add(write(txn.NewID(1, 2), "y", "1"))
	b.Fire()
	b.Add(write(txn.NewID(2, 1), "x", "2"))
	w := wire.NewWriter(nil)
	b.Checkpoint(w)
	ckpt, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c := NewBatcher(env, 1, 20_000, 7)
	r := wire.NewReader(ckpt)
	c.Restore(r)
	if err := r.Done(); err != nil || !reflect.DeepEqual(b, c) {
		t.Fatalf("restored %+v (%v), want %+v", c, err, b)
	}
	var off *Batcher
	r = wire.NewReader(ckpt)
	off.Restore(r)
	if r.Done() == nil {
		t.Fatal("a replica without instance batching accepted a checkpoint with it")
	}
}

// TestDeliverBatchValidatesEachMember: the members of a delivered batch are validated one by
// one in batch order: a member that read what an earlier member wrote aborts alone, the others
// commit, and each waiting client gets its own outcome; abandoning a batch aborts every waiting
// member.
func TestDeliverBatchValidatesEachMember(t *testing.T) {
	env := &fakeEnv{st: store.New()}
	e := New(env, "test", ReadOnlyOrdered)
	a := write(txn.NewID(1, 1), "x", "1")
	b := &txn.Txn{ID: txn.NewID(2, 1), Reads: []txn.Read{{Key: "x"}}, Writes: []txn.Write{{Key: "y", Value: []byte("1")}}}
	c := write(txn.NewID(3, 1), "z", "1")
	for _, m := range []*txn.Txn{a, b, c} {
		e.Admit(commit(m))
	}
	if e.Deliver(txn.NewBatch(txn.BatchID(0, 1), []*txn.Txn{a, b, c})) {
		t.Fatal("a batch with an aborted member reported every member committed")
	}
	want := map[txn.ClientID]txn.Status{1: txn.Committed, 2: txn.Aborted, 3: txn.Committed}
	for _, r := range env.replies {
		if r.Status != want[r.Client] {
			t.Errorf("client %d: %v, want %v", r.Client, r.Status, want[r.Client])
		}
	}
	if len(env.replies) != 3 || env.st.Get("y").Writer != txn.None || env.st.Get("z").Writer != c.ID {
		t.Fatalf("%d replies, y by %v, z by %v", len(env.replies), env.st.Get("y").Writer, env.st.Get("z").Writer)
	}
	d, f := write(txn.NewID(4, 1), "x", "2"), write(txn.NewID(5, 1), "w", "2")
	e.Admit(commit(d))
	e.Admit(commit(f))
	e.Abandon(txn.NewBatch(txn.BatchID(0, 2), []*txn.Txn{d, f}), "gone")
	if len(env.replies) != 5 || env.replies[3].Status != txn.Aborted || env.replies[4].Status != txn.Aborted || e.Waiting() != 0 {
		t.Fatalf("replies %+v, %d waiting; want both members aborted", env.replies[3:], e.Waiting())
	}
}
