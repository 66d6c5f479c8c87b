// Package hyksos is Hyksos (seed 000 chapter 7, spec chariots-flstore.md §6.1): a causally
// consistent key-value store on the shared log. A put is an append tagged "k:"+key whose body
// is the value; the current value of a key in a datacenter is the put to it with the highest
// position in that datacenter's log; GET_TXN (the source's Alg. 14) reads every key as of one
// head of the log, a gap-free prefix, so the values form a consistent snapshot (positions ≤ the
// head, spec A11). Concurrent puts to one key may be ordered differently in different
// datacenters, which then disagree on it (the source accepts this; the optional convergent
// resolver of spec A17 is not implemented).
//
// Hyksos is a client library over flstore.Client: it runs wherever the log's client does, in the
// simulator (`meridian bench --workload hyksos`, every read checked against the final logs,
// CH-I9) and on real processes (server/logclient's Put and GetTxn; `meridian client --cluster
// FILE put|get|get-txn` and `meridian bench --workload hyksos --cluster FILE` on a running
// flstore or chariots cluster, the reads checked the same way against the logs read back). A
// lookup by tag asks the indexer again until the indexer is covered up to the head of log
// (flstore.LookupResult.Covered): indexers learn tags asynchronously, and without that wait a
// GET_TXN missed a put persisted at a position below its head of log.
//
// # Garbage collection (our choice: spec 6.1 and 5.8 say no more than the log's rule)
//
// The log's plain collection (Chariots parameter gc: drop every record every datacenter holds,
// spec 4) drops current values too. Hyksos's collection is Chariots's gc_keep_latest, a
// compaction by key: a maintainer drops a put every datacenter holds only once it is
// superseded, a later put to the same key held by the same maintainer at a position up to its
// head of log (flstore's compact.go). A put that is the latest of its key in its datacenter's
// log is never dropped, so a get or GET_TXN at a head of log at or above the horizon reads what
// it would have read without collection; in-flight snapshots older than the horizon may need a
// dropped put: the maintainer returns it marked collected, and GetTxn takes a newer head of the
// log and reads every key again (ErrCollected, at most snapshotTries heads), so what it returns
// is always one consistent snapshot (CH-I9). Each maintainer decides over its own share of the
// log, so a key keeps up to one old put per maintainer behind its current one (memory bounded by
// keys × maintainers, not by puts). Concurrent puts ordered differently in two datacenters are
// collected by each datacenter's own order.
package hyksos

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Store is one client's view of Hyksos through its datacenter's log.
type Store struct {
	log      *flstore.Client
	restarts int
}

// New returns a store over the log client c.
func New(c *flstore.Client) *Store { return &Store{log: c} }

// tagPrefix starts the tag name of every put.
const tagPrefix = "k:"

// Tag is the tag name of key's puts.
func Tag(key string) string { return tagPrefix + key }

// PutTags are the tags of a put of value to key.
func PutTags(key string, value []byte) []flstore.Tag {
	return []flstore.Tag{{Name: Tag(key), Value: value}}
}

// PutOf returns the key and value of a put record r (false: r is no put, or was collected and
// lost its tags).
func PutOf(r *flstore.Record) (key string, value []byte, ok bool) {
	for _, t := range r.Tags {
		if k, isPut := strings.CutPrefix(t.Name, tagPrefix); isPut {
			return k, r.Body, true
		}
	}
	return "", nil, false
}

// Put appends a put of value to key and calls done with its position.
func (s *Store) Put(key string, value []byte, done func(flstore.AppendResult, error)) {
	s.log.Append(value, PutTags(key, value), nil, done)
}

// Read is the value a get found, and the put's position (0 and nil: no put).
type Read struct {
	Value []byte
	LId   uint64
}

// Get returns key's latest value up to the head of the log.
func (s *Store) Get(key string, done func(Read, error)) {
	s.GetTxn([]string{key}, func(rs []Read, _ uint64, err error) {
		if err != nil {
			done(Read{}, err)
			return
		}
		done(rs[0], nil)
	})
}

// ErrCollected is a snapshot read's error when a put it needs was garbage-collected (superseded
// below the collection horizon, see the package doc): the snapshot is older than the horizon.
// GetTxn then takes a newer head of the log and reads again.
var ErrCollected = errors.New("hyksos: the snapshot needs a collected put")

// snapshotTries bounds the heads of log one GetTxn takes when its snapshots keep needing
// collected puts (each newer head is at least as new as the last; a head above the horizon
// needs none).
const snapshotTries = 100

