package store

import (
	"bytes"
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
// checkpoint), and the installation position. Layout, integers as uvarints:
//
//	from                   the versions before the segment
//	seq                    Seq()
//	keys, then each key    the keys the segment writes, in the order of their first version in it
//	versions, then each    key index, writer, value (length-prefixed), seq − previous seq
//
// The encoding depends only on the versions installed (not on a key table shared with other
// stores), so two stores that installed the same versions encode alike.
func (s *Store) AppendSegment(dst []byte, from int) []byte {
	from = min(max(from, 0), int(s.n))
	dst = binary.AppendUvarint(dst, uint64(from))
	dst = binary.AppendUvarint(dst, s.seq)
	index := make(map[int32]uint64) // shared key number → index in this segment
	var names []string
	for i := int32(from); i < s.n; i++ {
		k := s.at(i).key
		if _, ok := index[k]; !ok {
			index[k] = uint64(len(names))
			names = append(names, s.keys.names[k])
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, name := range names {
		dst = binary.AppendUvarint(dst, uint64(len(name)))
		dst = append(dst, name...)
	}
	dst = binary.AppendUvarint(dst, uint64(s.n)-uint64(from))
	prev := uint64(0)
	if from > 0 {
		prev = s.at(int32(from) - 1).Seq
	}
	for i := int32(from); i < s.n; i++ {
		e := s.at(i)
		dst = binary.AppendUvarint(dst, index[e.key])
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
// store must be discarded.
func (s *Store) RestoreCheckpoint(b []byte) error {
	if s.n != 0 || s.seq != 0 {
		return errors.New("store: restoring a checkpoint into a store that is not empty")
	}
	return s.RestoreSegment(b)
}

// RestoreSegment appends the versions of a segment written by AppendSegment to a store that
// holds exactly the versions before it (restored from the earlier segments), and moves the
// installation position to the segment's. Like RestoreCheckpoint it never panics; on error the
// store must be discarded.
func (s *Store) RestoreSegment(b []byte) error {
	// One copy of the segment holds every value restored from it: one allocation instead of
	// one per version.
	d := checkpointReader{b: bytes.Clone(b)}
	if from := d.uvarint(); d.err == nil && from != uint64(s.n) {
		return fmt.Errorf("%w: a segment from version %d, and the store holds %d", errCheckpoint, from, s.n)
	}
	seq := d.uvarint()
	if d.err == nil && seq < s.seq {
		return fmt.Errorf("%w: a segment at position %d, and the store is at %d", errCheckpoint, seq, s.seq)
	}
	nkeys := d.count(1)
	keys := make([]int32, 0, nkeys)
	for range nkeys {
		name := string(d.bytes())
		if d.err != nil {
			break
		}
		k, ok := s.keys.numbers[name]
		if !ok {
			k = int32(len(s.keys.names))
			s.keys.numbers[name] = k
			s.keys.names = append(s.keys.names, name)
		}
		keys = append(keys, k)
	}
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
		if ki >= uint64(len(keys)) || prev+delta < prev || prev+delta > seq {
			return fmt.Errorf("%w: version %d names key %d of %d at position %d+%d of %d", errCheckpoint, s.n, ki, len(keys), prev, delta, seq)
		}
		prev += delta
		k := keys[ki]
		for int(k) >= len(s.latest) {
			s.latest = append(s.latest, -1)
		}
		s.latest[k] = s.push(entry{Version: Version{Writer: writer, Value: value, Seq: prev}, key: k, prev: s.latest[k]})
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

// checkpointReader reads RestoreCheckpoint's input, remembering the first error (the store
// cannot import package wire, whose Reader does this for the protocols).
type checkpointReader struct {
	b   []byte // a copy the reader owns
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

// bytes reads a length-prefixed byte string as a slice of the reader's copy, capped at its
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
