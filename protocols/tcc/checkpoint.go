package tcc

import "github.com/meridian-kv/meridian/protocol/wire"

// Checkpoint appends the log's state to w, for its replica's protocol.Checkpointer: whether
// recording is on. The events not yet drained are a measurement buffer the driver empties, not
// state the replica's outputs depend on: a restored replica starts with none (a restarted node
// reports what it commits from then on). Restore reads it back.
func (l *VisibilityLog) Checkpoint(w *wire.Writer) { w.Bool(l.on) }

// Restore replaces the log's state by the one Checkpoint wrote, with no events.
func (l *VisibilityLog) Restore(r *wire.Reader) {
	l.on, l.events, l.dropped = r.Bool("visibility on"), nil, 0
}

// CheckpointVisibility appends one visibility event; RestoreVisibility reads it.
func CheckpointVisibility(w *wire.Writer, v Visibility) {
	w.ID(v.Tx)
	w.Varint(v.CommitUs)
	w.Varint(v.VisibleUs)
	w.Int("visibility participants", v.Participants, wire.MaxCheckpointCount)
	w.Varint(v.DecidedUs)
}

// RestoreVisibility reads an event written by CheckpointVisibility.
func RestoreVisibility(r *wire.Reader) Visibility {
	return Visibility{Tx: r.ID("visibility tx"), CommitUs: r.Varint("visibility commit"), VisibleUs: r.Varint("visibility visible"),
		Participants: r.Int("visibility participants", wire.MaxCheckpointCount), DecidedUs: r.Varint("visibility decided")}
}

// CheckpointWaiting appends the items w holds with their thresholds, in the heap's own order (so
// that the restored heap releases ties in the same order), each item by item.
func CheckpointWaiting[T any](wr *wire.Writer, w *Waiting[T], item func(*wire.Writer, T)) {
	wr.Count("waiting items", len(w.h), wire.MaxCheckpointCount)
	for _, x := range w.h {
		wr.Varint(x.at)
		item(wr, x.item)
	}
}

// RestoreWaiting replaces the items of w by those CheckpointWaiting wrote, reading each with
// item.
func RestoreWaiting[T any](r *wire.Reader, w *Waiting[T], item func(*wire.Reader) T) {
	w.h = make(waitHeap[T], r.Count("waiting items", wire.MaxCheckpointCount, 2))
	for i := range w.h {
		w.h[i] = waiting[T]{at: r.Varint("waiting threshold")}
		w.h[i].item = item(r)
	}
}
