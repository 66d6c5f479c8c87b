package fastccs

import "github.com/meridian-kv/meridian/protocol/txn"

// The client library's requests (protocol.Request.Op) and the partitions' answers
// (protocol.Reply.Op), spec §2.4 M1–M5 and M8, named after the thesis's Cassandra (Thrift)
// methods.

// MultigetSlice is a ROT's round-1 read at one partition (M1): the ROT's keys that live there
// and the client's clock vc_c.
type MultigetSlice struct {
	Keys []string
	VC   VC
}

// MultigetSliceByTime is a ROT's round-2 read (M3): the keys again and the client's clock after
// merging every round-1 ctm; the partition returns the newest versions with ct ≤ VC.
type MultigetSliceByTime struct {
	Keys []string
	VC   VC
}

// KeyVersion is one key's answer in a read: the value, the transaction that wrote it (txn.None
// and CT nil for the initial version ⊥) and its commit vector.
type KeyVersion struct {
	Key    string
	Value  []byte
	Writer txn.ID
	CT     VC
}

// MultigetSliceResp answers a MultigetSlice (M2): one KeyVersion per requested key in request
// order, CTM the entry-wise maximum of their CTs, and SVC exactly the snapshot vector the
// partition chose them by (spec A16b).
type MultigetSliceResp struct {
	Versions []KeyVersion
	CTM      VC
	SVC      VC
}

// MultigetSliceByTimeResp answers a MultigetSliceByTime (M4, with the ctm the thesis computes
// but does not send; spec A6). Collected is set instead when garbage collection may have removed
// the version the read needs (the ROT outlived the transaction timeout): the client restarts the
// ROT, and Versions and CTM are empty.
type MultigetSliceByTimeResp struct {
	Versions  []KeyVersion
	CTM       VC
	Collected bool
}

// Cover asks a partition of the datacenter a session moves to whether it covers the session's
// clock VC (geo extension, spec G1): whether it has committed, or applied from each other
// datacenter's stream, at least the entries of VC that name this partition.
type Cover struct {
	VC VC
}

// CoverResp answers a Cover at once; the client asks again later while Covered is false.
type CoverResp struct {
	Covered bool
}

// WriteReq is one participant's part of a WOT (M5; the thesis's transactional_batch_mutate and
// batch_mutate are this one message, spec A1): the writes that live on the partition, the
// client's clock, the coordinator partition, the number of participant partitions and the
// transaction id. A retry after a client timeout repeats the same message (spec A17).
type WriteReq struct {
	Tx          txn.ID
	Writes      []txn.Write
	VC          VC
	Coordinator int // partition index in the client's datacenter
	Size        int
}

// WriteResp is a participant's answer to a WriteReq (M8), sent once the transaction is applied
// there (or known aborted). The coordinator's carries the commit vector CT; the others' carry
// nil. Committed is false when the transaction aborted (its coordinator timed out, spec A8).
type WriteResp struct {
	Tx        txn.ID
	Committed bool
	CT        VC
}

// Peer messages (spec §2.4 M6, M7, M9–M11).

// Prepared is a participant's vote to the coordinator (M6): the sequence number SN it gave Tx.
type Prepared struct {
	Tx txn.ID
	SN int64
}

// Commit carries the coordinator's decision and the final commit vector to a participant (M7),
// and answers a CheckCommit or a late Prepared for a committed transaction.
type Commit struct {
	Tx txn.ID
	CT VC
}

// Abort tells a participant that Tx aborted (M10), and answers a CheckCommit or a Prepared for a
// transaction the coordinator aborted or never saw (presumed abort, spec A8).
type Abort struct {
	Tx txn.ID
}

// CheckCommit asks the coordinator for Tx's outcome when a participant has waited
// check_timeout since it prepared (M11). It repeats the participant's vote SN, so that it also
// repairs a lost Prepared.
type CheckCommit struct {
	Tx txn.ID
	SN int64
}

// Gossip directions: all-to-all, or up and down the aggregation tree.
const (
	GossipAll uint8 = iota
	GossipUp
	GossipDown
)

