// Package hyksos is Hyksos (seed 000 chapter 7, spec chariots-flstore.md §6.1): a causally
// consistent key-value store on the shared log. A put is an append tagged "k:"+key whose body
// is the value; the current value of a key in a datacenter is the put to it with the highest
// position in that datacenter's log; GET_TXN (the source's Alg. 14) reads every key as of one
// head of the log, a gap-free prefix, so the values form a consistent snapshot (positions ≤ the
// head, spec A11). Concurrent puts to one key may be ordered differently in different
// datacenters, which then disagree on it (the source accepts this; the optional convergent
// resolver of spec A17 is not implemented).
//
// Hyksos is a client library over flstore.Client: it runs wherever the log's client does (the
// simulator today; `meridian bench --workload hyksos`, every read checked against the final
// logs, CH-I9). A lookup by tag asks the indexer again until the indexer is covered up to the
// head of log (flstore.LookupResult.Covered): indexers learn tags asynchronously, and without
// that wait a GET_TXN missed a put persisted at a position below its head of log. Garbage
// collection (the log's gc parameter) drops record bodies and tags, values included: run
// Hyksos with it off (keeping each key's latest put would need a retention rule across
// maintainers, which the log does not have).
package hyksos

import (
	"errors"

	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Store is one client's view of Hyksos through its datacenter's log.
type Store struct{ log *flstore.Client }

// New returns a store over the log client c.
func New(c *flstore.Client) *Store { return &Store{log: c} }

// Tag is the tag name of key's puts.
func Tag(key string) string { return "k:" + key }

// Put appends a put of value to key and calls done with its position.
func (s *Store) Put(key string, value []byte, done func(flstore.AppendResult, error)) {
	s.log.Append(value, []flstore.Tag{{Name: Tag(key), Value: value}}, nil, done)
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

// GetTxn reads keys from one snapshot: the head of the log i (returned too), each key's latest
// put at a position ≤ i.
func (s *Store) GetTxn(keys []string, done func([]Read, uint64, error)) {
	s.log.Head(func(h flstore.HLResult, err error) {
		if err != nil {
			done(nil, 0, err)
			return
		}
		s.GetTxnAt(h, keys, done)
	})
}

// GetTxnAt is GetTxn as of head of log h (h.HL at most a head some maintainer reported).
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
			if err == nil && len(rs) > 1 {
				err = errors.New("hyksos: more than one latest put")
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
