// Package single is the single-node store of S-DUR's baseline-throughput experiment (spec sdur.md
// §7.2 and X0, issue 12 item 5): one unreplicated node backed by a real embedded transactional
// store, Pebble, behind the same gRPC service (package rpc) and speaking the same operations
// (S-DUR's READ, snapshot request and COMMIT, sdur.Codec) as an S-DUR server, so that S-DUR's
// client library runs against it unchanged and the two are compared side by side on loopback.
//
// The source compared S-DUR with Berkeley DB (an in-memory transactional B-tree) behind a
// multithreaded RPC server; the spec's [R] asks for a single-node store behind our RPC layer.
// Here Pebble holds every version of every key (key, then the inverted commit number, so the
// newest version comes first), reads run concurrently on Pebble iterators at the transaction's
// snapshot, and commits are serialized: certification against the last writer of every key
// read (S-DUR's local test, spec §3.4, on one node) and one Pebble batch per commit, applied
// atomically with the snapshot counter. It is S-DUR with one partition of one server and no
// atomic broadcast, which is what the experiment measures the cost of.
package single

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned/sdur"
)

// Store is the single node: an rpc.Backend serving S-DUR's operations from Pebble.
type Store struct {
	db        *pebble.DB
	writeOpts *pebble.WriteOptions
	key       []byte
	nextID    atomic.Uint32

	sc        atomic.Uint64 // commits so far; versions 1..sc are readable
	mu        sync.Mutex    // serializes commits
	lastWrite map[string]uint64
}

// Open opens (creating if needed) a store in dir. With sync, every commit is fsynced before it
// is acknowledged, like a cluster's sync durability; without, like its durability none.
func Open(dir string, sync bool) (*Store, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("single: %w", err)
	}
	s := &Store{db: db, writeOpts: pebble.NoSync, key: make([]byte, 32), lastWrite: map[string]uint64{}}
	if sync {
		s.writeOpts = pebble.Sync
	}
	if _, err := rand.Read(s.key); err != nil {
		db.Close()
		return nil, fmt.Errorf("single: %w", err)
	}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// SC is the number of committed update transactions.
func (s *Store) SC() uint64 { return s.sc.Load() }

// NewClientID implements rpc.Backend.
func (s *Store) NewClientID() (txn.ClientID, error) { return txn.ClientID(s.nextID.Add(1)), nil }

// ClientKey implements rpc.Backend: a random key per process (the store keeps no client
// registrations across restarts).
func (s *Store) ClientKey() []byte { return s.key }

// AdoptClientID implements rpc.Backend: the single node allocates every id itself.
func (s *Store) AdoptClientID(txn.ClientID) error {
	return errors.New("single: a single node adopts no client id it did not allocate")
}

// OpCodec implements rpc.Backend: S-DUR's codec.
func (s *Store) OpCodec() protocol.Codec { return sdur.Codec }

// Submit implements rpc.Backend: it serves req on the caller's goroutine (the gRPC handler's),
// so reads run in parallel and commits queue on the store's lock.
func (s *Store) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	out := protocol.Reply{Client: req.Client, Seq: req.Seq}
	var err error
	switch op := req.Op.(type) {
	case *sdur.SnapReq:
		sc := s.sc.Load()
		out.Op = &sdur.SnapReply{M: sc, S: []uint64{sc}}
	case *sdur.ReadReq:
		out.Op, err = s.read(op)
	case *sdur.CommitReq:
		out.Op, err = s.commit(op)
	default:
		err = fmt.Errorf("unknown operation %T", req.Op)
	}
	if err != nil {
		out.Op, out.Err = nil, "single: "+err.Error()
	}
	reply(out, nil)
}

// versionKey is key's version v in Pebble: 'v', the key, a zero byte, and ^v big-endian, so that
// a key's versions sort newest first and no key's versions interleave with another's (keys
// hold no zero byte, which read and commit check).
func versionKey(key string, v uint64) []byte {
	b := make([]byte, 0, len(key)+10)
	b = append(b, 'v')
	b = append(b, key...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, ^v)
}

func checkKey(key string) error {
	if key == "" || strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("key %q is empty or holds a zero byte", key)
	}
	return nil
}

// read returns the newest version of op.Key at or before the transaction's snapshot (the
// store's SC when the request has none). A version's value is the writer's id, then the value.
func (s *Store) read(op *sdur.ReadReq) (*sdur.ReadReply, error) {
	if err := checkKey(op.Key); err != nil {
		return nil, err
	}
	st := op.St
	if !op.HasSt {
		st = s.sc.Load()
	} else if st > s.sc.Load() {
		return nil, fmt.Errorf("snapshot %d is ahead of the store's %d", st, s.sc.Load())
	}
	lower := versionKey(op.Key, st)
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: versionKey(op.Key, 0)})
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	rep := &sdur.ReadReply{St: st}
	if iter.First() {
		v := iter.Value()
		if len(v) < 8 {
			return nil, errors.New("corrupt version")
		}
		rep.Version = txn.ID(binary.BigEndian.Uint64(v))
		rep.Value = bytes.Clone(v[8:])
	}
	return rep, iter.Error()
}

// commit certifies op (S-DUR's local test: nothing it read was written after its snapshot) and,
// if it passes, writes its writes as one Pebble batch at version SC+1.
func (s *Store) commit(op *sdur.CommitReq) (*sdur.CommitReply, error) {
	if len(op.Slices) != 1 || op.Slices[0].Part != 0 || op.Tx == txn.None {
		return nil, errors.New("a commit of one slice, partition 0")
	}
	sl := op.Slices[0]
	for _, k := range sl.RS {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	for _, w := range sl.WS {
		if !slices.Contains(sl.RS, w.Key) {
			return nil, fmt.Errorf("blind write of %q", w.Key)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl.St > s.sc.Load() {
		return nil, errors.New("snapshot ahead of the store")
	}
	for _, k := range sl.RS {
		if s.lastWrite[k] > sl.St {
			return &sdur.CommitReply{Status: txn.Aborted, Reason: sdur.ReasonCertification}, nil
		}
	}
	v := s.sc.Load() + 1
	b := s.db.NewBatch()
	defer b.Close()
	for _, w := range sl.WS {
		val := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(w.Value)), uint64(op.Tx))
		if err := b.Set(versionKey(w.Key, v), append(val, w.Value...), nil); err != nil {
			return nil, err
		}
	}
	if err := b.Commit(s.writeOpts); err != nil {
		return nil, err
	}
	for _, w := range sl.WS {
		s.lastWrite[w.Key] = v
	}
	s.sc.Store(v)
	return &sdur.CommitReply{Status: txn.Committed}, nil
}

// quietLogger drops Pebble's informational lines and keeps nothing: the experiment's store is
// scratch.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("single: pebble: "+format, args...))
}
