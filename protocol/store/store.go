// Package store is the in-memory multi-version key-value store every replica keeps. Each key's
// versions are kept in installation order; a version is named by the transaction that wrote it.
// Installation positions double as snapshot positions, which gives read-only transactions a
// consistent local snapshot, and the per-key installation order is what the checker compares
// across replicas.
package store

import (
	"github.com/meridian-kv/meridian/protocol/txn"
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
//
// Versions live in an append-only arena in installation order, each linked to its key's previous
// version; a key maps to its latest version. Installing is one map lookup and a sequential
// append, with no per-key slices to grow.
type Store struct {
	latest map[string]*int32 // arena index of each written key's latest version
	arena  [][]entry         // fixed-size chunks, so that growing never copies
	n      int32             // versions in the arena
	seq    uint64
}

type entry struct {
	Version
	prev int32 // arena index of the key's previous version; -1 for none
}

const chunkBits = 12

// New returns an empty store: every key holds only its initial version.
func New() *Store { return &Store{latest: make(map[string]*int32)} }

func (s *Store) at(i int32) *entry { return &s.arena[i>>chunkBits][i&(1<<chunkBits-1)] }

func (s *Store) push(e entry) int32 {
	if int(s.n)>>chunkBits == len(s.arena) {
		s.arena = append(s.arena, make([]entry, 1<<chunkBits))
	}
	i := s.n
	*s.at(i) = e
	s.n++
	return i
}

// Get returns the latest version of key.
func (s *Store) Get(key string) Version {
	i, ok := s.latest[key]
	if !ok {
		return Version{}
	}
	return s.at(*i).Version
}

// GetAt returns the latest version of key installed at or before position seq.
func (s *Store) GetAt(key string, seq uint64) Version {
	p, ok := s.latest[key]
	if !ok {
		return Version{}
	}
	for i := *p; i >= 0; i = s.at(i).prev {
		if e := s.at(i); e.Seq <= seq {
			return e.Version
		}
	}
	return Version{}
}

// Seq returns the position of the latest installation; a snapshot at Seq sees everything
// installed so far.
func (s *Store) Seq() uint64 { return s.seq }

// Versions returns how many versions the store holds: its size, unlike Seq, which read-only
// transactions advance too. Replicas that installed the same writes hold as many versions.
func (s *Store) Versions() int { return int(s.n) }

// Apply installs all of writer's writes atomically at one new position.
func (s *Store) Apply(writer txn.ID, writes []txn.Write) {
	s.seq++
	for _, w := range writes {
		v := Version{Writer: writer, Value: w.Value, Seq: s.seq}
		if p, ok := s.latest[w.Key]; ok {
			*p = s.push(entry{Version: v, prev: *p})
		} else {
			i := s.push(entry{Version: v, prev: -1})
			s.latest[w.Key] = &i
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
	out := make(map[string][]txn.ID, len(s.latest))
	for k, p := range s.latest {
		n := 0
		for i := *p; i >= 0; i = s.at(i).prev {
			n++
		}
		ids := make([]txn.ID, n)
		for i := *p; i >= 0; i = s.at(i).prev {
			n--
			ids[n] = s.at(i).Writer
		}
		out[k] = ids
	}
	return out
}
