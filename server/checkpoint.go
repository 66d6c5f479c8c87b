package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/server/cluster"
)

// Checkpoints. Every so often (checkpointDue) the event loop writes, between two batches, a
// checkpoint of everything replaying the input log so far would rebuild: the replica's state
// through the protocol's own encoding (protocol.Checkpointer), its store, the clock's last
// reading, the random source's state, the timers still armed and the submissions record. The
// store is append-only, so each checkpoint writes only the versions installed since the previous
// one, as a segment (store.Store.AppendSegment) under its own key; restoring applies the
// segments in order. One Pebble batch stores the segment, the checkpoint under checkpointKey and
// the deletion of every input it covers, so a crash at any point leaves either the previous
// checkpoint and its log or the new one and the rest; restart loads the checkpoint and replays
// only the inputs after it. Protocols that do not implement protocol.Checkpointer keep the whole
// log, as before.
//
// Protocols that prune their store (protocol.StorePruner: their garbage collection drops
// versions, store.Store.Drop) get a bounded one. Their store is kept one Pebble record per
// version under versionPrefix instead of in segments: a checkpoint's batch writes the records of
// the versions installed since the previous one and not dropped yet, and deletes those of the
// versions dropped since (store.Store.Changes), so that what a drop costs on disk is one
// tombstone, and Pebble's compactions reclaim the space; a restart reads the live records in
// key order. Chosen by measurement over the alternative of pruning segments: the first design
// compacted the store and wrote it whole as one segment, and over 15 minutes of fastccs-geo its
// data directory grew 25% more than never pruning (each 6–8 MB rewrite sat in Pebble's
// write-ahead log); rewriting only the segments that lost most of their versions would still
// rewrite live versions, and segments name versions by place, which every compaction changes
// (docs/BENCHMARKS.md, "Pruned stores as one Pebble record per version"). The other protocols
// keep segments, which hold a version in fewer bytes (no key of its own) and are written and
// restored as one blob each.

var (
	// checkpointKey holds the newest checkpoint; it sorts outside the input range.
	checkpointKey = []byte("ckpt/newest")
	// segmentPrefix + the big-endian number of the first input after a checkpoint holds that
	// checkpoint's store segment (store.Store.AppendSegment).
	segmentPrefix = []byte("segment/")
	// legacySegmentPrefix + the same number holds a segment in the store's first layout
	// (store.Store.RestoreLegacySegment), which the data directories of earlier versions hold;
	// they all precede the segments in the current layout.
	legacySegmentPrefix = []byte("store/")
	// versionPrefix + store.AppendVersionKey holds the record of one version of a pruning
	// replica's store.
	versionPrefix = []byte("version/")
)

// prefixEnd returns the first key after every key that starts with prefix (which must not end
// in 0xff).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	end[len(end)-1]++
	return end
}

func segmentKey(next uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), segmentPrefix...), next)
}

// checkpointVersion is the first byte of a checkpoint: its layout's version. Version 1 had no
// store position; it is still read.
const checkpointVersion = 2

// maxCheckpointPart bounds the replica's part of a checkpoint when decoding.
const maxCheckpointPart = 1 << 40

// checkpoint is a decoded checkpoint.
type checkpoint struct {
	next     uint64 // the first input not covered
	lastUs   int64
	pcg      []byte // the random source's state
	armed    map[protocol.TimerID]int
	subs     submissions
	versions int    // in the store's segments or records
	seq      uint64 // the store's position (store.Store.Seq); 0 in layout 1
	replica  []byte // the replica's part
	size     int    // of the whole checkpoint
}