// Gossip carries snapshot-vector entries between partitions of one datacenter (M9): Values are
// the entries of slots Base, Base+1, …, or, when Slots is set (Base 0), of those slots. All-to-all
// gossip sends the sender's own entry svc_i[i] (spec §2.7); the tree mode sends the entries that
// grew since its previous message up or down the tree, and every so often the whole vector.
// Every entry is a confirmed prefix somewhere (I4), so merging any of them is safe.
type Gossip struct {
	Dir    uint8
	Base   int
	Values []int64
	Slots  []int
}

// Replicate streams partition k's committed WOTs from its datacenter to partition k of another
// datacenter, in sequence-number order (the geo extension, spec G1; not in the thesis). Prev is
// the origin's last committed sequence number before Entries[0] (before Upto when Entries is
// empty): the receiver needs everything up to Prev first. Upto is the origin's svc[own] when
// sent: every sequence number up to it is committed (and in this or an earlier message) or a
// hole. Messages are resent until acknowledged.
type Replicate struct {
	Prev    int64
	Entries []ReplicatedTx
	Upto    int64
}

// ReplicatedTx is one committed WOT's part at the origin partition.
type ReplicatedTx struct {
	SN     int64
	Tx     txn.ID
	Writes []txn.Write
	CT     VC
}

// ReplicateAck tells the origin how far the receiver has applied its stream: its svc entry for
// the origin partition.
type ReplicateAck struct {
	Upto int64
}

// SizeBytes estimates the encoded size.
func (m *MultigetSlice) SizeBytes() int { return 4 + keysSize(m.Keys) + vcSize(m.VC) }

// SizeBytes estimates the encoded size.
func (m *MultigetSliceByTime) SizeBytes() int { return 4 + keysSize(m.Keys) + vcSize(m.VC) }

// SizeBytes estimates the encoded size.
func (m *MultigetSliceResp) SizeBytes() int {
	return 4 + versionsSize(m.Versions) + vcSize(m.CTM) + vcSize(m.SVC)
}

// SizeBytes estimates the encoded size.
func (m *MultigetSliceByTimeResp) SizeBytes() int {
	return 5 + versionsSize(m.Versions) + vcSize(m.CTM)
}

// SizeBytes estimates the encoded size.
func (m *Cover) SizeBytes() int { return vcSize(m.VC) }

func (m *CoverResp) SizeBytes() int { return 1 }

func (m *WriteReq) SizeBytes() int {
	size := 16 + vcSize(m.VC)
	for _, w := range m.Writes {
		size += 4 + len(w.Key) + len(w.Value)
	}
	return size
}

// SizeBytes estimates the encoded size.
func (m *WriteResp) SizeBytes() int { return 10 + vcSize(m.CT) }

// SizeBytes estimates the encoded size.
func (m *Prepared) SizeBytes() int { return 17 }

// SizeBytes estimates the encoded size.
func (m *Commit) SizeBytes() int { return 9 + vcSize(m.CT) }

// SizeBytes estimates the encoded size.
func (m *Abort) SizeBytes() int { return 9 }

// SizeBytes estimates the encoded size.
func (m *CheckCommit) SizeBytes() int { return 17 }

// SizeBytes estimates the encoded size.
func (m *Gossip) SizeBytes() int { return 8 + 8*len(m.Values) + 3*len(m.Slots) }

// SizeBytes estimates the encoded size.
func (m *Replicate) SizeBytes() int {
	size := 20
	for _, e := range m.Entries {
		size += 20 + vcSize(e.CT)
		for _, w := range e.Writes {
			size += 4 + len(w.Key) + len(w.Value)
		}
	}
	return size
}

// SizeBytes estimates the encoded size.
func (m *ReplicateAck) SizeBytes() int { return 9 }

func vcSize(v VC) int { return 2 + 8*len(v) }

func keysSize(keys []string) int {
	size := 2
	for _, k := range keys {
		size += 2 + len(k)
	}
	return size
}

func versionsSize(vs []KeyVersion) int {
	size := 2
	for _, v := range vs {
		size += 12 + len(v.Key) + len(v.Value) + vcSize(v.CT)
	}
	return size
}
