package fastccs

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// MaxVCLen bounds a vector's length on the wire (datacenters × partitions).
const MaxVCLen = 1 << 16

// Codec encodes every FastCCS message, the client library's operations and answers as well as
// the peer messages: one tag byte, then the fields in declaration order. Integers are unsigned
// varints (a vector is its length, then its entries, each at most MaxInt64); strings and values
// carry a length prefix; a list carries its count. Decode checks every count against the wire
// limits (and the bytes left) before allocating and never panics.
var Codec protocol.Codec = wire.Codec{Protocol: "fastccs", Write: write, Read: read}

const (
	tagMultigetSlice byte = iota + 1
	tagMultigetSliceResp
	tagMultigetSliceByTime
	tagMultigetSliceByTimeResp
	tagWriteReq
	tagWriteResp
	tagPrepared
	tagCommit
	tagAbort
	tagCheckCommit
	tagGossip
	tagReplicate
	tagReplicateAck
	tagCover
	tagCoverResp
)

// write writes m's tag and fields to w, or reports that m is not FastCCS's.
func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *MultigetSlice:
		w.Byte(tagMultigetSlice)
		w.Keys(m.Keys)
		writeVector(w, "vc", m.VC)
	case *MultigetSliceByTime:
		w.Byte(tagMultigetSliceByTime)
		w.Keys(m.Keys)
		writeVector(w, "vc", m.VC)
	case *MultigetSliceResp:
		w.Byte(tagMultigetSliceResp)
		writeVersions(w, m.Versions)
		writeVector(w, "ctm", m.CTM)
		writeVector(w, "svc", m.SVC)
	case *MultigetSliceByTimeResp:
		w.Byte(tagMultigetSliceByTimeResp)
		writeVersions(w, m.Versions)
		writeVector(w, "ctm", m.CTM)
		w.Bool(m.Collected)
	case *WriteReq:
		w.Byte(tagWriteReq)
		w.ID(m.Tx)
		w.Writes(m.Writes)
		writeVector(w, "vc", m.VC)
		w.Int("coordinator", m.Coordinator, MaxVCLen)
		w.Int("size", m.Size, MaxVCLen)
	case *WriteResp:
		w.Byte(tagWriteResp)
		w.ID(m.Tx)
		w.Bool(m.Committed)
		writeVector(w, "ct", m.CT)
	case *Prepared:
		w.Byte(tagPrepared)
		w.ID(m.Tx)
		w.Int63("sn", m.SN)
	case *Commit:
		w.Byte(tagCommit)
		w.ID(m.Tx)
		writeVector(w, "ct", m.CT)
	case *Abort:
		w.Byte(tagAbort)
		w.ID(m.Tx)
	case *CheckCommit:
		w.Byte(tagCheckCommit)
		w.ID(m.Tx)
		w.Int63("sn", m.SN)
	case *Replicate:
		w.Byte(tagReplicate)
		w.Int63("prev", m.Prev)
		w.Count("entry count", len(m.Entries), wire.MaxTxnOps)
		for _, x := range m.Entries {
			w.Int63("sn", x.SN)
			w.ID(x.Tx)
			w.Writes(x.Writes)
			writeVector(w, "ct", x.CT)
		}
		w.Int63("upto", m.Upto)
	case *Cover:
		w.Byte(tagCover)
		writeVector(w, "vc", m.VC)
	case *CoverResp:
		w.Byte(tagCoverResp)
		w.Bool(m.Covered)
	case *ReplicateAck:
		w.Byte(tagReplicateAck)
		w.Int63("upto", m.Upto)
	case *Gossip:
		w.Byte(tagGossip)
		w.Int("gossip direction", int(m.Dir), int(GossipDown))
		w.Int("base", m.Base, MaxVCLen)
		writeVector(w, "values", m.Values)
		w.Count("slot count", len(m.Slots), MaxVCLen)
		for _, k := range m.Slots {
			w.Int("slot", k, MaxVCLen)
		}
	default:
		return false
	}
	return true
}

// writeVector writes a vector: its length, then its entries, each a sequence number in
// [0, MaxInt64].
func writeVector(w *wire.Writer, what string, v []int64) {
	w.Count(what+" length", len(v), MaxVCLen)
	for _, x := range v {
		w.Int63(what, x)
	}
}

