package paxos

import (
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Kind distinguishes the Paxos messages.
type Kind uint8

const (
	// Prepare is Phase 1a: Ballot asks the acceptors of position Pos for a promise.
	Prepare Kind = iota + 1
	// Promise is Phase 1b: the acceptor promised Ballot for Pos; if it accepted a value there,
	// AccBallot (> 0) and Value report it.
	Promise
	// Accept is Phase 2a: Ballot asks the acceptors of Pos to accept Value.
	Accept
	// Accepted is Phase 2b: the acceptor accepted Ballot's value for Pos.
	Accepted
	// Reject refuses a Prepare or Accept for Pos with Ballot because the acceptor promised the
	// higher ballot AccBallot.
	Reject
	// Chosen announces (or repeats, for a learner that is behind) the value chosen for Pos: the
	// "apply" broadcast.
	Chosen
	// Sync is the periodic anti-entropy heartbeat: the sender has applied positions 1..Applied.
	// A peer that has applied more answers with Chosen messages for the missing positions.
	Sync
)

// Message is every Paxos message; Kind says which fields are meaningful.
type Message struct {
	Kind      Kind
	From      int    // the sender's datacenter
	Pos       uint64 // log position (all but Sync)
	Ballot    uint64 // Prepare, Promise, Accept, Accepted, Reject
	AccBallot uint64 // Promise: ballot of the accepted value (0: none); Reject: promised ballot
	// Value is a log entry: one transaction (paxos-commit) or a combined list (paxos-cp).
	// Promise (when AccBallot > 0), Accept, Chosen.
	Value   []*txn.Txn
	Applied uint64 // Sync
}

// SizeBytes estimates the encoded size: a fixed header plus the value's transactions.
func (m *Message) SizeBytes() int {
	size := 40
	for _, t := range m.Value {
		size += t.SizeBytes()
	}
	return size
}

// wellFormed reports whether m carries what its kind needs, so that a corrupt or hostile peer
// cannot crash the replica.
func (m *Message) wellFormed(n int) bool {
	if m.Kind < Prepare || m.Kind > Sync || m.From < 0 || m.From >= n {
		return false
	}
	for _, t := range m.Value {
		if t == nil {
			return false
		}
	}
	switch m.Kind {
	case Prepare, Accepted, Reject:
		return m.Pos > 0 && m.Ballot > 0
	case Promise:
		return m.Pos > 0 && m.Ballot > 0 && (m.AccBallot == 0 || len(m.Value) > 0)
	case Accept:
		return m.Pos > 0 && m.Ballot > 0 && len(m.Value) > 0
	case Chosen:
		return m.Pos > 0 && len(m.Value) > 0
	}
	return true
}