// checkpointDue reports whether the loop should write a checkpoint now: the protocol supports
// them, they are not switched off, and the inputs logged since the last one are at least the
// configured amount and at least the last checkpoint's size (so that writing checkpoints costs at
// most as much disk bandwidth as logging does, and the log after a checkpoint, which a restart
// replays, is never much larger than the checkpoint).
func (n *Node) checkpointDue() bool {
	every := n.cfg.CheckpointBytes
	if every == 0 {
		every = cluster.DefaultCheckpointBytes
	}
	if !protocol.Checkpoints(n.replica) || every < 0 {
		return false
	}
	return n.log.logged >= max(every, n.lastCheckpointBytes)
}

// writeCheckpoint writes a checkpoint of the state after every input logged so far and deletes
// those inputs from the log, in one durable batch.
func (n *Node) writeCheckpoint() error {
	start := time.Now()
	next := n.log.next
	n.logger.Info("writing checkpoint", "inputs_before", next, "logged_bytes", n.log.logged)
	blob, err := n.encodeCheckpoint(next)
	if err != nil {
		// The state is not lost, only the checkpoint: keep the log and try again after as much
		// input again.
		n.logger.Error("cannot encode a checkpoint; keeping the input log", "err", err)
		n.log.logged = 0
		return nil
	}
	b := n.log.db.NewBatch()
	defer b.Close()
	var sw storeWrite
	if n.storeRecords {
		sw, err = n.writeStoreRecords(b)
	} else {
		sw, err = n.writeStoreSegment(b, next)
	}
	if err != nil {
		return err
	}
	encodeMs := time.Since(start).Milliseconds()
	if err := b.Set(checkpointKey, blob, nil); err != nil {
		return err
	}
	if err := b.DeleteRange(inputKey(0), inputKey(next), nil); err != nil {
		return err
	}
	opts := pebble.NoSync
	if n.log.sync {
		opts = pebble.Sync
	}
	if err := b.Commit(opts); err != nil {
		return fmt.Errorf("server: writing a checkpoint: %w", err)
	}
	// Flush the memtable in the background: Pebble's open replays and flushes everything its
	// write-ahead log holds beyond its last flush, so a restart's work stays the inputs since
	// this checkpoint instead of a whole memtable's worth of inputs it has just deleted (which
	// the flush drops, covered by the deletion).
	if _, err := n.log.db.AsyncFlush(); err != nil {
		return fmt.Errorf("server: flushing after a checkpoint: %w", err)
	}
	n.log.logged = 0
	n.lastCheckpointBytes = int64(len(blob))
	n.deleteSegments = false
	n.logger.Info("checkpoint written", "inputs_before", next, "bytes", len(blob), "store_bytes", sw.bytes,
		"store_written", sw.written, "store_deleted", sw.deleted, "store_versions", n.env.store.Versions(),
		"encode_ms", encodeMs, "ms", time.Since(start).Milliseconds())
	return nil
}

// storeWrite is what a checkpoint wrote of the store: versions written and deleted (records) and
// their bytes.
type storeWrite struct{ written, deleted, bytes int }

// writeStoreSegment adds to b the segment of the versions installed since the last checkpoint,
// under the key of the first input after this one.
func (n *Node) writeStoreSegment(b *pebble.Batch, next uint64) (storeWrite, error) {
	segment := n.env.store.AppendSegment(nil, n.segmentFrom)
	w := storeWrite{written: n.env.store.Versions() - n.segmentFrom, bytes: len(segment)}
	n.segmentFrom = n.env.store.Versions()
	return w, b.Set(segmentKey(next), segment, nil)
}

