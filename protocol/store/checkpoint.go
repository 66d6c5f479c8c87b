package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// AppendCheckpoint appends the store's contents to dst: every version in installation order,
// and the installation position, so that RestoreCheckpoint rebuilds a store that reads, snapshots
// and reports version orders exactly as this one. It is AppendSegment from version 0.
func (s *Store) AppendCheckpoint(dst []byte) []byte { return s.AppendSegment(dst, 0) }

// AppendSegment appends the versions installed from the from-th on (the store is append-only, so
// a driver that checkpoints often writes each version once: the segment since its last
// checkpoint), and the installation position. Keys are numbered in the order this store first
// wrote them, so a segment names only the keys first written in it, and restoring a store from
// many segments looks each key up once. Layout, integers as uvarints:
//
//	from                   the versions before the segment
//	seq                    Seq()
//	keys, then each key    the keys first written in the segment, in that order
//	versions, then each    key number, writer, value (length-prefixed), seq − previous seq
//
// The encoding depends only on the versions installed (not on a key table shared with other
// stores), so two stores that installed the same versions encode alike.
func (s *Store) AppendSegment(dst []byte, from int) []byte {
	from = min(max(from, 0), int(s.n))
	dst = binary.AppendUvarint(dst, uint64(from))
	dst = binary.AppendUvarint(dst, s.seq)
	firstWrites := 0
	for i := int32(from); i < s.n; i++ {
		if s.at(i).prev < 0 {
			firstWrites++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(firstWrites))
	for i := int32(from); i < s.n; i++ {
		if e := s.at(i); e.prev < 0 {
			name := s.keys.Name(e.key)
			dst = binary.AppendUvarint(dst, uint64(len(name)))
			dst = append(dst, name...)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(s.n)-uint64(from))
	prev := uint64(0)
	if from > 0 {
		prev = s.at(int32(from) - 1).Seq
	}
	for i := int32(from); i < s.n; i++ {
		e := s.at(i)
		dst = binary.AppendUvarint(dst, uint64(s.writtenAt[e.key]))
		dst = binary.AppendUvarint(dst, uint64(e.Writer))
		dst = binary.AppendUvarint(dst, uint64(len(e.Value)))
		dst = append(dst, e.Value...)
		dst = binary.AppendUvarint(dst, e.Seq-prev)
		prev = e.Seq
	}
	return dst
}

// errCheckpoint is wrapped by every error of RestoreCheckpoint.
var errCheckpoint = errors.New("store: malformed checkpoint")

// RestoreCheckpoint fills an empty store with the contents encoded in b by AppendCheckpoint. It
// checks every count against the bytes left before allocating and never panics; on error the
// store must be discarded. The restored values are slices of b, which the caller must not
// modify afterwards.
func (s *Store) RestoreCheckpoint(b []byte) error {
	if s.n != 0 || s.seq != 0 {
		return errors.New("store: restoring a checkpoint into a store that is not empty")
	}
	return s.RestoreSegment(b)
}

// RestoreSegment appends the versions of a segment written by AppendSegment to a store that
// holds exactly the versions before it (restored from the earlier segments), and moves the
// installation position to the segment's. Like RestoreCheckpoint it never panics, on error the
// store must be discarded, and it keeps b.
func (s *Store) RestoreSegment(b []byte) error { return s.restoreSegment(b, false) }

// RestoreLegacySegment is RestoreSegment for a segment in the first layout, which numbered keys
// within the segment (its key list named every key the segment writes, in the order of their
// first version in it), as data directories written before the current layout hold.
func (s *Store) RestoreLegacySegment(b []byte) error { return s.restoreSegment(b, true) }

// restoreSegment decodes a segment in either layout: they differ only in which keys the list
// names and what a version's key number indexes.
func (s *Store) restoreSegment(b []byte, legacy bool) error {
	// The segment holds every value restored from it: no allocation per version.
	d := checkpointReader{b: b}
	if from := d.uvarint(); d.err == nil && from != uint64(s.n) {
		return fmt.Errorf("%w: a segment from version %d, and the store holds %d", errCheckpoint, from, s.n)
	}
	seq := d.uvarint()
	if d.err == nil && seq < s.seq {
		return fmt.Errorf("%w: a segment at position %d, and the store is at %d", errCheckpoint, seq, s.seq)
	}
	nkeys := d.count(1)
	listed := make([]int32, 0, nkeys)
	for range nkeys {
		name := d.bytes()
		if d.err != nil {
			break
		}
		k, ok := s.keys.FindBytes(name) // no copy of name unless the table lacks it
		if !ok {
			k = s.keys.Number(string(name))
		}
		listed = append(listed, k)
	}
	firstWrites := 0 // of the listed keys, in the current layout
	nversions := d.count(4)
	prev := uint64(0)
	if s.n > 0 {
		prev = s.at(s.n - 1).Seq
	}
	for range nversions {
		ki, writer, value, delta := d.uvarint(), txn.ID(d.uvarint()), d.bytes(), d.uvarint()
		if d.err != nil {
			break
		}
		k, ok := s.segmentKey(ki, listed, legacy, firstWrites)
		if !ok || prev+delta < prev || prev+delta > seq {
			return fmt.Errorf("%w: version %d names key %d (%d written, %d listed) at position %d+%d of %d",
				errCheckpoint, s.n, ki, len(s.written), len(listed), prev, delta, seq)
		}
		if !legacy && ki == uint64(len(s.written)) {
			firstWrites++
		}
		prev += delta
		s.install(k, Version{Writer: writer, Value: value, Seq: prev})
	}
	if d.err == nil && !legacy && firstWrites != len(listed) {
		d.err = fmt.Errorf("%w: %d keys listed, %d first written", errCheckpoint, len(listed), firstWrites)
	}
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%w: %d trailing bytes", errCheckpoint, len(d.b)-d.off)
	}
	if d.err != nil {
		return d.err
	}
	s.seq = seq
	return nil
}

// segmentKey resolves a segment's key number ki to the key table's: in the legacy layout an index
// into the segment's list; in the current one an index into the keys the store has written, the
// next of which is the first write of the next listed key (firstWrites of them are already). ok is
// false if ki names no key, or a listed key the store has already written.
func (s *Store) segmentKey(ki uint64, listed []int32, legacy bool, firstWrites int) (k int32, ok bool) {
	switch {
	case legacy:
		if ki >= uint64(len(listed)) {
			return 0, false
		}
		return listed[ki], true
	case ki < uint64(len(s.written)):
		return s.written[ki], true
	case ki > uint64(len(s.written)) || firstWrites == len(listed):
		return 0, false
	}
	k = listed[firstWrites]
	return k, int(k) >= len(s.latest) || s.latest[k] < 0
}

// checkpointReader reads RestoreCheckpoint's input, remembering the first error (the store
// cannot import package wire, whose Reader does this for the protocols).
type checkpointReader struct {
	b   []byte // the segment, which the store keeps
	off int
	err error
}

func (d *checkpointReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint at offset %d", errCheckpoint, d.off)
		return 0
	}
	d.off += n
	return v
}

// count reads a count of elements of at least minBytes bytes each that the rest can hold.
func (d *checkpointReader) count(minBytes int) int {
	v := d.uvarint()
	if d.err == nil && v > uint64((len(d.b)-d.off)/minBytes) {
		d.err = fmt.Errorf("%w: %d elements cannot fit in the %d bytes left", errCheckpoint, v, len(d.b)-d.off)
		return 0
	}
	return int(v)
}

// bytes reads a length-prefixed byte string as a slice of the segment, capped at its
// length; empty is nil.
func (d *checkpointReader) bytes() []byte {
	n := d.count(1)
	if d.err != nil || n == 0 {
		return nil
	}
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}