// GetTxn reads keys from one snapshot: the head of the log i (returned too), each key's latest
// put at a position ≤ i.
func (s *Store) GetTxn(keys []string, done func([]Read, uint64, error)) {
	s.getTxn(keys, snapshotTries, done)
}

func (s *Store) getTxn(keys []string, tries int, done func([]Read, uint64, error)) {
	s.log.Head(func(h flstore.HLResult, err error) {
		if err != nil {
			done(nil, 0, err)
			return
		}
		s.GetTxnAt(h, keys, func(rs []Read, hl uint64, err error) {
			if errors.Is(err, ErrCollected) && tries > 1 {
				s.restarts++
				s.getTxn(keys, tries-1, done)
				return
			}
			done(rs, hl, err)
		})
	})
}

// Restarts counts the snapshots GetTxn took again because a put they needed was collected.
func (s *Store) Restarts() int { return s.restarts }

// GetTxnAt is GetTxn as of head of log h (h.HL at most a head some maintainer reported); it
// fails with ErrCollected if a put the snapshot needs was collected.
func (s *Store) GetTxnAt(h flstore.HLResult, keys []string, done func([]Read, uint64, error)) {
	out := make([]Read, len(keys))
	left, failed := len(keys), false
	if left == 0 {
		done(out, h.HL, nil)
		return
	}
	for i, k := range keys {
		s.log.ReadTagAt(h, Tag(k), flstore.Any, nil, 1, true, func(rs []*flstore.Record, err error) {
			if failed {
				return
			}
			switch {
			case err != nil:
			case len(rs) > 1:
				err = errors.New("hyksos: more than one latest put")
			case len(rs) == 1 && rs[0].Collected:
				err = ErrCollected
			}
			if err != nil {
				failed = true
				done(nil, 0, err)
				return
			}
			if len(rs) == 1 {
				out[i] = Read{Value: rs[0].Body, LId: rs[0].LId}
			}
			if left--; left == 0 {
				done(out, h.HL, nil)
			}
		})
	}
}

// Observed is a get or GET_TXN as its client saw it, for Check: in datacenter DC, as of head
// of log HL, Reads[i] for Keys[i]. Who names the client in error messages.
type Observed struct {
	DC    int
	Who   string
	HL    uint64
	Keys  []string
	Reads []Read
}

// Check checks CH-I9 (spec 7) on datacenters' logs (logs[dc][l]: the record at position l; the
// positions up to each read's head of log all there, but for no-op fillers): every observed get and
// GET_TXN returned, for each key, the put with the highest position at most its head of log in
// its datacenter's log, and that put's value. putOf names a record's key and value if it is a
// put (PutOf, or a lookup that also knows the puts whose tags were collected). That every put
// causally before a returned put precedes it in the log is CH-I2, the log checker's.
func Check(logs []map[uint64]*flstore.Record, reads []Observed, putOf func(*flstore.Record) (string, []byte, bool)) error {
	type put struct {
		lid   uint64
		value []byte
	}
	puts := make([]map[string][]put, len(logs)) // per datacenter, key → its puts by increasing position
	for dc, log := range logs {
		puts[dc] = map[string][]put{}
		for _, l := range slices.Sorted(maps.Keys(log)) {
			if k, v, ok := putOf(log[l]); ok {
				puts[dc][k] = append(puts[dc][k], put{l, v})
			}
		}
	}
	for _, rd := range reads {
		if rd.DC < 0 || rd.DC >= len(logs) || len(rd.Reads) != len(rd.Keys) {
			return fmt.Errorf("CH-I9: %s: a malformed read (datacenter %d, %d keys, %d values)", rd.Who, rd.DC, len(rd.Keys), len(rd.Reads))
		}
		for i, k := range rd.Keys {
			var want put
			for _, p := range puts[rd.DC][k] {
				if p.lid <= rd.HL {
					want = p
				}
			}
			got := rd.Reads[i]
			if got.LId != want.lid {
				return fmt.Errorf("CH-I9: %s at datacenter %d read %s as of %d at position %d, the latest put is at %d",
					rd.Who, rd.DC, k, rd.HL, got.LId, want.lid)
			}
			if !bytes.Equal(got.Value, want.value) {
				return fmt.Errorf("CH-I9: %s at datacenter %d read %s = %q, position %d holds %q", rd.Who, rd.DC, k, got.Value, want.lid, want.value)
			}
		}
	}
	return nil
}
