// Package client is Meridian's transaction API: begin, get, put (buffered), commit, and
// snapshot reads. It is asynchronous (each call takes a completion callback) so that the same
// code runs inside the single-goroutine simulator and, over a network Transport, against real
// servers. A Session also records every finished transaction for the checker.
package client

import (
	"errors"
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// Transport carries one client's requests to its replica. Call must invoke done exactly once,
// on the client's own event loop (in the simulator: in virtual time).
type Transport interface {
	Call(req protocol.Request, done func(protocol.Reply))
	// NowUs reads the client's clock, used for latencies and history timestamps.
	NowUs() int64
}

// Session is one client: it runs one transaction at a time, as T-YCSB's closed-loop clients do.
type Session struct {
	tr      Transport
	id      txn.ClientID
	dc      string
	name    string
	nextTxn uint32
	nextSeq uint64
	record  func(history.Txn)
}

// NewSession returns a client named name (e.g. "V/3") in datacenter dc. If record is not nil it
// receives every finished transaction.
func NewSession(tr Transport, id txn.ClientID, dc, name string, record func(history.Txn)) *Session {
	return &Session{tr: tr, id: id, dc: dc, name: name, record: record}
}

// Name returns the client's name.
func (s *Session) Name() string { return s.name }

func (s *Session) call(req protocol.Request, done func(protocol.Reply)) {
	s.nextSeq++
	req.Seq = s.nextSeq
	s.tr.Call(req, done)
}

// Tx is one read-write transaction. Reads go to the replica and record the version seen; writes
// are buffered until Commit.
type Tx struct {
	s        *Session
	id       txn.ID
	startUs  int64
	reads    []txn.Read
	readVals [][]byte // readVals[i] is the value of reads[i]
	writes   []txn.Write
	// index maps a key to its position in writes (≥ 0) or in reads (-1-i), built only once the
	// transaction is large: small ones, the common case, are searched linearly.
	index    map[string]int
	finished bool
	// attempt and first record a re-run of an aborted transaction (BeginRetry): its attempt
	// number (0 for a first attempt) and the first attempt's id.
	attempt int
	first   txn.ID
}

// indexFrom is the number of keys from which a Tx keeps an index instead of searching.
const indexFrom = 16

// value returns what the transaction already knows of key: its own write, else its read.
func (t *Tx) value(key string) ([]byte, bool) {
	if t.index != nil {
		i, ok := t.index[key]
		switch {
		case !ok:
			return nil, false
		case i >= 0:
			return t.writes[i].Value, true
		default:
			return t.readVals[-1-i], true
		}
	}
	for i := range t.writes {
		if t.writes[i].Key == key {
			return t.writes[i].Value, true
		}
	}
	for i := range t.reads {
		if t.reads[i].Key == key {
			return t.readVals[i], true
		}
	}
	return nil, false
}

// remember records that key is at position i (see index) once the transaction is large.
func (t *Tx) remember(key string, i int) {
	if t.index == nil && len(t.reads)+len(t.writes) < indexFrom {
		return
	}
	if t.index == nil {
		t.index = make(map[string]int, 2*indexFrom)
		for j, r := range t.reads {
			t.index[r.Key] = -1 - j
		}
		for j, w := range t.writes {
			t.index[w.Key] = j // a write shadows a read of the same key
		}
	}
	if _, written := t.index[key]; i < 0 && written {
		return
	}
	t.index[key] = i
}

// Begin starts a new transaction with a globally unique id.
func (s *Session) Begin() *Tx {
	s.nextTxn++
	return &Tx{s: s, id: txn.NewID(s.id, s.nextTxn), startUs: s.tr.NowUs()}
}

// BeginRetry starts a transaction that re-runs prev, which aborted: it has an id of its own, and
// the history records its attempt number and the id of the first attempt.
func (s *Session) BeginRetry(prev *Tx) *Tx {
	t := s.Begin()
	t.attempt, t.first = max(prev.attempt, 1)+1, prev.id
	if prev.first != txn.None {
		t.first = prev.first
	}
	return t
}

// Reserve sizes the transaction's read and write sets for the given numbers of reads and writes,
// for a caller that knows its operations in advance (T-YCSB): the sets then grow without copying.
// It changes nothing else.
func (t *Tx) Reserve(reads, writes int) {
	t.reads = slices.Grow(t.reads, reads)
	t.readVals = slices.Grow(t.readVals, reads)
	t.writes = slices.Grow(t.writes, writes)
}

// ID returns the transaction's id.
func (t *Tx) ID() txn.ID { return t.id }

// ErrFinished is returned when a finished transaction is used again.
var ErrFinished = errors.New("client: transaction already committed or aborted")

// Get reads key: from the transaction's own earlier read or write if there is one (repeatable
// reads, read-your-writes), otherwise from the replica, recording the version seen.
func (t *Tx) Get(key string, done func(value []byte, err error)) {
	switch {
	case t.finished:
		done(nil, ErrFinished)
		return
	case key == "":
		done(nil, errors.New("client: empty key"))
		return
	}
	if v, ok := t.value(key); ok {
		done(v, nil)
		return
	}
	t.s.call(protocol.Request{Kind: protocol.Get, Key: key, TxnID: t.id}, func(r protocol.Reply) {
		if r.Err != "" {
			done(nil, errors.New(r.Err))
			return
		}
		if v, ok := t.value(key); ok { // a concurrent Get of the key answered first
			done(v, nil)
			return
		}
		t.reads = append(t.reads, txn.Read{Key: key, Version: r.Version})
		t.readVals = append(t.readVals, r.Value)
		t.remember(key, -len(t.reads))
		done(r.Value, nil)
	})
}

// Put buffers a write of key.
func (t *Tx) Put(key string, value []byte) error {
	switch {
	case t.finished:
		return ErrFinished
	case key == "":
		return errors.New("client: empty key")
	}
	if i, ok := t.writeIndex(key); ok {
		t.writes[i].Value = value
		return nil
	}
	t.writes = append(t.writes, txn.Write{Key: key, Value: value})
	t.remember(key, len(t.writes)-1)
	return nil
}

// writeIndex returns the position of key in the write set.
func (t *Tx) writeIndex(key string) (int, bool) {
	if t.index != nil {
		i, ok := t.index[key]
		return i, ok && i >= 0
	}
	for i := range t.writes {
		if t.writes[i].Key == key {
			return i, true
		}
	}
	return 0, false
}

// Result is the outcome of a commit.
type Result struct {
	Status          txn.Status
	Reason          txn.AbortReason
	CommitLatencyUs int64 // from sending the commit request to receiving the decision
	Err             error // the request itself failed; Status is Unknown then
}

// Commit submits the transaction. A transaction with only reads also goes through the commit
// path, so it is serializable with everything else.
func (t *Tx) Commit(done func(Result)) {
	if t.finished {
		done(Result{Status: txn.Aborted, Err: ErrFinished})
		return
	}
	t.finished = true
	sentUs := t.s.tr.NowUs()
	ct := &txn.Txn{ID: t.id, Reads: t.reads, Writes: t.writes}
	t.s.call(protocol.Request{Kind: protocol.Commit, Txn: ct}, func(r protocol.Reply) {
		res := Result{Status: r.Status, Reason: r.Reason, CommitLatencyUs: t.s.tr.NowUs() - sentUs}
		if r.Err != "" || (r.Status != txn.Committed && r.Status != txn.Aborted) {
			res.Status, res.Err = txn.Unknown, fmt.Errorf("client: commit of %s failed, outcome unknown: %s", t.id, r.Err)
		}
		t.s.recordTxn(t, res)
		done(res)
	})
}

func (s *Session) recordTxn(t *Tx, res Result) {
	if s.record == nil {
		return
	}
	keys := make([]string, len(t.writes))
	for i, w := range t.writes {
		keys[i] = w.Key
	}
	s.record(history.Txn{ID: t.id, DC: s.dc, Client: s.name, Status: res.Status, Reason: res.Reason,
		StartUs: t.startUs, EndUs: s.tr.NowUs(), Reads: t.reads, Writes: keys, Attempt: t.attempt, First: t.first})
}

// ReadOnly runs a read-only transaction over keys through the ReadSnapshot path and records it
// in the history as a committed snapshot transaction that only read (history.Txn.Snapshot), so
// that the checker holds it to serializability within its datacenter. Use it only with
// protocols whose snapshots are serializable (registry.Entry.SerializableSnapshotsPerDC: Ogre's
// RoT-Storage). The keys must be distinct.
func (s *Session) ReadOnly(keys []string, done func([]protocol.SnapshotRead, error)) {
	s.nextTxn++
	id, startUs := txn.NewID(s.id, s.nextTxn), s.tr.NowUs()
	s.ReadSnapshot(keys, func(reads []protocol.SnapshotRead, err error) {
		if err == nil && s.record != nil {
			rs := make([]txn.Read, len(reads))
			for i, r := range reads {
				rs[i] = txn.Read{Key: r.Key, Version: r.Version}
			}
			s.record(history.Txn{ID: id, DC: s.dc, Client: s.name, Status: txn.Committed, StartUs: startUs, EndUs: s.tr.NowUs(), Reads: rs, Snapshot: true})
		}
		done(reads, err)
	})
}

// ReadSnapshot reads keys from one consistent snapshot of the local replica: the opt-in
// "per-DC snapshot" read-only path. It is not serializable across datacenters (two datacenters
// may apply independent transactions in different orders); use a transaction of Gets and Commit
// for that.
func (s *Session) ReadSnapshot(keys []string, done func([]protocol.SnapshotRead, error)) {
	for _, k := range keys {
		if k == "" {
			done(nil, errors.New("client: empty key"))
			return
		}
	}
	s.call(protocol.Request{Kind: protocol.ReadSnapshot, Keys: keys}, func(r protocol.Reply) {
		if r.Err != "" {
			done(nil, errors.New(r.Err))
			return
		}
		done(r.Snapshot, nil)
	})
}
