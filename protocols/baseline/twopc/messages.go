package twopc

import (
	"github.com/meridian-kv/meridian/protocol/txn"
)

// ReadReq asks the coordinator for a shared lock on Key for transaction Txn and the key's value
// once granted. Rid is the forwarding replica's request number, echoed in the ReadResp. Ballot
// is the coordinator's term as the forwarding replica knows it: a coordinator serves only the
// requests addressed to its current term, so a request forwarded before a fail-over never takes
// locks in a later term.
type ReadReq struct {
	From   int // datacenter of the forwarding replica
	Ballot uint64
	Txn    txn.ID
	Key    string
	Rid    uint64
}

// ReadResp answers a ReadReq: the value and version read under the shared lock, or Aborted with
// the reason when the transaction was aborted (e.g. it closed a deadlock cycle).
type ReadResp struct {
	Rid     uint64
	Txn     txn.ID
	Value   []byte
	Version txn.ID
	Aborted bool
	Reason  txn.AbortReason
}

// CommitReq forwards a client's commit request (its reads and buffered writes) to the
// coordinator of term Ballot (see ReadReq).
type CommitReq struct {
	From   int
	Ballot uint64
	Txn    *txn.Txn
}

// AbortReq asks the coordinator to abort Txn and release its locks unless it has already decided
// to commit it; the coordinator answers with an Outcome either way. Forwarding replicas send it,
// repeatedly until answered, when a forwarded request times out or the coordinator changes.
type AbortReq struct {
	From int
	Txn  txn.ID
}

// Outcome is a replica's knowledge of Txn's fate, sent to the forwarding replica: Committed once
// the commit record is chosen, Aborted once the transaction can never commit, Unknown when the
// transaction was forgotten.
type Outcome struct {
	Txn    txn.ID
	Status txn.Status
	Reason txn.AbortReason
}

// Entry is one position of the Multi-Paxos log: a committed transaction (its id and writes), or
// a no-op (id txn.None, no writes) that a new coordinator puts in a position nobody reported.
type Entry struct {
	Index uint64
	Txn   *txn.Txn
}

// Accept is the coordinator's phase-2 message of term Ballot: log entries (consecutive from
// Entries[0].Index; possibly none, then it is a heartbeat) and the index up to which the log is
// chosen, so that it doubles as the asynchronous decision for learners. Fence is the end of the
// log the coordinator recovered when its term began: entries accepted in earlier terms beyond it
// were never chosen and never will be. Base is a prefix every replica has applied (acceptors may
// drop it). SentUs is the coordinator's clock when it sent the message; the Ack echoes it, and
// the coordinator's lease runs from it.
type Accept struct {
	Ballot  uint64
	Fence   uint64
	Base    uint64
	Commit  uint64
	SentUs  int64
	Entries []Entry
}

// Ack is an acceptor's answer to an Accept: it holds every entry up to Match accepted in term
// Ballot (or applied) and has applied the log up to Commit. An Ack whose Ballot is above the
// coordinator's is a refusal: the acceptor has promised a later term. EchoUs is the Accept's
// SentUs.
type Ack struct {
	From   int
	Ballot uint64
	Match  uint64
	Commit uint64
	EchoUs int64
}

// Prepare is phase 1 of a candidate coordinator's term Ballot: promise to ignore earlier terms
// and report every entry held above index After.
type Prepare struct {
	Ballot uint64
	After  uint64
	SentUs int64
}

// Accepted is an entry an acceptor reports in a Promise, with the term it was accepted in
// (chosenBallot for entries the acceptor knows are chosen).
type Accepted struct {
	Index  uint64
	Ballot uint64
	Txn    *txn.Txn
}

// Promise answers a Prepare. Promised == Ballot grants it: the acceptor reports its applied
// prefix, the latest fence it accepted, and the entries it holds above the Prepare's After (at
// most maxPromiseEntries; More when further ones remain, which the candidate asks for with
// another Prepare). Promised > Ballot refuses it for a later term; Promised < Ballot refuses it
// because the acceptor still grants the current coordinator's lease. EchoUs is the Prepare's
// SentUs.
type Promise struct {
	From        int
	Ballot      uint64
	Promised    uint64
	Applied     uint64
	FenceBallot uint64
	FenceEnd    uint64
	More        bool
	EchoUs      int64
	Entries     []Accepted
}

// SizeBytes estimates the encoded size.
func (m *ReadReq) SizeBytes() int { return 24 + len(m.Key) }

// SizeBytes estimates the encoded size.
func (m *ReadResp) SizeBytes() int { return 32 + len(m.Value) + len(m.Reason) }

// SizeBytes estimates the encoded size.
func (m *CommitReq) SizeBytes() int { return 8 + m.Txn.SizeBytes() }

// SizeBytes estimates the encoded size.
func (m *AbortReq) SizeBytes() int { return 16 }

// SizeBytes estimates the encoded size.
func (m *Outcome) SizeBytes() int { return 16 + len(m.Reason) }

// SizeBytes estimates the encoded size.
func (m *Accept) SizeBytes() int {
	size := 16
	for _, e := range m.Entries {
		size += 8 + e.Txn.SizeBytes()
	}
	return size
}

// SizeBytes estimates the encoded size.
func (m *Ack) SizeBytes() int { return 24 }

// SizeBytes estimates the encoded size.
func (m *Prepare) SizeBytes() int { return 24 }

// SizeBytes estimates the encoded size.
func (m *Promise) SizeBytes() int {
	size := 48
	for _, e := range m.Entries {
		size += 16 + e.Txn.SizeBytes()
	}
	return size
}
