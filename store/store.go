// Package store is the in-memory multi-version key-value store every replica keeps. Each key's
// versions are kept in installation order; a version is named by the transaction that wrote it.
// Installation positions double as snapshot positions, which gives read-only transactions a
// consistent local snapshot, and the per-key installation order is what the checker compares
// across replicas.
package store

import (
	"sort"

	"github.com/meridian-kv/meridian/txn"
)

// Version is one installed value of a key.
type Version struct {
	Writer txn.ID // txn.None for the initial (empty) version
	Value  []byte
	Seq    uint64 // installation position at this replica; 0 for the initial version
}

// Store is a multi-version map from key to versions, owned by one replica and used from one
// goroutine. Every version ever installed is kept: the checker needs the full order, and runs are
// bounded. (Pruning old versions belongs to the durable store of the real servers.)
type Store struct {
	versions map[string]*[]Version // a pointer, so that installing is one map lookup
	seq      uint64
}

// New returns an empty store: every key holds only its initial version.
func New() *Store { return &Store{versions: make(map[string]*[]Version)} }

// Get returns the latest version of key.
func (s *Store) Get(key string) Version {
	vs, ok := s.versions[key]
	if !ok {
		return Version{}
	}
	return (*vs)[len(*vs)-1]
}

// GetAt returns the latest version of key installed at or before position seq.
func (s *Store) GetAt(key string, seq uint64) Version {
	p, ok := s.versions[key]
	if !ok {
		return Version{}
	}
	vs := *p
	i := sort.Search(len(vs), func(i int) bool { return vs[i].Seq > seq })
	if i == 0 {
		return Version{}
	}
	return vs[i-1]
}

// Seq returns the position of the latest installation; a snapshot at Seq sees everything
// installed so far.
func (s *Store) Seq() uint64 { return s.seq }

// Apply installs all of writer's writes atomically at one new position.
func (s *Store) Apply(writer txn.ID, writes []txn.Write) {
	s.seq++
	for _, w := range writes {
		v := Version{Writer: writer, Value: w.Value, Seq: s.seq}
		if vs, ok := s.versions[w.Key]; ok {
			*vs = append(*vs, v)
		} else {
			s.versions[w.Key] = &[]Version{v}
		}
	}
}

// Stale reports whether some read's version is no longer the latest version of its key.
func (s *Store) Stale(reads []txn.Read) bool {
	for _, r := range reads {
		if s.Get(r.Key).Writer != r.Version {
			return true
		}
	}
	return false
}

// VersionOrder returns, for every key written at least once, the writers of its versions in
// installation order.
func (s *Store) VersionOrder() map[string][]txn.ID {
	out := make(map[string][]txn.ID, len(s.versions))
	for k, vs := range s.versions {
		ids := make([]txn.ID, len(*vs))
		for i, v := range *vs {
			ids[i] = v.Writer
		}
		out[k] = ids
	}
	return out
}
