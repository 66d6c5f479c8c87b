package multipaxos

import "github.com/meridian-kv/meridian/protocol/txn"

// Forward carries an update transaction from its origin replica to the leader (spec §5.1 REQ).
// The origin sends it again after a leader change and after ParamResend without a decision.
type Forward struct {
	Txn *txn.Txn
}

// Prepare is phase 1a: a candidate asks every replica to promise Ballot and to report what it
// accepted in the slots from From on (the candidate knows the chosen values below From).
type Prepare struct {
	Ballot uint64
	From   uint64
}

// Entry is one log slot as a replica holds it: the value accepted (or chosen) there and the
// ballot it was accepted in. A nil Txn is a no-op, the value a new leader proposes for a slot
// nobody in its quorum accepted.
type Entry struct {
	Slot   uint64
	Ballot uint64
	Txn    *txn.Txn
}

// Promise is phase 1b: the replica promised Ballot and reports its accepted entries from the
// Prepare's From on, in slot order.
type Promise struct {
	Ballot  uint64
	Entries []Entry
}

// Nack refuses a Prepare, Accept or Commit of a ballot below the one the replica promised, and
// tells the sender that ballot, so a deposed leader or a beaten candidate steps down.
type Nack struct {
	Ballot uint64
}

// Accept is phase 2a: the leader of Ballot proposes Txn (nil: a no-op) for Slot (spec §5.1
// ACCEPT).
type Accept struct {
	Ballot uint64
	Slot   uint64
	Txn    *txn.Txn
}

// Accepted is phase 2b: the replica accepted Slot in Ballot (spec §5.1 ACCEPTED).
type Accepted struct {
	Ballot uint64
	Slot   uint64
}

// Commit tells every replica that every slot up to UpTo is chosen (spec §5.1 COMMIT): a replica
// that accepted a slot in Ballot now knows that value is chosen, and fetches the others. The
// leader also sends it as its heartbeat, which renews the followers' lease. Every replica has
// executed the slots up to TrimTo (≤ UpTo), so they may be dropped from the logs.
type Commit struct {
	Ballot uint64
	UpTo   uint64
	TrimTo uint64
}

// CommitAck answers a Commit, at most twice per heartbeat period: the follower is alive and in
// Ballot, and has executed the log up to Executed.
type CommitAck struct {
	Ballot   uint64
	Executed uint64
}

// Fetch asks a replica for the chosen values of the slots from From on, which the sender lacks.
type Fetch struct {
	From uint64
}

// Chosen answers a Fetch with chosen entries, in slot order.
type Chosen struct {
	Entries []Entry
}

func txnSize(t *txn.Txn) int {
	if t == nil {
		return 1
	}
	return t.SizeBytes()
}

func entriesSize(es []Entry) int {
	size := 2
	for _, e := range es {
		size += 12 + txnSize(e.Txn)
	}
	return size
}

// SizeBytes estimates the encoded size.
func (m *Forward) SizeBytes() int { return 1 + txnSize(m.Txn) }

// SizeBytes estimates the encoded size.
func (m *Prepare) SizeBytes() int { return 11 }

// SizeBytes estimates the encoded size.
func (m *Promise) SizeBytes() int { return 6 + entriesSize(m.Entries) }

// SizeBytes estimates the encoded size.
func (m *Nack) SizeBytes() int { return 6 }

// SizeBytes estimates the encoded size.
func (m *Accept) SizeBytes() int { return 11 + txnSize(m.Txn) }

// SizeBytes estimates the encoded size.
func (m *Accepted) SizeBytes() int { return 11 }

// SizeBytes estimates the encoded size.
func (m *Commit) SizeBytes() int { return 16 }

// SizeBytes estimates the encoded size.
func (m *CommitAck) SizeBytes() int { return 11 }

// SizeBytes estimates the encoded size.
func (m *Fetch) SizeBytes() int { return 6 }

// SizeBytes estimates the encoded size.
func (m *Chosen) SizeBytes() int { return 1 + entriesSize(m.Entries) }
