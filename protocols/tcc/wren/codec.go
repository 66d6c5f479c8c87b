package wren

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes Wren's peer messages and its client requests and answers for the network
// runtime: one tag byte, then (ids as uvarints, times as zigzag varints)
//
//	SnapshotReq   tx, lst
//	SnapshotResp  tx, st
//	ReadReq       tx, st, keys
//	ReadResp      tx, too old, lst, items (key, value, writer); no items when too old
//	CommitReq     tx, lst, hwt, writes (key, value)
//	CommitResp    tx, committed, ct
//	Prepare       tx, clock, writes
//	Vote          tx, pt
//	Decision      tx, committed, ct
//	DecisionAck   tx
//	Gossip        local
//	StableTime    lst
//
// Decode checks every count against the wire limits before allocating, so a decoded message is
// always one Append could have produced.
var Codec protocol.Codec = wire.Codec{Protocol: "wren", Write: write, Read: read}

const (
	tagSnapshotReq byte = iota + 1
	tagSnapshotResp
	tagReadReq
	tagReadResp
	tagCommitReq
	tagCommitResp
	tagPrepare
	tagVote
	tagDecision
	tagDecisionAck
	tagGossip
	tagStableTime
)

// write writes m's tag and fields to w, or reports that m is not Wren's.
func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *SnapshotReq:
		w.Byte(tagSnapshotReq)
		w.ID(m.Tx)
		w.Varint(m.Lst)
	case *SnapshotResp:
		w.Byte(tagSnapshotResp)
		w.ID(m.Tx)
		w.Varint(m.St)
	case *ReadReq:
		w.Byte(tagReadReq)
		w.ID(m.Tx)
		w.Varint(m.St)
		w.Keys(m.Keys)
	case *ReadResp:
		if m.TooOld && len(m.Items) > 0 {
			w.Fail("read response", "a too-old answer carries %d items", len(m.Items))
		}
		w.Byte(tagReadResp)
		w.ID(m.Tx)
		w.Bool(m.TooOld)
		w.Varint(m.Lst)
		w.Count("item count", len(m.Items), wire.MaxTxnOps)
		for _, it := range m.Items {
			w.String("item key", it.Key, wire.MaxKeyLen)
			w.Bytes("item value", it.Value, wire.MaxValueLen)
			w.ID(it.Writer)
		}
	case *CommitReq:
		w.Byte(tagCommitReq)
		w.ID(m.Tx)
		w.Varint(m.Lst)
		w.Varint(m.Hwt)
		w.Writes(m.Writes)
	case *CommitResp:
		w.Byte(tagCommitResp)
		w.ID(m.Tx)
		w.Bool(m.Committed)
		w.Varint(m.Ct)
	case *Prepare:
		w.Byte(tagPrepare)
		w.ID(m.Tx)
		w.Varint(m.Clock)
		w.Writes(m.Writes)
	case *Vote:
		w.Byte(tagVote)
		w.ID(m.Tx)
		w.Varint(m.Pt)
	case *Decision:
		w.Byte(tagDecision)
		w.ID(m.Tx)
		w.Bool(m.Committed)
		w.Varint(m.Ct)
	case *DecisionAck:
		w.Byte(tagDecisionAck)
		w.ID(m.Tx)
	case *Gossip:
		w.Byte(tagGossip)
		w.Varint(m.Local)
	case *StableTime:
		w.Byte(tagStableTime)
		w.Varint(m.Lst)
	default:
		return false
	}
	return true
}

// read reads one message's tag and fields.
func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("wren message tag"); tag {
	case tagSnapshotReq:
		return &SnapshotReq{Tx: r.ID("tx"), Lst: r.Varint("lst")}
	case tagSnapshotResp:
		return &SnapshotResp{Tx: r.ID("tx"), St: r.Varint("st")}
	case tagReadReq:
		return &ReadReq{Tx: r.ID("tx"), St: r.Varint("st"), Keys: r.Keys()}
	case tagReadResp:
		m := &ReadResp{Tx: r.ID("tx"), TooOld: r.Bool("too old"), Lst: r.Varint("lst")}
		// An item takes at least 3 bytes: an empty key, an empty value and a writer.
		if n := r.Count("item count", wire.MaxTxnOps, 3); n > 0 {
			if m.TooOld {
				r.Fail("item count", "a too-old answer carries %d items", n)
				return nil
			}
			m.Items = make([]Item, n)
			for i := range m.Items {
				m.Items[i] = Item{Key: r.String("item key", wire.MaxKeyLen), Value: r.Bytes("item value", wire.MaxValueLen), Writer: r.ID("item writer")}
			}
		}
		return m
	case tagCommitReq:
		return &CommitReq{Tx: r.ID("tx"), Lst: r.Varint("lst"), Hwt: r.Varint("hwt"), Writes: r.Writes()}
	case tagCommitResp:
		return &CommitResp{Tx: r.ID("tx"), Committed: r.Bool("committed"), Ct: r.Varint("ct")}
	case tagPrepare:
		return &Prepare{Tx: r.ID("tx"), Clock: r.Varint("clock"), Writes: r.Writes()}
	case tagVote:
		return &Vote{Tx: r.ID("tx"), Pt: r.Varint("pt")}
	case tagDecision:
		return &Decision{Tx: r.ID("tx"), Committed: r.Bool("committed"), Ct: r.Varint("ct")}
	case tagDecisionAck:
		return &DecisionAck{Tx: r.ID("tx")}
	case tagGossip:
		return &Gossip{Local: r.Varint("local")}
	case tagStableTime:
		return &StableTime{Lst: r.Varint("lst")}
	default:
		r.Fail("wren message tag", "unknown tag %d", tag)
		return nil
	}
}
