package alvin

import "github.com/meridian-kv/meridian/protocol/txn"

// The POB messages of spec §3.3. Every message names its transaction (Tid) and the epoch of the
// consensus instance it belongs to; the sender is the message's source, so the leader of a
// PROPOSE or ACCEPT is the node that sent it, and replies go back to it. Dependency lists are
// sorted and free of duplicates. A message is never modified after it is sent.

// Propose is PROPOSE (§3.4): the leader's initial position and dependencies for Tid, with the
// payload.
type Propose struct {
	Tid     txn.ID
	Epoch   uint64
	Pos     uint64
	Deps    []txn.ID
	Payload *txn.Txn
}

// AckPropose is ACKPROPOSE: the replying node's own position and dependencies for Tid.
type AckPropose struct {
	Tid   txn.ID
	Epoch uint64
	Pos   uint64
	Deps  []txn.ID
}

// Accept is ACCEPT (§3.6): the decided position and dependencies. NoOp decides Tid as a
// transaction that conflicts with nothing and is never delivered (§3.7). Payload is set for the
// nodes not known to hold it.
type Accept struct {
	Tid     txn.ID
	Epoch   uint64
	Pos     uint64
	Deps    []txn.ID
	NoOp    bool
	Payload *txn.Txn
}

// AckAccept is ACKACCEPT: the accepted position and the dependencies with the node's
// delta-deps added.
type AckAccept struct {
	Tid   txn.ID
	Epoch uint64
	Pos   uint64
	Deps  []txn.ID
}

// Stable is STABLE: Tid's final position and dependencies (or NO-OP). It also answers a Fetch.
type Stable struct {
	Tid     txn.ID
	Epoch   uint64
	Pos     uint64
	Deps    []txn.ID
	NoOp    bool
	Payload *txn.Txn
}

// Prepare is PREPARE (§3.7): a recovering node asks for promises in a higher epoch.
type Prepare struct {
	Tid   txn.ID
	Epoch uint64
}

// Status of an entry in a node's DQueue.
type Status uint8

// The entry statuses; Unknown is a node that has not seen the transaction's PROPOSE.
const (
	Unknown Status = iota
	Pending
	Accepted
	StableStatus
)

// Promise is PROMISE: what the promising node knows of Tid. Pos and Deps are its current values
// (its own reply while Pending, the accepted values while Accepted, the final ones when Stable);
// AcceptedEpoch is meaningful when Status is Accepted. ProposedEpoch, ProposedPos and
// ProposedDeps are the PROPOSE this node answered (HasProposal), for fast-decision recovery.
type Promise struct {
	Tid           txn.ID
	Epoch         uint64
	Status        Status
	Pos           uint64
	Deps          []txn.ID
	NoOp          bool
	AcceptedEpoch uint64
	HasProposal   bool
	ProposedEpoch uint64
	ProposedPos   uint64
	ProposedDeps  []txn.ID
	Payload       *txn.Txn
}

// Nack tells a leader or recoverer that the node promised a higher epoch for Tid.
type Nack struct {
	Tid      txn.ID
	Promised uint64
}

// Fetch asks the receiver for the final decision of each transaction in Tids (answered with a
// Stable per transaction the receiver holds as stable).
type Fetch struct {
	Tids []txn.ID
}

// Delivered is the garbage-collection report of §3.9: Tids are the transactions the sender has
// delivered and still keeps; Gone are transactions of the receiver's last report that the sender
// has already collected (so it delivered them too).
type Delivered struct {
	Tids []txn.ID
	Gone []txn.ID
}

func idsBytes(ids []txn.ID) int { return 2 + 8*len(ids) }

func payloadBytes(t *txn.Txn) int {
	if t == nil {
		return 1
	}
	return t.SizeBytes()
}

// SizeBytes estimates the encoded size.
func (m *Propose) SizeBytes() int { return 20 + idsBytes(m.Deps) + payloadBytes(m.Payload) }

// SizeBytes estimates the encoded size.
func (m *AckPropose) SizeBytes() int { return 20 + idsBytes(m.Deps) }

// SizeBytes estimates the encoded size.
func (m *Accept) SizeBytes() int { return 21 + idsBytes(m.Deps) + payloadBytes(m.Payload) }

// SizeBytes estimates the encoded size.
func (m *AckAccept) SizeBytes() int { return 20 + idsBytes(m.Deps) }

// SizeBytes estimates the encoded size.
func (m *Stable) SizeBytes() int { return 21 + idsBytes(m.Deps) + payloadBytes(m.Payload) }

// SizeBytes estimates the encoded size.
func (m *Prepare) SizeBytes() int { return 12 }

// SizeBytes estimates the encoded size.
func (m *Promise) SizeBytes() int {
	return 40 + idsBytes(m.Deps) + idsBytes(m.ProposedDeps) + payloadBytes(m.Payload)
}

// SizeBytes estimates the encoded size.
func (m *Nack) SizeBytes() int { return 12 }

// SizeBytes estimates the encoded size.
func (m *Fetch) SizeBytes() int { return idsBytes(m.Tids) }

// SizeBytes estimates the encoded size.
func (m *Delivered) SizeBytes() int { return idsBytes(m.Tids) + idsBytes(m.Gone) }