// writeStoreRecords adds to b the records of the versions installed since the last checkpoint and
// not dropped, and the deletion of the records of those dropped since (store.Store.Changes), and,
// after a restore from segments, the deletion of the segments.
func (n *Node) writeStoreRecords(b *pebble.Batch) (w storeWrite, err error) {
	if n.deleteSegments {
		if err := b.DeleteRange(legacySegmentPrefix, prefixEnd(legacySegmentPrefix), nil); err != nil {
			return w, err
		}
		if err := b.DeleteRange(segmentPrefix, prefixEnd(segmentPrefix), nil); err != nil {
			return w, err
		}
	}
	var key, value []byte
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	n.env.store.Changes(func(k string, seq uint64) {
		key = store.AppendVersionKey(append(key[:0], versionPrefix...), k, seq)
		w.deleted++
		w.bytes += len(key)
		keep(b.Delete(key, nil))
	}, func(k string, v store.Version) {
		key = store.AppendVersionKey(append(key[:0], versionPrefix...), k, v.Seq)
		value = store.AppendVersionValue(value[:0], v)
		w.written++
		w.bytes += len(key) + len(value)
		keep(b.Set(key, value, nil))
	})
	return w, err
}

// encodeCheckpoint renders the checkpoint of the state after inputs 0..next-1. Layout (wire
// encoding): version, next, the clock's last reading, the random source's state, the armed
// timers (id, count; by id), the submissions (client, high, below; by client), how many versions
// the store's segments or records hold and its position (Seq), then the replica's checkpoint,
// length-prefixed.
func (n *Node) encodeCheckpoint(next uint64) ([]byte, error) {
	replica, err := n.replica.(protocol.Checkpointer).AppendCheckpoint(nil, n.codec)
	if err != nil {
		return nil, err
	}
	pcg, err := n.env.pcg.MarshalBinary()
	if err != nil {
		return nil, err
	}
	w := wire.NewWriter(nil)
	w.Byte(checkpointVersion)
	w.Uvarint(next)
	w.Varint(n.env.lastUs)
	w.Bytes("random source", pcg, wire.MaxTextLen)
	ids := slices.Sorted(maps.Keys(n.armed))
	w.Count("armed timers", len(ids), wire.MaxCheckpointCount)
	for _, id := range ids {
		w.Varint(int64(id))
		w.Int("armed timer count", n.armed[id], wire.MaxCheckpointCount)
	}
	clients := slices.Sorted(maps.Keys(n.submitted))
	w.Count("submissions", len(clients), wire.MaxCheckpointCount)
	for _, c := range clients {
		s := n.submitted[c]
		w.Uvarint(uint64(c))
		w.Uvarint(uint64(s.high))
		w.Uvarint(s.below)
	}
	versions := n.env.store.Versions()
	if n.storeRecords {
		versions = n.env.store.Live() // the records the checkpoint's batch leaves
	}
	w.Int("store versions", versions, wire.MaxCheckpointCount)
	w.Uvarint(n.env.store.Seq())
	w.Bytes("replica", replica, maxCheckpointPart)
	return w.Finish()
}

