package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// Durable versions: a store kept on disk one record per version, for protocols whose garbage
// collection drops versions (Drop). A driver writes each version installed as its own record,
// under VersionKey, and deletes a dropped version's record, so that what a drop costs on disk is
// that version's record and a tombstone, and the disk's own compactions reclaim the space (the
// network server keeps the records in its Pebble). Segments (AppendSegment) cannot do that: they
// hold many versions each, by place in the store, and a compaction changes the places, so
// pruning them meant rewriting the whole store (measured in docs/BENCHMARKS.md: 6–8 MB per
// rewrite on a 15-minute fastccs-geo run, a larger data directory than never pruning).

// journal is what changed in a store since its driver last asked (Changes).
type journal struct {
	from  int32            // the place of the first version installed since
	drops []droppedVersion // versions installed before from and dropped since
}

// droppedVersion names a dropped version by key number and installation position, which its
// record's key is made of.
type droppedVersion struct {
	key int32
	seq uint64
}

// TrackChanges makes the store remember its changes for Changes from now on; stored says whether
// the versions it holds are on disk already (restored from their records) or are changes too.
// Without it a store remembers nothing (the simulator's).
func (s *Store) TrackChanges(stored bool) {
	s.journal = &journal{}
	if stored {
		s.journal.from = s.n
	}
}

// Changes calls drop with every version dropped since the last Changes (or TrackChanges) that
// was installed before it, whose record the driver deletes, then put with every version installed
// since and not dropped, whose record it writes; then it forgets them and compacts the store once
// half of its versions are dropped (versions dropped before their record was written are never
// reported). The key and Version are valid during the call only.
func (s *Store) Changes(drop func(key string, seq uint64), put func(key string, v Version)) {
	j := s.journal
	for _, d := range j.drops {
		drop(s.keys.Name(d.key), d.seq)
	}
	for i := j.from; i < s.n; i++ {
		if !s.isDropped(i) {
			e := s.at(i)
			put(s.keys.Name(e.key), e.Version)
		}
	}
	j.drops, j.from = j.drops[:0], s.n
	if 2*s.ndropped >= s.n {
		s.Compact()
	}
}

// Live returns how many versions the store holds that are not dropped: after Changes, how many
// records its driver keeps.
func (s *Store) Live() int { return int(s.n - s.ndropped) }

// AppendVersionKey appends the key of the record of key's version installed at position seq: the
// key's length (uvarint), the key and seq (big-endian), so that records sort by key and then by
// installation, the order RestoreVersion takes them in.
func AppendVersionKey(dst []byte, key string, seq uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// AppendVersionValue appends the value of v's record: the writer (uvarint) and the value.
func AppendVersionValue(dst []byte, v Version) []byte {
	return append(binary.AppendUvarint(dst, uint64(v.Writer)), v.Value...)
}

// errRecord is wrapped by every error of RestoreVersion.
var errRecord = errors.New("store: malformed version record")

// RestoreVersion installs the version a record holds (AppendVersionKey, AppendVersionValue) into
// a store being restored from its records, which must come in key order. The value is kept as a
// slice of value, which the caller must not modify afterwards. It never panics; on error the
// store must be discarded.
func (s *Store) RestoreVersion(key, value []byte) error {
	n, w := binary.Uvarint(key)
	if w <= 0 || len(key) < w+8 || n != uint64(len(key)-w-8) {
		return fmt.Errorf("%w: key of %d bytes", errRecord, len(key))
	}
	name := key[w : len(key)-8]
	seq := binary.BigEndian.Uint64(key[len(key)-8:])
	writer, vw := binary.Uvarint(value)
	if vw <= 0 || seq == 0 {
		return fmt.Errorf("%w: %q at position %d", errRecord, name, seq)
	}
	k, ok := s.keys.FindBytes(name) // no copy of name unless the table lacks it
	if !ok {
		k = s.keys.Number(string(name))
	}
	if last := s.lastOf(k); last >= 0 && s.at(last).Seq >= seq {
		return fmt.Errorf("%w: %q at position %d after position %d", errRecord, name, seq, s.at(last).Seq)
	}
	v := value[vw:len(value):len(value)]
	if len(v) == 0 {
		v = nil
	}
	s.install(k, Version{Writer: txn.ID(writer), Value: v, Seq: seq})
	s.seq = max(s.seq, seq)
	return nil
}

// RestoreSeq moves the installation position of a store restored from its records to seq, the
// position it had when they were written (read-only transactions advance it too).
func (s *Store) RestoreSeq(seq uint64) error {
	if seq < s.seq {
		return fmt.Errorf("%w: the store is at position %d, its records at %d", errRecord, seq, s.seq)
	}
	s.seq = seq
	return nil
}
