package twopc

import (
	"github.com/meridian-kv/meridian/txn"
)

// ReadReq asks the coordinator for a shared lock on Key for transaction Txn and the key's value
// once granted. Rid is the forwarding replica's request number, echoed in the ReadResp.
type ReadReq struct {
	From int // datacenter of the forwarding replica
	Txn  txn.ID
	Key  string
	Rid  uint64
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
// coordinator.
type CommitReq struct {
	From int
	Txn  *txn.Txn
}

// AbortReq asks the coordinator to abort Txn and release its locks unless it has already decided
// to commit it; the coordinator answers with an Outcome either way. Forwarding replicas send it,
// repeatedly until answered, when a forwarded request times out.
type AbortReq struct {
	From int
	Txn  txn.ID
}

// Outcome is the coordinator's decision on Txn, sent to the forwarding replica.
type Outcome struct {
	Txn    txn.ID
	Status txn.Status
	Reason txn.AbortReason
}

// Entry is one position of the Multi-Paxos log: a committed transaction (its id and writes).
type Entry struct {
	Index uint64
	Txn   *txn.Txn
}

// Accept is the coordinator's phase-2 message: log entries (consecutive from Entries[0].Index;
// possibly none) and the index up to which the log is chosen, so that it doubles as the
// asynchronous decision for learners.
type Accept struct {
	Entries []Entry
	Commit  uint64
}

// Ack is an acceptor's answer to an Accept: it holds every entry up to Match and knows the log is
// chosen up to Commit.
type Ack struct {
	From   int
	Match  uint64
	Commit uint64
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
