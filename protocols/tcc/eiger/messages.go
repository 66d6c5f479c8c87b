package eiger

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// The client library's requests (protocol.Request.Op) and the partitions' answers
// (protocol.Reply.Op). Times are Lamport times.

// Read is round 1 of a ROT at one partition (Eiger's read): the current committed version of
// each key with its validity interval. Clock is the client's Lamport clock.
type Read struct {
	Keys  []string
	Clock int64
}

// ReadByTime is round 2 of a ROT at one partition (Eiger's read_by_time): the version of each key
// valid at EffTime. The partition may first run commit checks with the coordinators of pending
// writes (round 3).
type ReadByTime struct {
	Keys    []string
	EffTime int64
	Clock   int64
}

// KeyRead is one key's answer to a Read or a ReadByTime.
type KeyRead struct {
	Key    string
	Value  []byte
	Writer txn.ID // txn.None for the initial version
	// EVT is the version's earliest valid time: its commit time (0 for the initial version).
	EVT int64
	// LVT is the version's latest valid time as far as the partition can vouch for it: its
	// Lamport clock (Read only; 0 in a ReadByTime answer).
	LVT int64
	// Pending: the key has a pending (prepared, undecided) write, so the partition vouches for
	// nothing: Value, Writer and EVT are empty and LVT is its clock (Eiger's "special empty
	// response"). The client must read the key again by time. Read only.
	Pending bool
}

// ReadReply answers a Read or a ReadByTime: one KeyRead per requested key, in request order.
type ReadReply struct {
	Reads []KeyRead
	// Clock is the partition's Lamport clock after the read.
	Clock int64
	// CommitChecks is the number of commit checks this ReadByTime sent to coordinators.
	CommitChecks int
	// Retry: the partition cannot answer (the version valid at EffTime was garbage-collected, or
	// the commit checks did not come back in time); the client restarts the ROT. Reads is empty.
	Retry bool
}

// Dep is one entry of a client's dependency list: a version it read (or wrote).
type Dep struct {
	Key     string
	Version txn.ID
}

// WriteReq is one participant's share of a WOT, sent by the client to every participant (Eiger's
// client-driven two-phase commit). Retries carry the same Txn.
type WriteReq struct {
	Txn         txn.ID
	Writes      []txn.Write // this partition's writes, keys distinct
	Coordinator protocol.NodeID
	// Participants lists every participant (the coordinator included); only the coordinator's
	// request carries it.
	Participants []protocol.NodeID
	// Deps is the client's dependency list; only the coordinator's request carries it.
	Deps  []Dep
	Clock int64
}

// WriteStatus is a participant's answer to a WriteReq.
type WriteStatus uint8

const (
	// Prepared: a participant other than the coordinator holds the writes pending.
	Prepared WriteStatus = iota + 1
	// Committed: the coordinator committed the WOT at CommitTime.
	Committed
	// Aborted: the WOT was aborted (a coordinator timeout or presumed abort).
	Aborted
)

// WriteReply answers a WriteReq. The coordinator answers once the WOT is decided; the other
// participants answer Prepared at once (or Aborted for a refused retry).
type WriteReply struct {
	Txn        txn.ID
	Status     WriteStatus
	CommitTime int64 // Committed only
	Clock      int64
}

// Peer messages between partitions.

// Vote is a participant's yes vote: it prepared Txn at PrepareTime.
type Vote struct {
	Txn         txn.ID
	PrepareTime int64
}

// Commit tells a participant that Txn committed at CommitTime. The coordinator retransmits it
// until the participant acknowledges.
type Commit struct {
	Txn        txn.ID
	CommitTime int64
}

// CommitAck acknowledges a Commit: the participant applied Txn.
type CommitAck struct {
	Txn txn.ID
}

// Abort tells a participant that Txn was aborted.
type Abort struct {
	Txn txn.ID
}

// Check is a commit check from a participant holding Txn pending to Txn's coordinator. With
// EffTime > 0 it is a read's check ("did Txn commit at or before EffTime?"): an undecided
// coordinator promises a commit time above EffTime. With EffTime 0 it is the participant's
// liveness check after the transaction timeout: a coordinator that never heard of Txn presumes
// it aborted.
type Check struct {
	Txn     txn.ID
	EffTime int64
}

// CheckStatus is a coordinator's answer to a Check.
type CheckStatus uint8

const (
	// CheckCommitted: Txn committed at CommitTime.
	CheckCommitted CheckStatus = iota + 1
	// CheckAborted: Txn aborted.
	CheckAborted
	// CheckUndecided: Txn is undecided and will commit, if ever, after Floor.
	CheckUndecided
)

// CheckReply answers a Check.
type CheckReply struct {
	Txn        txn.ID
	Status     CheckStatus
	CommitTime int64 // CheckCommitted only
	Floor      int64 // CheckUndecided only
}

const (
	intBytes = 8  // an int64 field
	idBytes  = 8  // a transaction id
	hdrBytes = 16 // framing: tag and counts, roughly
)

func keysBytes(keys []string) int {
	n := 0
	for _, k := range keys {
		n += len(k) + 1
	}
	return n
}

// SizeBytes estimates the encoded size.
func (m *Read) SizeBytes() int { return hdrBytes + intBytes + keysBytes(m.Keys) }

// SizeBytes estimates the encoded size.
func (m *ReadByTime) SizeBytes() int { return hdrBytes + 2*intBytes + keysBytes(m.Keys) }

// SizeBytes estimates the encoded size.
func (m *ReadReply) SizeBytes() int {
	n := hdrBytes + 2*intBytes
	for _, r := range m.Reads {
		n += len(r.Key) + len(r.Value) + idBytes + 2*intBytes + 3
	}
	return n
}

// SizeBytes estimates the encoded size. It grows with the dependency list (Eiger's client
// metadata, spec E3), so that a cost model charging per byte sees the list's cost.
func (m *WriteReq) SizeBytes() int {
	n := hdrBytes + idBytes + 2*intBytes + 4*len(m.Participants)
	for _, w := range m.Writes {
		n += len(w.Key) + len(w.Value) + 2
	}
	for _, d := range m.Deps {
		n += len(d.Key) + 1 + idBytes
	}
	return n
}

// SizeBytes estimates the encoded size.
func (m *WriteReply) SizeBytes() int { return hdrBytes + idBytes + 2*intBytes }

// SizeBytes estimates the encoded size.
func (m *Vote) SizeBytes() int { return hdrBytes + idBytes + intBytes }

// SizeBytes estimates the encoded size.
func (m *Commit) SizeBytes() int { return hdrBytes + idBytes + intBytes }

// SizeBytes estimates the encoded size.
func (m *CommitAck) SizeBytes() int { return hdrBytes + idBytes }

// SizeBytes estimates the encoded size.
func (m *Abort) SizeBytes() int { return hdrBytes + idBytes }

// SizeBytes estimates the encoded size.
func (m *Check) SizeBytes() int { return hdrBytes + idBytes + intBytes }

// SizeBytes estimates the encoded size.
func (m *CheckReply) SizeBytes() int { return hdrBytes + idBytes + 2*intBytes }
