package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// recovery describes a node's recovery, for its log line: what it restored and how long each
// step took.
type recovery struct {
	checkpoint     checkpoint
	fromCheckpoint bool // the data directory held a checkpoint
	replayed       int  // inputs replayed after the checkpoint
	// openMs: opening the data directory (Pebble); segmentsMs: restoring the store's segments;
	// replicaMs: the rest of the checkpoint; replayMs: replaying the inputs after it.
	openMs, segmentsMs, replicaMs, replayMs int64
}

// recover restores the newest checkpoint, if any, then replays the input log after it, and fills
// in rec. The timers still armed are left in n.armed. A recovery reader reads the store's
// segments and the inputs ahead of it, so that reading and decoding overlap restoring.
func (n *Node) recover(rec *recovery) error {
	var err error
	if rec.checkpoint, rec.fromCheckpoint, err = n.readCheckpoint(); err != nil {
		return fmt.Errorf("recovering from the checkpoint: %w", err)
	}
	reader := n.startRecoveryReader(rec.fromCheckpoint, rec.checkpoint.next)
	defer reader.close()
	if rec.fromCheckpoint {
		if err := n.restoreCheckpoint(rec.checkpoint, reader, rec); err != nil {
			return fmt.Errorf("recovering from the checkpoint: %w", err)
		}
	}
	if n.storeRecords && n.cfg.CheckpointBytes >= 0 {
		// The replayed inputs' versions and drops are changes for the next checkpoint, and so is
		// a store restored from segments. (A node that never checkpoints tracks nothing: nothing
		// would ever take the changes.)
		n.env.store.TrackChanges(!n.deleteSegments)
	}
	// The log after a checkpoint may be empty: number new inputs after those it covers.
	n.log.next = max(n.log.next, rec.checkpoint.next)
	start := time.Now()
	for r := range reader.inputs {
		if r.err == nil {
			r.err = n.replayInput(r.recorded, n.armed)
		}
		if r.err != nil {
			return fmt.Errorf("recovering from the input log (record %d after the checkpoint): %w", rec.replayed, r.err)
		}
		rec.replayed++
	}
	rec.replayMs = time.Since(start).Milliseconds()
	return nil
}

// recoveryReader reads the data directory for a recovery on a goroutine of its own: the store's
// segments, copied out of Pebble, then the inputs after the checkpoint, decoded. An error ends
// its channel with an item that carries it.
type recoveryReader struct {
	segments chan readSegment
	inputs   chan readInput
	stop     chan struct{} // closed when recovery no longer reads
	done     chan struct{} // closed when the goroutine has returned
}

// readSegment is a store segment, or the error that ended reading them.
type readSegment struct {
	key     []byte
	b       []byte
	legacy  bool // in the store's first layout (legacySegmentPrefix)
	records bool // a chunk of store records (readRecords), not a segment
	err     error
}

// readInput is a decoded input, or the error that ended reading them.
type readInput struct {
	recorded
	err error
}

// startRecoveryReader starts reading the store's segments, if the data directory holds a
// checkpoint, and then the inputs from number from on.
func (n *Node) startRecoveryReader(segments bool, from uint64) *recoveryReader {
	r := &recoveryReader{
		segments: make(chan readSegment, 2),
		inputs:   make(chan readInput, 256),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go func() {
		defer close(r.done)
		defer close(r.inputs)
		if segments {
			n.readSegments(r, legacySegmentPrefix, true) // the legacy ones precede the others
			n.readSegments(r, segmentPrefix, false)
			n.readRecords(r)
		}
		close(r.segments)
		err := n.log.replay(from, func(rec []byte) error {
			d, err := n.decodeInput(bytes.Clone(rec))
			if err != nil {
				return err
			}
			return handOver(r, r.inputs, readInput{recorded: d})
		})
		if err != nil && !errors.Is(err, errRecoveryStopped) {
			handOver(r, r.inputs, readInput{err: err})
		}
	}()
	return r
}

// errRecoveryStopped ends the reader's iteration once recovery no longer reads.
var errRecoveryStopped = errors.New("recovery stopped reading")

// handOver hands item over on ch unless recovery has stopped reading.
func handOver[T any](r *recoveryReader, ch chan<- T, item T) error {
	select {
	case ch <- item:
		return nil
	case <-r.stop:
		return errRecoveryStopped
	}
}

// readSegments hands over the segments whose keys start with prefix (which ends in '/'), in key
// order.
func (n *Node) readSegments(r *recoveryReader, prefix []byte, legacy bool) {
	upper := append(bytes.Clone(prefix[:len(prefix)-1]), '/'+1)
	iter, err := n.log.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		handOver(r, r.segments, readSegment{key: prefix, err: err})
		return
	}
	for iter.First(); iter.Valid(); iter.Next() {
		item := readSegment{key: bytes.Clone(iter.Key()), b: bytes.Clone(iter.Value()), legacy: legacy}
		if handOver(r, r.segments, item) != nil {
			break
		}
	}
	if err := iter.Close(); err != nil {
		handOver(r, r.segments, readSegment{key: prefix, err: err})
	}
}

// recordsChunkBytes is about how many bytes of store records the reader hands over at once.
const recordsChunkBytes = 256 << 10

// readRecords hands over the store's records (versionPrefix), in key order, in chunks of about
// recordsChunkBytes: each record's key (without the prefix) and value, length-prefixed.
func (n *Node) readRecords(r *recoveryReader) {
	iter, err := n.log.db.NewIter(&pebble.IterOptions{LowerBound: versionPrefix, UpperBound: prefixEnd(versionPrefix)})
	if err != nil {
		handOver(r, r.segments, readSegment{key: versionPrefix, err: err})
		return
	}
	var chunk []byte
	for iter.First(); iter.Valid(); iter.Next() {
		key, value := iter.Key()[len(versionPrefix):], iter.Value()
		chunk = binary.AppendUvarint(chunk, uint64(len(key)))
		chunk = append(chunk, key...)
		chunk = binary.AppendUvarint(chunk, uint64(len(value)))
		chunk = append(chunk, value...)
		if len(chunk) >= recordsChunkBytes {
			if handOver(r, r.segments, readSegment{key: versionPrefix, b: chunk, records: true}) != nil {
				break
			}
			chunk = nil
		}
	}
	if len(chunk) > 0 {
		handOver(r, r.segments, readSegment{key: versionPrefix, b: chunk, records: true})
	}
	if err := iter.Close(); err != nil {
		handOver(r, r.segments, readSegment{key: versionPrefix, err: err})
	}
}

// close stops the reader and waits for its goroutine.
func (r *recoveryReader) close() {
	close(r.stop)
	<-r.done
}
