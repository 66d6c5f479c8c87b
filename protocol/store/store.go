// Package store is the in-memory multi-version key-value store every replica keeps. Each key's
// versions are kept in installation order; a version is named by the transaction that wrote it.
// Installation positions double as snapshot positions, which gives read-only transactions a
// consistent local snapshot, and the per-key installation order is what the checker compares
// across replicas.
package store

import (
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// Version is one installed value of a key.
type Version struct {
	Writer txn.ID // txn.None for the initial (empty) version
	Value  []byte
	Seq    uint64 // installation position at this replica; 0 for the initial version
}

// Store is a multi-version map from key to versions, owned by one replica and used from one
// goroutine. Every version installed is kept until its replica drops it (Drop: its protocol's
// garbage collection says no reader can still need it) and the store is compacted (Compact):
// the simulator never compacts, so that the installation order stays whole for the checker; the
// network server keeps a pruning protocol's store on disk version by version (Changes), which
// compacts it once half of it is dropped, so that a long run's store, its data directory and its
// restarts stay bounded by the live versions.
//
// Keys are numbered by a Keys table, which stores may share; a number never changes, so that flat
// slices indexed by it hold the rest of a key's state. Versions live in an append-only arena in
// installation order, each tagged with its key's number and linked to the key's previous
// version. Installing is one map lookup and a sequential append; reading the version orders back
// is a sequential pass over the arena.
type Store struct {
	keys   *Keys
	latest []int32 // latest[k]: arena index of key k's latest version, -1 for none
	// written lists the keys this store has written, by number, in the order of their first
	// version here, and writtenAt[k] is key k's position in it (valid where latest[k] >= 0): the
	// key numbering of the store's segments, which must not depend on a shared key table.
	written   []int32
	writtenAt []int32
	arena     [][]entry // fixed-size chunks, so that growing never copies
	n         int32     // versions in the arena
	seq       uint64
	// grouped is byKey's last result and the arena length and key count it was computed for:
	// the arena only grows between compactions (Compact forgets it), so it holds until a
	// version is installed or a key numbered. A
	// run's end compares the replicas' stores several times over (store.SameOrder) and then
	// reads their version orders, with nothing installed in between.
	grouped struct {
		n, keys int32
		start   []int32
		writers []txn.ID
	}

	// dropped has bit i set for arena index i once Drop dropped that version; ndropped counts them.
	dropped  []uint64
	ndropped int32
	// journal is what changed since the driver last asked (Changes); nil unless it tracks changes.
	journal *journal
}

type entry struct {
	Version
	key  int32 // the key's number
	prev int32 // arena index of the key's previous version; -1 for none
}

const chunkBits = 12

// Keys numbers keys, in the order they are first numbered, for the stores that share it. Stores
// that hold the same keys, such as the simulator's replicas of one partition, share one: a key
// is then found in one map, where the store that wrote it last left it, instead of in one map
// per store, and a transaction's keys are numbered once for all of them (ApplyTxn, StaleTxn).
// Stores that share a table must be used from one goroutine.
type Keys = txn.KeyTable

// NewKeys returns an empty key table.
func NewKeys() *Keys { return txn.NewKeyTable() }

// New returns an empty store with a key table of its own: every key holds only its initial
// version.
func New() *Store { return NewShared(NewKeys()) }

// NewShared returns an empty store that numbers its keys in keys.
func NewShared(keys *Keys) *Store { return &Store{keys: keys} }

func (s *Store) at(i int32) *entry { return &s.arena[i>>chunkBits][i&(1<<chunkBits-1)] }

// Keys returns the store's key table, the one to number transactions in for ApplyTxn and
// StaleTxn (txn.Txn.KeyNumbers).
func (s *Store) Keys() *Keys { return s.keys }

// install appends a version of key number k, the key's first here if the store has not written
// it yet.
func (s *Store) install(k int32, v Version) {
	for int(k) >= len(s.latest) {
		s.latest = append(s.latest, -1)
		s.writtenAt = append(s.writtenAt, -1)
	}
	if s.latest[k] < 0 {
		s.writtenAt[k] = int32(len(s.written))
		s.written = append(s.written, k)
	}
	s.latest[k] = s.push(entry{Version: v, key: k, prev: s.latest[k]})
}

func (s *Store) push(e entry) int32 {
	if int(s.n)>>chunkBits == len(s.arena) {
		s.arena = append(s.arena, make([]entry, 1<<chunkBits))
	}
	i := s.n
	*s.at(i) = e
	s.n++
	return i
}

// last returns the arena index of key's latest version, or -1 if the store holds none.
func (s *Store) last(key string) int32 {
	k, ok := s.keys.Find(key)
	if !ok {
		return -1
	}
	return s.lastOf(k)
}

// lastOf returns the arena index of the latest version of key number k, or -1 if the store
// holds none.
func (s *Store) lastOf(k int32) int32 {
	if int(k) >= len(s.latest) {
		return -1
	}
	return s.latest[k]
}

// Get returns the latest version of key.
func (s *Store) Get(key string) Version {
	i := s.last(key)
	if i < 0 {
		return Version{}
	}
	return s.at(i).Version
}

// GetAt returns the latest version of key installed at or before position seq.
func (s *Store) GetAt(key string, seq uint64) Version {
	for i := s.last(key); i >= 0; i = s.at(i).prev {
		if e := s.at(i); e.Seq <= seq {
			return e.Version
		}
	}
	return Version{}
}

// ValueOf returns the value writer installed for key (its newest such version), or false if the
// store holds none or dropped it: for a replica that keeps some versions' values in its own
// state, and whose checkpoint names those versions instead of copying values the store's segments
// hold already.
func (s *Store) ValueOf(key string, writer txn.ID) ([]byte, bool) {
	for i := s.last(key); i >= 0; i = s.at(i).prev {
		if e := s.at(i); e.Writer == writer && !s.isDropped(i) {
			return e.Value, true
		}
	}
	return nil, false
}

// Drop records that the replica will never read writer's version of key again nor name it in a
// checkpoint: its protocol's garbage collection removed the version from its own state, by the
// rule its caller's doc comment gives (the version is superseded and no snapshot a pending or
// future read can take selects it). The latest version of a key is never dropped, and dropping a
// version the store does not hold, or has dropped already, does nothing. The value is released
// at once (ValueOf no longer finds it); the version stays in the installation order (Versions,
// VersionOrder, segments) until Compact removes it.
func (s *Store) Drop(key string, writer txn.ID) {
	i := s.last(key)
	if i < 0 {
		return
	}
	for i = s.at(i).prev; i >= 0; i = s.at(i).prev {
		if s.at(i).Writer == writer && !s.isDropped(i) {
			s.markDropped(i)
			if j := s.journal; j != nil && i < j.from {
				j.drops = append(j.drops, droppedVersion{key: s.at(i).key, seq: s.at(i).Seq})
			}
			return
		}
	}
}

// markDropped drops the version at arena index i, which is not dropped yet.
func (s *Store) markDropped(i int32) {
	for int(i>>6) >= len(s.dropped) {
		s.dropped = append(s.dropped, 0)
	}
	s.dropped[i>>6] |= 1 << (i & 63)
	s.ndropped++
	s.at(i).Value = nil
}

func (s *Store) isDropped(i int32) bool {
	return int(i>>6) < len(s.dropped) && s.dropped[i>>6]&(1<<(i&63)) != 0
}

// Dropped returns how many versions the store holds dropped (Drop), awaiting Compact.
func (s *Store) Dropped() int { return int(s.ndropped) }

// Compact removes the dropped versions and reports whether there were any. The others keep their
// installation order and positions, and Seq is unchanged, so every read at a snapshot whose
// versions were not dropped answers as before; but the places of versions change, so segments
// (AppendSegment) written before a compaction do not describe the store after it. A driver that
// keeps a pruned store on disk keeps it version by version instead (Changes).
func (s *Store) Compact() bool {
	if s.ndropped == 0 {
		return false
	}
	arena, n, dropped := s.arena, s.n, s.dropped
	s.arena, s.n, s.dropped, s.ndropped = nil, 0, nil, 0
	s.grouped.start = nil // the arena was rewritten: byKey's last result no longer holds
	for k := range s.latest {
		s.latest[k], s.writtenAt[k] = -1, -1
	}
	s.written = s.written[:0]
	from := int32(-1) // the new index of the journal's first unreported version
	for i := range n {
		if s.journal != nil && i == s.journal.from {
			from = s.n
		}
		if int(i>>6) < len(dropped) && dropped[i>>6]&(1<<(i&63)) != 0 {
			continue
		}
		e := &arena[i>>chunkBits][i&(1<<chunkBits-1)]
		s.install(e.key, e.Version)
	}
	if s.journal != nil {
		if from < 0 {
			from = s.n
		}
		s.journal.from = from
	}
	return true
}

// Seq returns the position of the latest installation; a snapshot at Seq sees everything
// installed so far.
func (s *Store) Seq() uint64 { return s.seq }

// Versions returns how many versions the store holds, dropped ones included until Compact: its
// size, unlike Seq, which read-only transactions advance too. Replicas that installed the same
// writes hold as many versions until they compact.
func (s *Store) Versions() int { return int(s.n) }

// Apply installs all of writer's writes atomically at one new position.
func (s *Store) Apply(writer txn.ID, writes []txn.Write) {
	s.seq++
	for _, w := range writes {
		s.install(s.keys.Number(w.Key), Version{Writer: writer, Value: w.Value, Seq: s.seq})
	}
}

// ApplyTxn is Apply(t.ID, t.Writes), with the key numbers t keeps for the store's key table.
func (s *Store) ApplyTxn(t *txn.Txn) {
	_, keys := t.KeyNumbers(s.keys)
	s.seq++
	for i, w := range t.Writes {
		s.install(keys[i], Version{Writer: t.ID, Value: w.Value, Seq: s.seq})
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

// StaleTxn is Stale(t.Reads), with the key numbers t keeps for the store's key table.
func (s *Store) StaleTxn(t *txn.Txn) bool {
	keys, _ := t.KeyNumbers(s.keys)
	for i, r := range t.Reads {
		writer := txn.None
		if last := s.lastOf(keys[i]); last >= 0 {
			writer = s.at(last).Writer
		}
		if writer != r.Version {
			return true
		}
	}
	return false
}

// VersionOrder returns, for every key written at least once, the writers of its versions in
// installation order. The slices share one array of their own, each capped at its own length.
func (s *Store) VersionOrder() map[string][]txn.ID {
	start, grouped := s.byKey()
	writers := slices.Clone(grouped) // the caller's to keep or change: byKey keeps its own
	written := 0
	for k := range s.latest {
		if start[k] < start[k+1] {
			written++
		}
	}
	out := make(map[string][]txn.ID, written)
	for k := range s.latest {
		if start[k] < start[k+1] {
			out[s.keys.Name(int32(k))] = writers[start[k]:start[k+1]:start[k+1]]
		}
	}
	return out
}

// byKey returns the writers of the versions grouped by key number, each key's in installation
// order: key k's are writers[start[k]:start[k+1]], for every key numbered in the store's table.
// The slices are kept for the next call (Store.grouped): callers must not modify them.
func (s *Store) byKey() (start []int32, writers []txn.ID) {
	keys := int32(s.keys.Len())
	if g := &s.grouped; g.start != nil && g.n == s.n && g.keys == keys {
		return g.start, g.writers
	}
	// start[k+1] counts key k's versions, then becomes the end of its run in writers.
	start = make([]int32, keys+1)
	for i := range s.n {
		start[s.at(i).key+1]++
	}
	for k := range keys {
		start[k+1] += start[k]
	}
	writers = make([]txn.ID, s.n)
	next := slices.Clone(start[:keys])
	for i := range s.n {
		e := s.at(i)
		writers[next[e.key]] = e.Writer
		next[e.key]++
	}
	s.grouped.n, s.grouped.keys, s.grouped.start, s.grouped.writers = s.n, keys, start, writers
	return start, writers
}

// SameOrder reports whether s and o hold the same versions in the same order, key by key: whether
// their VersionOrders are equal. Stores that share a key table are compared number by number,
// without building the maps.
func (s *Store) SameOrder(o *Store) bool {
	if s.n != o.n {
		return false
	}
	if s.keys != o.keys {
		return maps.EqualFunc(s.VersionOrder(), o.VersionOrder(), slices.Equal)
	}
	sStart, sWriters := s.byKey()
	oStart, oWriters := o.byKey()
	return slices.Equal(sStart, oStart) && slices.Equal(sWriters, oWriters)
}