func writeVersions(w *wire.Writer, vs []KeyVersion) {
	w.Count("version count", len(vs), wire.MaxSnapshotKeys)
	for _, v := range vs {
		w.String("key", v.Key, wire.MaxKeyLen)
		w.Bytes("value", v.Value, wire.MaxValueLen)
		w.ID(v.Writer)
		writeVector(w, "ct", v.CT)
	}
}

// read reads one message's tag and fields.
func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("fastccs message tag"); tag {
	case tagMultigetSlice:
		return &MultigetSlice{Keys: r.Keys(), VC: readVector(r, "vc")}
	case tagMultigetSliceByTime:
		return &MultigetSliceByTime{Keys: r.Keys(), VC: readVector(r, "vc")}
	case tagMultigetSliceResp:
		return &MultigetSliceResp{Versions: readVersions(r), CTM: readVector(r, "ctm"), SVC: readVector(r, "svc")}
	case tagMultigetSliceByTimeResp:
		return &MultigetSliceByTimeResp{Versions: readVersions(r), CTM: readVector(r, "ctm"), Collected: r.Bool("collected")}
	case tagWriteReq:
		return &WriteReq{Tx: r.ID("txn id"), Writes: r.Writes(), VC: readVector(r, "vc"),
			Coordinator: r.Int("coordinator", MaxVCLen), Size: r.Int("size", MaxVCLen)}
	case tagWriteResp:
		return &WriteResp{Tx: r.ID("txn id"), Committed: r.Bool("committed"), CT: readVector(r, "ct")}
	case tagPrepared:
		return &Prepared{Tx: r.ID("txn id"), SN: r.Int63("sn")}
	case tagCommit:
		return &Commit{Tx: r.ID("txn id"), CT: readVector(r, "ct")}
	case tagAbort:
		return &Abort{Tx: r.ID("txn id")}
	case tagCheckCommit:
		return &CheckCommit{Tx: r.ID("txn id"), SN: r.Int63("sn")}
	case tagReplicate:
		m := &Replicate{Prev: r.Int63("prev")}
		if n := r.Count("entry count", wire.MaxTxnOps, 4); n > 0 {
			m.Entries = make([]ReplicatedTx, n)
			for i := range m.Entries {
				m.Entries[i] = ReplicatedTx{SN: r.Int63("sn"), Tx: r.ID("txn id"), Writes: r.Writes(), CT: readVector(r, "ct")}
			}
		}
		m.Upto = r.Int63("upto")
		return m
	case tagReplicateAck:
		return &ReplicateAck{Upto: r.Int63("upto")}
	case tagCover:
		return &Cover{VC: readVector(r, "vc")}
	case tagCoverResp:
		return &CoverResp{Covered: r.Bool("covered")}
	case tagGossip:
		m := &Gossip{Dir: uint8(r.Int("gossip direction", int(GossipDown))), Base: r.Int("base", MaxVCLen), Values: readVector(r, "values")}
		if n := r.Count("slot count", MaxVCLen, 1); n > 0 {
			m.Slots = make([]int, n)
			for i := range m.Slots {
				m.Slots[i] = r.Int("slot", MaxVCLen)
			}
		}
		return m
	default:
		r.Fail("fastccs message tag", "unknown tag %d", tag)
		return nil
	}
}

// readVector reads a vector written by writeVector; an empty one is nil.
func readVector(r *wire.Reader, what string) []int64 {
	n := r.Count(what+" length", MaxVCLen, 1)
	if n == 0 {
		return nil
	}
	v := make([]int64, n)
	for i := range v {
		v[i] = r.Int63(what)
	}
	return v
}

func readVersions(r *wire.Reader) []KeyVersion {
	// A version takes at least 4 bytes: an empty key, an empty value, a writer and an empty vector.
	n := r.Count("version count", wire.MaxSnapshotKeys, 4)
	if n == 0 {
		return nil
	}
	vs := make([]KeyVersion, n)
	for i := range vs {
		vs[i] = KeyVersion{Key: r.String("key", wire.MaxKeyLen), Value: r.Bytes("value", wire.MaxValueLen), Writer: r.ID("writer"), CT: readVector(r, "ct")}
	}
	return vs
}
