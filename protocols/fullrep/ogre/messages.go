package ogre

import (
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Prepare asks a replica to vote on a transaction (spec M3): its reads, with the versions the
// client saw (named by their writers), and its writes.
type Prepare struct {
	Txn *txn.Txn
}

// Vote is a replica's answer to a Prepare (spec M4). A positive vote carries, for each write of
// the transaction in order, the replica's current version number of the key and, with
// dependency tracking, the committed readers of that version (the read-before dependencies).
type Vote struct {
	Txn      txn.ID
	Positive bool
	// Stale is set on a negative vote caused by a read of a version that is no longer current
	// (otherwise the transaction conflicted with a pending one).
	Stale    bool
	Versions []uint64
	RBDeps   [][]txn.ID
}

// Decision carries a decided transaction to every replica (spec M5). A committed one carries its
// reads and writes, and for each write the version it overwrites (Pred; its own is Pred+1) and
// the committed readers of that version (RBDeps, empty without dependency tracking). An aborted
// one carries only the transaction's id.
type Decision struct {
	Txn    *txn.Txn
	Commit bool
	Pred   []uint64
	RBDeps [][]txn.ID
}

// DecisionAck tells the coordinator that a replica processed a Decision, so that it stops
// retransmitting it.
type DecisionAck struct {
	Txn txn.ID
}

// SizeBytes estimates the encoded size.
func (m *Prepare) SizeBytes() int { return 8 + txnSize(m.Txn) }

// SizeBytes estimates the encoded size.
func (m *Vote) SizeBytes() int { return 10 + 8*len(m.Versions) + depsSize(m.RBDeps) }

// SizeBytes estimates the encoded size.
func (m *Decision) SizeBytes() int {
	return 2 + txnSize(m.Txn) + 8*len(m.Pred) + depsSize(m.RBDeps)
}

// SizeBytes estimates the encoded size.
func (m *DecisionAck) SizeBytes() int { return 9 }

func txnSize(t *txn.Txn) int {
	if t == nil {
		return 0
	}
	n := 8
	for _, r := range t.Reads {
		n += len(r.Key) + 9
	}
	for _, w := range t.Writes {
		n += len(w.Key) + len(w.Value) + 2
	}
	return n
}

func depsSize(deps [][]txn.ID) int {
	n := len(deps)
	for _, d := range deps {
		n += 8 * len(d)
	}
	return n
}
