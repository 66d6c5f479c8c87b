package pcc

import (
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Checkpoint appends the executor's state to w, for its replica's protocol.Checkpointer: the
// snapshot positions still held (oldest first) and the commit requests waiting for their outcome
// (in id order). Restore reads it back. The ids of forgotten snapshots (their transactions were
// submitted for commit), which snapshotOrder keeps until it reaches MaxSnapshots, are left out:
// they change nothing (the oldest held snapshot goes first either way) and made every checkpoint
// of a long run up to MaxSnapshots entries (about 0.9 MB) longer. Each entry still carries its
// presence flag, false for those in the checkpoints written before.
func (e *Executor) Checkpoint(w *wire.Writer) {
	w.Count("pcc snapshots", len(e.snapshots), wire.MaxCheckpointCount)
	for _, id := range e.snapshotOrder {
		if pos, ok := e.snapshots[id]; ok {
			w.ID(id)
			w.Bool(true)
			w.Uvarint(pos)
		}
	}
	for _, id := range wire.SortedKeys(w, "pcc waiting", e.waiting) {
		w.ID(id)
		w.Request(e.waiting[id], nil)
	}
}

// Restore replaces the executor's state by the one Checkpoint wrote.
func (e *Executor) Restore(r *wire.Reader) {
	e.snapshotOrder = make([]txn.ID, r.Count("pcc snapshots", wire.MaxCheckpointCount, 3))
	clear(e.snapshots)
	for i := range e.snapshotOrder {
		id := r.ID("pcc snapshot")
		e.snapshotOrder[i] = id
		if ok, pos := r.Bool("pcc snapshot present"), r.Uvarint("pcc snapshot position"); ok {
			e.snapshots[id] = pos
		}
	}
	clear(e.waiting)
	for range r.Count("pcc waiting", wire.MaxCheckpointCount, 2) {
		id := r.ID("pcc waiting")
		e.waiting[id] = r.Request(nil)
	}
}
