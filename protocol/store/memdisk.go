package store

import (
	"bytes"
	"iter"
	"strings"

	"github.com/RaduBerinde/btreemap"
)

// MemDisk is an in-memory protocol.Disk: the simulator's and the tests' stand-in for the durable
// key-value space the network server keeps in Pebble. Keys live in a B-tree (the one Pebble
// itself uses), so an insert in the middle of the key space (a host index entry below the
// records' keys) costs a logarithmic search, not a copy of every key after it.
type MemDisk struct {
	tree *btreemap.BTreeMap[string, []byte]
}

// memDiskDegree is the B-tree's degree: nodes of up to 63 keys.
const memDiskDegree = 32

// NewMemDisk returns an empty MemDisk.
func NewMemDisk() *MemDisk {
	return &MemDisk{tree: btreemap.New[string, []byte](memDiskDegree, strings.Compare)}
}

// Get implements protocol.Disk.
func (d *MemDisk) Get(key []byte) ([]byte, bool) {
	_, v, ok := d.tree.Get(string(key))
	return v, ok
}

// Set implements protocol.Disk.
func (d *MemDisk) Set(key, value []byte) {
	d.tree.ReplaceOrInsert(string(key), bytes.Clone(value))
}

// Scan implements protocol.Disk.
func (d *MemDisk) Scan(from, to []byte, fn func(key, value []byte) bool) {
	for k, v := range d.tree.Ascend(btreemap.GE(string(from)), btreemap.LT(string(to))) {
		if !fn([]byte(k), v) {
			return
		}
	}
}

// ScanReverse implements protocol.Disk.
func (d *MemDisk) ScanReverse(from, to []byte, fn func(key, value []byte) bool) {
	for k, v := range d.tree.Descend(btreemap.LT(string(to)), btreemap.GE(string(from))) {
		if !fn([]byte(k), v) {
			return
		}
	}
}

// Len returns how many keys d holds.
func (d *MemDisk) Len() int { return d.tree.Len() }

// Clone returns a copy of d (copy on write: values are never modified in place, so they are
// shared).
func (d *MemDisk) Clone() *MemDisk { return &MemDisk{tree: d.tree.Clone()} }

// Equal reports whether d and o hold the same keys and values.
func (d *MemDisk) Equal(o *MemDisk) bool {
	if d.tree.Len() != o.tree.Len() {
		return false
	}
	next, stop := iter.Pull2(o.tree.Ascend(btreemap.Min[string](), btreemap.Max[string]()))
	defer stop()
	for k, v := range d.tree.Ascend(btreemap.Min[string](), btreemap.Max[string]()) {
		k2, v2, ok := next()
		if !ok || k2 != k || !bytes.Equal(v, v2) {
			return false
		}
	}
	return true
}
