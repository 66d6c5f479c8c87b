package store

import (
	"bytes"
	"maps"
	"slices"
	"sort"
)

// MemDisk is an in-memory protocol.Disk: the simulator's and the tests' stand-in for the durable
// key-value space the network server keeps in Pebble. Keys are kept sorted for Scan; inserting
// costs a binary search and a copy of the keys after it, which is little for keys that mostly
// grow (log positions).
type MemDisk struct {
	values map[string][]byte
	keys   []string // sorted
}

// NewMemDisk returns an empty MemDisk.
func NewMemDisk() *MemDisk { return &MemDisk{values: map[string][]byte{}} }

// Get implements protocol.Disk.
func (d *MemDisk) Get(key []byte) ([]byte, bool) {
	v, ok := d.values[string(key)]
	return v, ok
}

// Set implements protocol.Disk.
func (d *MemDisk) Set(key, value []byte) {
	k := string(key)
	if _, ok := d.values[k]; !ok {
		i := len(d.keys)
		if i > 0 && d.keys[i-1] > k {
			i = sort.SearchStrings(d.keys, k)
		}
		d.keys = slices.Insert(d.keys, i, k)
	}
	d.values[k] = bytes.Clone(value)
}

// Scan implements protocol.Disk.
func (d *MemDisk) Scan(from, to []byte, fn func(key, value []byte) bool) {
	for i := sort.SearchStrings(d.keys, string(from)); i < len(d.keys) && d.keys[i] < string(to); i++ {
		if !fn([]byte(d.keys[i]), d.values[d.keys[i]]) {
			return
		}
	}
}

// Len returns how many keys d holds.
func (d *MemDisk) Len() int { return len(d.keys) }

// Clone returns a copy of d (values are never modified in place, so they are shared).
func (d *MemDisk) Clone() *MemDisk {
	return &MemDisk{values: maps.Clone(d.values), keys: slices.Clone(d.keys)}
}

// Equal reports whether d and o hold the same keys and values.
func (d *MemDisk) Equal(o *MemDisk) bool {
	return slices.Equal(d.keys, o.keys) && maps.EqualFunc(d.values, o.values, bytes.Equal)
}
