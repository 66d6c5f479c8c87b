package wire

import (
	"cmp"
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// ClientSeqs appends a client → sequence number map in client order (a replica's record of the
// highest transaction each client ran, forgot or executed), as Reader.ClientSeqs reads it.
func (w *Writer) ClientSeqs(what string, m map[txn.ClientID]uint32) {
	for _, c := range SortedKeys(w, what, m) {
		w.Uvarint(uint64(c))
		w.Uvarint(uint64(m[c]))
	}
}

// ClientSeqs reads a map written by Writer.ClientSeqs into m, rejecting a sequence number out of
// range.
func (r *Reader) ClientSeqs(what string, m map[txn.ClientID]uint32) {
	for range r.Count(what, MaxCheckpointCount, 2) {
		c := txn.ClientID(r.Uvarint(what))
		seq := r.Uvarint(what)
		if seq > uint64(^uint32(0)) {
			r.Fail(what, "sequence number %d out of range", seq)
		}
		m[c] = uint32(seq)
	}
}

// SortedKeys writes m's size as a count named what (at most MaxCheckpointCount) and returns
// m's keys in increasing order, for the caller to write each entry: the one layout of a map in
// a checkpoint, so that equal states encode to equal bytes.
func SortedKeys[K cmp.Ordered, V any](w *Writer, what string, m map[K]V) []K {
	keys := slices.Sorted(maps.Keys(m))
	w.Count(what, len(keys), MaxCheckpointCount)
	return keys
}