// readCheckpoint decodes the newest checkpoint, if there is one; ok is false if the data
// directory holds none.
func (n *Node) readCheckpoint() (c checkpoint, ok bool, err error) {
	blob, closer, err := n.log.db.Get(checkpointKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	defer closer.Close()
	if !protocol.Checkpoints(n.replica) {
		return c, false, fmt.Errorf("the data directory holds a checkpoint, and %s cannot restore one", n.cfg.Protocol)
	}
	r := wire.NewReader(blob)
	v := r.Byte("checkpoint version")
	if r.Err() == nil && (v < 1 || v > checkpointVersion) {
		return c, false, fmt.Errorf("checkpoint version %d, want 1 to %d", v, checkpointVersion)
	}
	c.next = r.Uvarint("next input")
	c.lastUs = r.Varint("last clock reading")
	c.pcg = bytes.Clone(r.Bytes("random source", wire.MaxTextLen))
	c.armed = map[protocol.TimerID]int{}
	for range r.Count("armed timers", wire.MaxCheckpointCount, 2) {
		id := protocol.TimerID(r.Varint("timer id"))
		c.armed[id] = r.Int("armed timer count", wire.MaxCheckpointCount)
	}
	c.subs = submissions{}
	for range r.Count("submissions", wire.MaxCheckpointCount, 3) {
		client := txn.ClientID(r.Uvarint("client"))
		c.subs[client] = submitted{high: uint32(r.Int("high", math.MaxUint32)), below: r.Uvarint("below")}
	}
	c.versions = r.Int("store versions", wire.MaxCheckpointCount)
	if v >= 2 {
		c.seq = r.Uvarint("store position")
	}
	c.replica = bytes.Clone(r.Bytes("replica", maxCheckpointPart))
	c.size = len(blob)
	return c, true, r.Done()
}

// restoreCheckpoint restores checkpoint c into the freshly built replica, its store and the node,
// with the store's segments or records as the recovery reader hands them over. It records the time its
// steps took in rec.
func (n *Node) restoreCheckpoint(c checkpoint, reader *recoveryReader, rec *recovery) error {
	start := time.Now()
	if err := n.env.pcg.UnmarshalBinary(c.pcg); err != nil {
		return err
	}
	segments := false
	for s := range reader.segments {
		restore := n.env.store.RestoreSegment
		switch {
		case s.records:
			restore = n.restoreRecords
		case s.legacy:
			restore = n.env.store.RestoreLegacySegment
		}
		segments = segments || !s.records
		if s.err == nil {
			s.err = restore(s.b)
		}
		if s.err != nil {
			return fmt.Errorf("store segment %q: %w", s.key, s.err)
		}
	}
	rec.segmentsMs = time.Since(start).Milliseconds()
	if got := n.env.store.Versions(); got != c.versions {
		return fmt.Errorf("the store segments or records hold %d versions, the checkpoint %d", got, c.versions)
	}
	if c.seq > 0 {
		if err := n.env.store.RestoreSeq(c.seq); err != nil {
			return err
		}
	}
	n.segmentFrom = c.versions
	// A pruning replica restored from segments (written before its store was kept in records)
	// writes its whole store as records at the next checkpoint, which deletes the segments.
	n.deleteSegments = n.storeRecords && segments
	if err := n.replica.(protocol.Checkpointer).RestoreCheckpoint(c.replica, n.codec); err != nil {
		// A protocol's checkpoint layout may change between Meridian versions (ec, wren, eiger,
		// fastccs, fastccs-geo and the log stages changed on 2026-11-28): say so, not only
		// which field failed to decode.
		return fmt.Errorf("the %s replica's checkpoint does not decode (was the data directory written by another "+
			"version of Meridian? replica checkpoint layouts are not kept compatible across versions): %w", n.cfg.Protocol, err)
	}
	n.env.lastUs = c.lastUs
	n.armed, n.submitted = c.armed, c.subs
	n.lastCheckpointBytes = int64(c.size)
	rec.replicaMs = time.Since(start).Milliseconds() - rec.segmentsMs
	return nil
}

// restoreRecords restores the store versions of a chunk of records (recoveryReader.readRecords):
// each record's key and value, length-prefixed.
func (n *Node) restoreRecords(chunk []byte) error {
	if !n.storeRecords {
		return fmt.Errorf("the data directory holds store records, and %s keeps its store in segments", n.cfg.Protocol)
	}
	next := func() []byte {
		l, w := binary.Uvarint(chunk)
		if w <= 0 || l > uint64(len(chunk)-w) {
			chunk = nil
			return nil
		}
		b := chunk[w : w+int(l) : w+int(l)]
		chunk = chunk[w+int(l):]
		return b
	}
	for len(chunk) > 0 {
		key, value := next(), next()
		if value == nil {
			return errors.New("a malformed chunk of store records")
		}
		if err := n.env.store.RestoreVersion(key, value); err != nil {
			return err
		}
	}
	return nil
}

// newRandSource returns the replica's random source: fixed per node, because a replay must
// draw the same numbers, and kept so that a checkpoint can save its state.
func newRandSource(index int) (*rand.PCG, *rand.Rand) {
	pcg := rand.NewPCG(uint64(index), 0x6d6572696469616e)
	return pcg, rand.New(pcg)
}
