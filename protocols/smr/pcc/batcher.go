package pcc

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Instance batching (spec alvin.md §5.3's alternative mode, batch_mode=instance): a proposer
// collects the transactions it is to order during one window and orders them as one instance,
// a batch (txn.NewBatch). The ordering protocol sees one command whose read and write sets are
// the union of its members' (so it conflicts with whatever one of its members conflicts with);
// every replica delivers the batch's members one after the other, in batch order, each validated
// on its own (Deliver), so a member that read something an earlier member or an earlier
// transaction overwrote aborts alone.
//
// The seed (ALVIN, §5 Evaluation) says only "we batch messages for all competitors, using a
// window of 20 to 50 msec, according to the nodes deployed"; the default, network-level batching
// (package batch), is that reading. This mode is the spec's alternative, and its choices are
// ours:
//
//   - A batch closes when its window has passed since its first transaction, or at once when it
//     holds MaxBatchTxns transactions or MaxBatchBytes bytes (the thresholds of network
//     batching). A batch opened right after a full one closes when the older window ends (one
//     timer is armed at a time), never later than its own window.
//   - A batch of one transaction is ordered as that transaction: batching adds nothing to it.
//   - Batch ids are txn.BatchID(node, seq) with a per-node counter: unique, and never a client's.

// Bounds of one batch: it closes at once when it reaches either.
const (
	// MaxBatchTxns is the largest number of transactions of one batch (at most
	// wire.MaxBatchTxns, which bounds a batch on the wire).
	MaxBatchTxns = 1000
	// MaxBatchBytes closes a batch whose transactions' SizeBytes add up to this much.
	MaxBatchBytes = 1 << 20
)

// Batcher collects a proposer's transactions into batches. It is not safe for concurrent use;
// its replica's handlers call it. Its replica arms nothing itself: the Batcher sets its replica's
// timer (the id given to NewBatcher) and the replica calls Fire when that timer fires.
type Batcher struct {
	env      protocol.Env
	timer    protocol.TimerID
	node     uint32
	windowUs int64
	seq      uint32 // the last batch's sequence number
	pending  []*txn.Txn
	ids      map[txn.ID]bool // the pending transactions' ids
	bytes    int
	armed    bool // the window timer is set and has not fired
}

// NewBatcher returns the batcher of the replica with index node (its batches' ids carry it),
// closing batches windowUs after their first transaction with the replica's timer id timer.
func NewBatcher(env protocol.Env, node int, windowUs int64, timer protocol.TimerID) *Batcher {
	return &Batcher{env: env, timer: timer, node: uint32(node), windowUs: windowUs, ids: map[txn.ID]bool{}}
}

// Add puts t in the open batch (a transaction already in it is ignored) and returns the batch
// to order now if that filled it, else nil. The first transaction of a batch arms the timer.
func (b *Batcher) Add(t *txn.Txn) *txn.Txn {
	if b.ids[t.ID] {
		return nil
	}
	b.ids[t.ID] = true
	b.pending = append(b.pending, t)
	b.bytes += t.SizeBytes()
	if !b.armed {
		b.armed = true
		b.env.SetTimer(b.windowUs, b.timer)
	}
	if len(b.pending) >= MaxBatchTxns || b.bytes >= MaxBatchBytes {
		return b.take()
	}
	return nil
}

// Fire handles the window timer: it returns the open batch to order (nil if it is empty).
func (b *Batcher) Fire() *txn.Txn {
	b.armed = false
	return b.take()
}

// Drop forgets the open batch (a deposed Multi-Paxos leader: the origins send its transactions
// to the next leader).
func (b *Batcher) Drop() {
	b.pending, b.bytes = nil, 0
	clear(b.ids)
}

// Len reports how many transactions wait in the open batch.
func (b *Batcher) Len() int { return len(b.pending) }

// take closes the open batch: nil if it is empty, its transaction if it holds one, else a
// batch with the next id.
func (b *Batcher) take() *txn.Txn {
	pending := b.pending
	b.Drop()
	switch len(pending) {
	case 0:
		return nil
	case 1:
		return pending[0]
	}
	b.seq++
	return txn.NewBatch(txn.BatchID(b.node, b.seq), pending)
}

// Checkpoint appends the batcher's state to w: whether there is a batcher (b may be nil:
// instance batching is off), the batch counter, the timer flag and the open batch. Restore reads
// it back.
func (b *Batcher) Checkpoint(w *wire.Writer) {
	w.Bool(b != nil)
	if b == nil {
		return
	}
	w.Uvarint(uint64(b.seq))
	w.Bool(b.armed)
	w.Count("batcher pending", len(b.pending), MaxBatchTxns)
	for _, t := range b.pending {
		w.Txn(t)
	}
}

// Restore replaces the batcher's state by the one Checkpoint wrote. It refuses a checkpoint of
// a replica whose instance batching was on (off) into one where it is off (on); b may be nil.
func (b *Batcher) Restore(r *wire.Reader) {
	if r.Bool("batcher present") != (b != nil) {
		r.Fail("batcher", "the checkpoint and the replica disagree on batch_mode=instance")
		return
	}
	if b == nil {
		return
	}
	b.Drop()
	b.seq = uint32(r.Int("batcher seq", 1<<32-1))
	b.armed = r.Bool("batcher armed")
	for range r.Count("batcher pending", MaxBatchTxns, 3) {
		t := r.Txn()
		if r.Err() != nil {
			return
		}
		b.ids[t.ID] = true
		b.pending = append(b.pending, t)
		b.bytes += t.SizeBytes()
	}
}
