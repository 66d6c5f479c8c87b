package wren

import "github.com/meridian-kv/meridian/protocol/txn"

// Client requests (carried in protocol.Request.Op) and their answers (protocol.Reply.Op).

// SnapshotReq is a ROT's round 1, sent to the partition the client picked as the ROT's
// coordinator: the client's stable snapshot lst_c, which the answer never goes below.
type SnapshotReq struct {
	Tx  txn.ID
	Lst int64
}

// SnapshotResp answers a SnapshotReq with the ROT's snapshot st = max(LST, lst_c).
type SnapshotResp struct {
	Tx txn.ID
	St int64
}

// ReadReq is a ROT's round 2 at one partition: the ROT's keys that live there (distinct), read
// at snapshot St.
type ReadReq struct {
	Tx   txn.ID
	St   int64
	Keys []string
}

// ReadResp answers a ReadReq: one Item per requested key, in request order. TooOld says the
// partition has garbage-collected versions that a read at St might need (St is older than its
// collection floor); Items is then empty and Lst carries the partition's LST, a stable time the
// client adopts before it restarts the ROT.
type ReadResp struct {
	Tx     txn.ID
	TooOld bool
	Lst    int64
	Items  []Item
}

// Item is one key's newest version with ct ≤ st; Writer is txn.None (and Value nil) for the
// initial version.
type Item struct {
	Key    string
	Value  []byte
	Writer txn.ID
}

// CommitReq is a WOT, sent to its coordinator partition: the writes (distinct keys), the
// client's stable snapshot lst_c and the commit time of its latest write hwt_c. Retries carry the
// same Tx; the coordinator answers every copy with the one decision.
type CommitReq struct {
	Tx     txn.ID
	Lst    int64
	Hwt    int64
	Writes []txn.Write
}

// CommitResp is the coordinator's decision: committed at Ct, or aborted (Ct 0) because a
// participant did not prepare within the transaction timeout.
type CommitResp struct {
	Tx        txn.ID
	Committed bool
	Ct        int64
}

// Partition-to-partition messages.

// Prepare asks a participant to prepare its share of a WOT. Clock is max(lst_c, hwt_c): the
// participant's HLC moves past it, so the prepare time exceeds everything the client has seen or
// written (causality, and the session's write order).
type Prepare struct {
	Tx     txn.ID
	Clock  int64
	Writes []txn.Write
}

// Vote is a participant's prepare time Pt for Tx.
type Vote struct {
	Tx txn.ID
	Pt int64
}

// Decision is the coordinator's outcome for Tx, resent until acknowledged.
type Decision struct {
	Tx        txn.ID
	Committed bool
	Ct        int64
}

// DecisionAck acknowledges a Decision.
type DecisionAck struct {
	Tx txn.ID
}

// Gossip carries the sender's local stable time: in all-to-all mode to every partition, in tree
// mode to the aggregator (partition 0).
type Gossip struct {
	Local int64
}

// StableTime is the aggregator's LST, fanned out to every partition in tree mode.
type StableTime struct {
	Lst int64
}

// Encoded sizes, for traffic accounting: an id or a timestamp is at most 10 bytes as a varint;
// each key and value is counted with a 2-byte length.
const (
	sizeScalar = 10
	sizeLen    = 2
)

func sizeWrites(ws []txn.Write) int {
	n := sizeLen
	for _, w := range ws {
		n += 2*sizeLen + len(w.Key) + len(w.Value)
	}
	return n
}

// SizeBytes implements protocol.Message.
func (m *SnapshotReq) SizeBytes() int { return 1 + 2*sizeScalar }

// SizeBytes implements protocol.Message.
func (m *SnapshotResp) SizeBytes() int { return 1 + 2*sizeScalar }

// SizeBytes implements protocol.Message.
func (m *ReadReq) SizeBytes() int {
	n := 1 + 2*sizeScalar + sizeLen
	for _, k := range m.Keys {
		n += sizeLen + len(k)
	}
	return n
}

// SizeBytes implements protocol.Message.
func (m *ReadResp) SizeBytes() int {
	n := 2 + 2*sizeScalar + sizeLen
	for _, it := range m.Items {
		n += 2*sizeLen + len(it.Key) + len(it.Value) + sizeScalar
	}
	return n
}

// SizeBytes implements protocol.Message.
func (m *CommitReq) SizeBytes() int { return 1 + 3*sizeScalar + sizeWrites(m.Writes) }

// SizeBytes implements protocol.Message.
func (m *CommitResp) SizeBytes() int { return 2 + 2*sizeScalar }

// SizeBytes implements protocol.Message.
func (m *Prepare) SizeBytes() int { return 1 + 2*sizeScalar + sizeWrites(m.Writes) }

// SizeBytes implements protocol.Message.
func (m *Vote) SizeBytes() int { return 1 + 2*sizeScalar }

// SizeBytes implements protocol.Message.
func (m *Decision) SizeBytes() int { return 2 + 2*sizeScalar }

// SizeBytes implements protocol.Message.
func (m *DecisionAck) SizeBytes() int { return 1 + sizeScalar }

// SizeBytes implements protocol.Message.
func (m *Gossip) SizeBytes() int { return 1 + sizeScalar }

// SizeBytes implements protocol.Message.
func (m *StableTime) SizeBytes() int { return 1 + sizeScalar }
