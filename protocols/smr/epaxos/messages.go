package epaxos

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Instance names one slot of one replica's instance space (the paper's L.i): Replica is the
// index of the datacenter whose replica owns the space (its original command leader), Slot the
// position in that space, from 1.
type Instance struct {
	Replica uint32
	Slot    uint64
}

// String renders the instance as "R.i".
func (i Instance) String() string { return fmt.Sprintf("%d.%d", i.Replica, i.Slot) }

// less orders instances by replica, then slot: the order of dependency lists.
func (i Instance) less(o Instance) bool {
	return i.Replica < o.Replica || (i.Replica == o.Replica && i.Slot < o.Slot)
}

// cmp is less as a three-way comparison, for slices.SortFunc.
func (i Instance) cmp(o Instance) int {
	switch {
	case i.less(o):
		return -1
	case o.less(i):
		return 1
	}
	return 0
}

// Attrs are an instance's ordering attributes (the paper's seq and deps): Deps is sorted by
// (replica, slot) without repetitions.
type Attrs struct {
	Seq  uint64
	Deps []Instance
}

// PreAccept is Phase 1's request (paper Fig. 2, "PreAccept"): the command leader of Inst at
// Ballot proposes Cmd with its attributes. Ballot 0 is the original leader's; a recovering
// replica restarts Phase 1 at its own ballot (never the fast path).
type PreAccept struct {
	Inst   Instance
	Ballot uint64
	Cmd    *txn.Txn
	Attrs
}

// PreAcceptReply answers a PreAccept. OK: the replica's attributes for the command (the
// leader's, raised by what interferes with it there) and Unchanged, true when they equal the
// leader's. Not OK: the replica promised the higher Ballot.
type PreAcceptReply struct {
	Inst      Instance
	Ballot    uint64
	OK        bool
	Unchanged bool
	Attrs
}

// Accept is Phase 2's request (paper "Paxos-Accept"): accept Cmd (or the no-op, NoOp) with
// Attrs at Ballot. It carries the command, so a replica that missed Phase 1 learns it.
type Accept struct {
	Inst   Instance
	Ballot uint64
	NoOp   bool
	Cmd    *txn.Txn // nil exactly when NoOp
	Attrs
}

// AcceptReply answers an Accept; not OK: the replica promised the higher Ballot.
type AcceptReply struct {
	Inst   Instance
	Ballot uint64
	OK     bool
}

// Commit announces Inst's decided value. A replica that holds an instance committed answers
// any later PreAccept, Accept or Prepare of it with a Commit, so that a leader or recoverer
// that lost the original announcement learns it.
type Commit struct {
	Inst Instance
	NoOp bool
	Cmd  *txn.Txn // nil exactly when NoOp
	Attrs
}

// CommitAck tells the replica that announced Inst's Commit that the sender holds it; the
// announcer retransmits the Commit to every replica until each acknowledged it, so that a
// replica that missed it (partitioned, crashed) learns it even if nothing it executes depends
// on the instance.
type CommitAck struct {
	Inst Instance
}

// Progress reports, per instance space (indexed by replica), the slot up to which the sender
// has executed every instance, for garbage collection (gc.go).
type Progress struct {
	UpTo []uint64
}

// instanceOf returns the instance a message is about; Progress is about none.
func instanceOf(m protocol.Message) (Instance, bool) {
	switch m := m.(type) {
	case *PreAccept:
		return m.Inst, true
	case *PreAcceptReply:
		return m.Inst, true
	case *Accept:
		return m.Inst, true
	case *AcceptReply:
		return m.Inst, true
	case *Commit:
		return m.Inst, true
	case *CommitAck:
		return m.Inst, true
	case *Prepare:
		return m.Inst, true
	case *PrepareReply:
		return m.Inst, true
	case *TryPreAccept:
		return m.Inst, true
	case *TryPreAcceptReply:
		return m.Inst, true
	}
	return Instance{}, false
}

// Prepare is Explicit Prepare's request (paper Fig. 3): a replica recovering Inst asks every
// replica to promise Ballot and report what it holds.
type Prepare struct {
	Inst   Instance
	Ballot uint64
}

