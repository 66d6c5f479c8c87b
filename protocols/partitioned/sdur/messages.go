package sdur

import (
	"strconv"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Client requests (protocol.Request.Op) and their answers (protocol.Reply.Op).

// ReadReq is READ (spec §3.3): read Key at snapshot St of the server's partition, or at the
// server's SC when HasSt is false (the transaction's first read there). A server asked for a
// snapshot it has not reached yet waits until it has.
type ReadReq struct {
	Tx    txn.ID
	Key   string
	St    uint64
	HasSt bool
}

// ReadReply is READREPLY: the newest version of the key at or before St, and St.
type ReadReply struct {
	Value   []byte
	Version txn.ID
	St      uint64
}

// SnapReq asks a server for the latest published snapshot (spec §3.6), which a read-only
// transaction reads at.
type SnapReq struct{}

// SnapReply is the latest published snapshot: its number M (0: none yet, S all zero) and S,
// one SC per partition.
type SnapReply struct {
	M uint64
	S []uint64
}

// Slice is one partition's part of a transaction: the keys it read there, what it writes there
// and the snapshot (SC) its reads there used.
type Slice struct {
	Part int
	RS   []string
	WS   []txn.Write
	St   uint64
}

// CommitReq is COMMIT: the transaction's slices, one per partition it touched, in partition
// order. The answer is a CommitReply.
type CommitReq struct {
	Tx     txn.ID
	Slices []Slice
}

// CommitReply is OUTCOME (spec §3.4, B11): the coordinator's answer to COMMIT.
type CommitReply struct {
	Status txn.Status
	Reason txn.AbortReason
}

// Peer messages.

// Submit hands Payload to the atomic broadcast of partition Group: any server of the group
// keeps it until it is delivered and makes sure its leader proposes it.
type Submit struct {
	Group   int
	Payload Payload
}

// Vote is VOTE: partition Part's certification vote on global transaction Tx.
type Vote struct {
	Tx     txn.ID
	Part   int
	Commit bool
}

// VoteQuery asks a server of another partition for its partition's vote on Tx, which the
// asker has missed (a lost message, a crash); a server that has voted answers with a Vote.
type VoteQuery struct{ Tx txn.ID }

// SnapAsk asks a server of every partition for its REPORT for snapshot M; Prev is the previous
// snapshot, which the reports start from.
type SnapAsk struct {
	M    uint64
	Prev []uint64
}

// GlobalCommit is one global transaction committed at the reporting partition: its SC slot
// there (T[q], spec §3.6) and its partitions.
type GlobalCommit struct {
	Tx    txn.ID
	SC    uint64
	Parts []int
}

// Report is REPORT: partition Part's SC when asked (c_q) and the globals it committed after the
// previous snapshot, up to C.
type Report struct {
	M    uint64
	Part int
	C    uint64
	L    []GlobalCommit
}

// SnapPublish is SNAPSHOT: snapshot M is S.
type SnapPublish struct {
	M uint64
	S []uint64
}

// Payload is what a partition's atomic broadcast orders. Key names it, so that a payload
// submitted twice (to every replica of a group, or again after a loss) is proposed once.
type Payload interface {
	protocol.Message
	Key() string
}

// Terminate is TERMINATE (spec §3.4): the slice of transaction Tx for partition Part, with
// everything its servers need to certify, vote and answer the client. SubmitUs is the
// coordinator's clock when it received COMMIT: a partition ignores a TERMINATE delivered long
// after it (gc_horizon), which lets it forget what it knew about old transactions (gc.go).
type Terminate struct {
	Tx       txn.ID
	Slice    Slice
	Parts    []int // partitions(t), increasing
	Coord    protocol.NodeID
	Client   txn.ClientID
	Seq      uint64
	SubmitUs int64
}

// AbortReq is ABORTREQ (spec §3.5): a server of another partition of global Tx, missing this
// partition's vote, asks it to vote abort unless it has delivered Tx already. It carries the
// coordinator and client, for the case where the coordinator's own partition takes it.
type AbortReq struct {
	Tx     txn.ID
	Parts  []int
	Coord  protocol.NodeID
	Client txn.ClientID
	Seq    uint64
	// SubmitUs is the transaction's TERMINATE's (the coordinator's clock at COMMIT).
	SubmitUs int64
}

// Final is FINAL (VOTEBCAST, spec §5.3): global Tx's outcome, ordered in the partition.
type Final struct {
	Tx     txn.ID
	Commit bool
}

// SnapDecided orders snapshot M = S in partition 0's broadcast before it is published, so that
// published snapshots form one chain whatever leader changes happen (spec §3.6: one instance at a
// time, monotonic).
type SnapDecided struct {
	M uint64
	S []uint64
}

// Marker is MARKER(m, q) (spec §3.6, marker+reconcile): partition Part's leader has joined
// snapshot round M, which Coord (partition 0's leader) started after snapshot Prev. Leaders send
// it to every server of every partition; a leader holding the markers of every partition for M
// reports its SC to Coord.
type Marker struct {
	M     uint64
	Part  int
	Coord protocol.NodeID
	Prev  []uint64
}

// SnapBegin is SNAPBEGIN(m): from its delivery on, the partition holds the globals it delivers
// (queued in delivery order, not certified) until SnapResume(m).
type SnapBegin struct{ M uint64 }

// SnapResume is SNAPRESUME(m): the partition certifies the globals it held, in order, and stops
// holding.
type SnapResume struct{ M uint64 }

// Key implements Payload.
func (m *SnapBegin) Key() string { return "B" + strconv.FormatUint(m.M, 10) }

// Key implements Payload.
func (m *SnapResume) Key() string { return "R" + strconv.FormatUint(m.M, 10) }

// Key implements Payload.
func (m *Terminate) Key() string { return "T" + m.Tx.String() }

// Key implements Payload.
func (m *AbortReq) Key() string { return "A" + m.Tx.String() }

// Key implements Payload.
func (m *Final) Key() string { return "F" + m.Tx.String() }

// Key implements Payload.
func (m *SnapDecided) Key() string { return "S" + strconv.FormatUint(m.M, 10) }

// PaxosKind names a Paxos message (spec §3.7).
type PaxosKind uint8

// The Paxos messages of a partition's group.
const (
	P1a       PaxosKind = iota + 1 // a candidate asks for promises for Ballot
	P1b                            // a promise, with the acceptor's accepted slots
	P2a                            // the leader asks to accept Value at Inst in Ballot
	P2b                            // an acceptor accepted Inst in Ballot (sent to every server)
	Nack                           // the sender promised a higher Ballot
	Heartbeat                      // the leader is alive and has delivered up to Frontier
	CatchUp                        // a learner asks the leader for decided slots after Frontier
	Decide                         // a decided slot, for a learner that missed it
)

// Accepted is one slot an acceptor reports in P1b: the ballot it accepted it in and the value;
// Decided marks a value the acceptor knows was chosen.
type Accepted struct {
	Inst    uint64
	Ballot  uint64
	Decided bool
	Value   []Payload
}

// Paxos is one Paxos message inside partition Group.
type Paxos struct {
	Kind     PaxosKind
	Group    int
	Ballot   uint64
	Inst     uint64
	Frontier uint64
	Value    []Payload
	Accepted []Accepted
}

// SizeBytes implementations estimate encoded sizes for traffic accounting.

func (m *ReadReq) SizeBytes() int     { return 24 + len(m.Key) }
func (m *ReadReply) SizeBytes() int   { return 24 + len(m.Value) }
func (m *SnapReq) SizeBytes() int     { return 1 }
func (m *SnapReply) SizeBytes() int   { return 8 + 8*len(m.S) }
func (m *CommitReq) SizeBytes() int   { return 8 + slicesSize(m.Slices) }
func (m *CommitReply) SizeBytes() int { return 1 + len(m.Reason) }
func (m *Submit) SizeBytes() int      { return 4 + m.Payload.SizeBytes() }
func (m *Vote) SizeBytes() int        { return 13 }
func (m *VoteQuery) SizeBytes() int   { return 8 }
func (m *SnapAsk) SizeBytes() int     { return 8 + 8*len(m.Prev) }
func (m *Report) SizeBytes() int {
	n := 20
	for _, g := range m.L {
		n += 16 + 4*len(g.Parts)
	}
	return n
}
func (m *SnapPublish) SizeBytes() int { return 8 + 8*len(m.S) }
func (m *Terminate) SizeBytes() int   { return 40 + 4*len(m.Parts) + slicesSize([]Slice{m.Slice}) }
func (m *AbortReq) SizeBytes() int    { return 32 + 4*len(m.Parts) }
func (m *Marker) SizeBytes() int      { return 16 + 8*len(m.Prev) }
func (m *SnapBegin) SizeBytes() int   { return 8 }
func (m *SnapResume) SizeBytes() int  { return 8 }
func (m *Final) SizeBytes() int       { return 9 }
func (m *SnapDecided) SizeBytes() int { return 8 + 8*len(m.S) }
func (m *Paxos) SizeBytes() int {
	n := 33 + valueSize(m.Value)
	for _, a := range m.Accepted {
		n += 17 + valueSize(a.Value)
	}
	return n
}

func slicesSize(ss []Slice) int {
	n := 0
	for _, s := range ss {
		n += 12
		for _, k := range s.RS {
			n += len(k)
		}
		for _, w := range s.WS {
			n += len(w.Key) + len(w.Value)
		}
	}
	return n
}

func valueSize(v []Payload) int {
	n := 0
	for _, p := range v {
		n += p.SizeBytes()
	}
	return n
}

// Tick is THRESHOLD's no-op (spec §5.2, B20): delivered, it raises DC to To (the reorder
// threshold of the global at PL's head, whose votes are in), so that the global completes
// without waiting for K real deliveries and no later local may jump it. The spec's tick counts
// one delivery; one that closes the window keeps the same guarantee (every replica raises DC at
// the same point of the order) and does not take K ticks.
type Tick struct{ To uint64 }

// Key implements Payload.
func (m *Tick) Key() string { return "K" + strconv.FormatUint(m.To, 10) }

// SizeBytes estimates the encoded size.
func (m *Tick) SizeBytes() int { return 8 }
