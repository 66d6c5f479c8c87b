package protocol

// Checkpointer is implemented by replicas that can write their protocol state to a checkpoint and
// restore it, so that a real node need not keep and replay every input since it first started:
// it writes a checkpoint now and then and replays only the inputs after the newest one.
//
// A checkpoint holds everything the replica's future outputs depend on except its Store, which
// the driver checkpoints itself (store.Store.AppendCheckpoint), and the Env's clock and random
// source, whose state the driver keeps too. Scratch space and caches that outputs do not depend
// on may be left out and rebuilt. The encoding must be deterministic: the same state gives the
// same bytes (iterate maps in sorted order), so that a restored replica re-encodes to the
// checkpoint it came from; the round-trip harness of internal/checkpointtest checks both that and
// that the restored replica answers every later input exactly as the original does.
//
// Both methods take the protocol's registered codec (registry.Entry.Codec), for the peer
// messages the state holds (a decision to retransmit, a buffered batch): a wrapper such as the
// network batching of protocols/smr/batch knows its inner protocol's messages only through it.
type Checkpointer interface {
	// AppendCheckpoint appends the encoding of the replica's state to dst.
	AppendCheckpoint(dst []byte, c Codec) ([]byte, error)
	// RestoreCheckpoint replaces the state of a replica freshly built by its Factory with the
	// same Config, and never started, by the state encoded in b (by AppendCheckpoint). The
	// replica's Store has already been restored. A malformed checkpoint is an error, never a
	// panic; the replica must then be discarded.
	RestoreCheckpoint(b []byte, c Codec) error
}

// Checkpoints reports whether r writes checkpoints: it implements Checkpointer and, if it wraps
// another replica (Wrapper), so does the replica it wraps. A wrapper such as the network batching
// implements Checkpointer for every protocol it wraps, and fails for those that do not.
func Checkpoints(r Replica) bool {
	if _, ok := r.(Checkpointer); !ok {
		return false
	}
	if w, ok := r.(Wrapper); ok {
		return Checkpoints(w.Inner())
	}
	return true
}

// StorePruner is implemented by replicas whose garbage collection drops versions from their
// Store (store.Store.Drop). A driver that keeps the store on disk keeps theirs one record per
// version (store.Store.Changes), so that a drop frees that version's space; the other replicas'
// stores only grow, and their driver keeps them in segments (store.Store.AppendSegment), which
// cost less per version to write and to restore.
type StorePruner interface {
	// PrunesStore marks the replica; it does nothing.
	PrunesStore()
}

// PrunesStore reports whether r, or the replica it wraps (Wrapper), is a StorePruner.
func PrunesStore(r Replica) bool {
	if _, ok := r.(StorePruner); ok {
		return true
	}
	if w, ok := r.(Wrapper); ok {
		return PrunesStore(w.Inner())
	}
	return false
}
