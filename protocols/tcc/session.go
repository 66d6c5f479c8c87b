package tcc

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// Session is one client of a transactional-causal store: it names transactions (ids
// t<client>.<seq>, so that a client's ids order its session), runs them through the protocol's
// Client one at a time, and records each finished one for the checker.
type Session struct {
	c       Client
	tr      Transport
	id      txn.ClientID
	dc      string
	name    string
	nextTxn uint32
	record  func(history.Txn)
}

// NewSession returns a session named name (e.g. "dc0/3") of client id in datacenter dc, running
// its transactions through c. If record is not nil it receives every finished transaction.
func NewSession(c Client, tr Transport, id txn.ClientID, dc, name string, record func(history.Txn)) *Session {
	return &Session{c: c, tr: tr, id: id, dc: dc, name: name, record: record}
}

// Name returns the session's name.
func (s *Session) Name() string { return s.name }

// NextID returns the id the session's next transaction will get (a workload that makes values
// name their writer needs it before the call).
func (s *Session) NextID() txn.ID { return txn.NewID(s.id, s.nextTxn+1) }

func (s *Session) begin() (txn.ID, int64) {
	s.nextTxn++
	return txn.NewID(s.id, s.nextTxn), s.tr.NowUs()
}

// Move switches the session to datacenter dc (named dcName in the history) through the
// client library's Mover and calls done once the library may run transactions there; a library
// that cannot move refuses. The session's later transactions are recorded in dcName.
func (s *Session) Move(dc int, dcName string, done func(error)) {
	m, ok := s.c.(Mover)
	if !ok {
		done(fmt.Errorf("tcc: the session's client library (%T) cannot change datacenter", s.c))
		return
	}
	m.Move(dc, func(err error) {
		if err == nil {
			s.dc = dcName
		}
		done(err)
	})
}

// Read runs a ROT over keys.
func (s *Session) Read(keys []string, done func(ReadResult)) {
	id, startUs := s.begin()
	s.c.ReadTx(id, keys, func(r ReadResult) {
		if s.record != nil && r.Err == nil {
			h := history.Txn{ID: id, DC: s.dc, Client: s.name, Status: txn.Committed,
				StartUs: startUs, EndUs: s.tr.NowUs(), Rounds: r.Rounds, Reads: make([]txn.Read, len(r.Reads))}
			for i, rd := range r.Reads {
				h.Reads[i] = txn.Read{Key: rd.Key, Version: rd.Version}
			}
			s.record(h)
		}
		done(r)
	})
}

// Write runs a WOT of writes.
func (s *Session) Write(writes []txn.Write, done func(WriteResult)) {
	id, startUs := s.begin()
	s.c.WriteTx(id, writes, func(r WriteResult) {
		if s.record != nil {
			h := history.Txn{ID: id, DC: s.dc, Client: s.name, Status: r.Status,
				StartUs: startUs, EndUs: s.tr.NowUs(), Writes: make([]string, len(writes))}
			if r.Err != nil && r.Status != txn.Committed {
				h.Status = txn.Unknown
			}
			for i, w := range writes {
				h.Writes[i] = w.Key
			}
			s.record(h)
		}
		done(r)
	})
}