// PrepareReply answers a Prepare. OK: the replica promised Ballot and reports its state of the
// instance: Status (unknown, pre-accepted, accepted), the ballot it was (pre-)accepted at
// (VBallot), the value (NoOp or Cmd with Attrs), and Unchanged: it pre-accepted the original
// leader's ballot-0 proposal without changing its attributes, the evidence of a possible fast
// commit; Tried: it pre-accepted the ballot-0 proposal's value at VBallot > 0 from a
// TryPreAccept (no evidence of a fast commit, and no proof against one). Not OK: it promised the
// higher Ballot.
type PrepareReply struct {
	Inst      Instance
	Ballot    uint64
	OK        bool
	Status    Status
	VBallot   uint64
	NoOp      bool
	Cmd       *txn.Txn
	Unchanged bool
	Tried     bool
	Attrs
}

// TryPreAccept is the EPaxos paper's recovery optimisation: a replica recovering Inst at Ballot
// that found some, but not enough, evidence that the original leader committed Cmd with Attrs
// on the fast path asks a replica that promised Ballot to pre-accept that value, which it does
// only if no interfering command it knows is ordered neither before nor after the instance by
// the value and its own attributes.
type TryPreAccept struct {
	Inst   Instance
	Ballot uint64
	Cmd    *txn.Txn
	Attrs
}

// TryPreAcceptReply answers a TryPreAccept. OK: the replica pre-accepted the value at Ballot.
// Conflict: it did not, at Ballot, because of an interfering command it knows or because it
// holds another value at Ballot or an accepted one; Impossible: an interfering command is
// committed here, and neither it nor the value reaches the other through committed deps, so the
// value was never committed (a fast commit of it would have ordered the two). Neither OK nor
// Conflict: the replica promised the higher Ballot.
type TryPreAcceptReply struct {
	Inst       Instance
	Ballot     uint64
	OK         bool
	Conflict   bool
	Impossible bool
}

// Status is how far an instance has come at one replica.
type Status uint8

// The statuses, in the order an instance passes through them.
const (
	// Unknown: the replica has heard of the instance (a dependency, a Prepare) but holds no value.
	Unknown Status = iota
	// PreAccepted: the replica answered a PreAccept.
	PreAccepted
	// Accepted: the replica accepted a value at some ballot.
	Accepted
	// Committed: the value is decided and known here.
	Committed
	// Executed: the value was handed to the execution layer here (final).
	Executed
)

func (a *Attrs) size() int { return 8 + 12*len(a.Deps) }

// SizeBytes estimates the encoded size.
func (m *PreAccept) SizeBytes() int { return 20 + m.Cmd.SizeBytes() + m.size() }

// SizeBytes estimates the encoded size.
func (m *PreAcceptReply) SizeBytes() int { return 22 + m.size() }

// SizeBytes estimates the encoded size.
func (m *Accept) SizeBytes() int { return 21 + m.Cmd.SizeBytes() + m.size() }

// SizeBytes estimates the encoded size.
func (m *AcceptReply) SizeBytes() int { return 21 }

// SizeBytes estimates the encoded size.
func (m *Commit) SizeBytes() int { return 13 + m.Cmd.SizeBytes() + m.size() }

// SizeBytes estimates the encoded size.
func (m *CommitAck) SizeBytes() int { return 12 }

// SizeBytes estimates the encoded size.
func (m *Progress) SizeBytes() int { return 1 + 5*len(m.UpTo) }

// SizeBytes estimates the encoded size.
func (m *Prepare) SizeBytes() int { return 20 }

// SizeBytes estimates the encoded size.
func (m *PrepareReply) SizeBytes() int { return 33 + m.Cmd.SizeBytes() + m.size() }

// SizeBytes estimates the encoded size.
func (m *TryPreAccept) SizeBytes() int { return 20 + m.Cmd.SizeBytes() + m.size() }

// SizeBytes estimates the encoded size.
func (m *TryPreAcceptReply) SizeBytes() int { return 23 }
