package wren

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
	"github.com/meridian-kv/meridian/wire"
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
var Codec protocol.Codec = codec{}

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

type codec struct{}

func appendID(dst []byte, id txn.ID) []byte { return binary.AppendUvarint(dst, uint64(id)) }

func appendKeys(dst []byte, keys []string) ([]byte, bool) {
	if len(keys) > wire.MaxTxnOps {
		return dst, false
	}
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		if len(k) > wire.MaxKeyLen {
			return dst, false
		}
		dst = wire.AppendString(dst, k)
	}
	return dst, true
}

func appendWrites(dst []byte, ws []txn.Write) ([]byte, bool) {
	if len(ws) > wire.MaxTxnOps {
		return dst, false
	}
	dst = binary.AppendUvarint(dst, uint64(len(ws)))
	for _, w := range ws {
		if len(w.Key) > wire.MaxKeyLen || len(w.Value) > wire.MaxValueLen {
			return dst, false
		}
		dst = wire.AppendBytes(wire.AppendString(dst, w.Key), w.Value)
	}
	return dst, true
}

func appendItems(dst []byte, items []Item) ([]byte, bool) {
	if len(items) > wire.MaxTxnOps {
		return dst, false
	}
	dst = binary.AppendUvarint(dst, uint64(len(items)))
	for _, it := range items {
		if len(it.Key) > wire.MaxKeyLen || len(it.Value) > wire.MaxValueLen {
			return dst, false
		}
		dst = appendID(wire.AppendBytes(wire.AppendString(dst, it.Key), it.Value), it.Writer)
	}
	return dst, true
}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	start := dst
	ok := true
	switch m := m.(type) {
	case *SnapshotReq:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(appendID(append(dst, tagSnapshotReq), m.Tx), m.Lst)
		}
	case *SnapshotResp:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(appendID(append(dst, tagSnapshotResp), m.Tx), m.St)
		}
	case *ReadReq:
		if ok = m != nil; ok {
			dst, ok = appendKeys(binary.AppendVarint(appendID(append(dst, tagReadReq), m.Tx), m.St), m.Keys)
		}
	case *ReadResp:
		if ok = m != nil && !(m.TooOld && len(m.Items) > 0); ok {
			dst = binary.AppendVarint(wire.AppendBool(appendID(append(dst, tagReadResp), m.Tx), m.TooOld), m.Lst)
			dst, ok = appendItems(dst, m.Items)
		}
	case *CommitReq:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(binary.AppendVarint(appendID(append(dst, tagCommitReq), m.Tx), m.Lst), m.Hwt)
			dst, ok = appendWrites(dst, m.Writes)
		}
	case *CommitResp:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(wire.AppendBool(appendID(append(dst, tagCommitResp), m.Tx), m.Committed), m.Ct)
		}
	case *Prepare:
		if ok = m != nil; ok {
			dst, ok = appendWrites(binary.AppendVarint(appendID(append(dst, tagPrepare), m.Tx), m.Clock), m.Writes)
		}
	case *Vote:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(appendID(append(dst, tagVote), m.Tx), m.Pt)
		}
	case *Decision:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(wire.AppendBool(appendID(append(dst, tagDecision), m.Tx), m.Committed), m.Ct)
		}
	case *DecisionAck:
		if ok = m != nil; ok {
			dst = appendID(append(dst, tagDecisionAck), m.Tx)
		}
	case *Gossip:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(append(dst, tagGossip), m.Local)
		}
	case *StableTime:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(append(dst, tagStableTime), m.Lst)
		}
	default:
		ok = false
	}
	if !ok {
		return start, fmt.Errorf("wren: cannot encode %T (nil, unknown or over the wire limits)", m)
	}
	return dst, nil
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	m, err := decode(wire.NewDecoder(b))
	if err != nil {
		return nil, fmt.Errorf("wren: %w", err)
	}
	return m, nil
}

// reader accumulates the first decoding error, so that a message's fields read in sequence.
type reader struct {
	d   *wire.Decoder
	err error
}

func (r *reader) id(what string) txn.ID {
	if r.err != nil {
		return 0
	}
	v, err := r.d.Uvarint(what)
	r.err = err
	return txn.ID(v)
}

func (r *reader) time(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, err := r.d.Varint(what)
	r.err = err
	return v
}

func (r *reader) bool(what string) bool {
	if r.err != nil {
		return false
	}
	v, err := r.d.Bool(what)
	r.err = err
	return v
}

func (r *reader) str(what string) string {
	if r.err != nil {
		return ""
	}
	v, err := r.d.String(what, wire.MaxKeyLen)
	r.err = err
	return v
}

func (r *reader) bytes(what string) []byte {
	if r.err != nil {
		return nil
	}
	v, err := r.d.Bytes(what, wire.MaxValueLen)
	r.err = err
	return v
}

// count reads a list length; every element takes at least minBytes.
func (r *reader) count(what string, minBytes int) int {
	if r.err != nil {
		return 0
	}
	n, err := r.d.Count(what, wire.MaxTxnOps, minBytes)
	r.err = err
	return n
}

func (r *reader) keys() []string {
	n := r.count("keys", 1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str("key")
	}
	return out
}

func (r *reader) writes() []txn.Write {
	n := r.count("writes", 2)
	if n == 0 {
		return nil
	}
	out := make([]txn.Write, n)
	for i := range out {
		out[i].Key, out[i].Value = r.str("write key"), r.bytes("write value")
	}
	return out
}

func (r *reader) items() []Item {
	n := r.count("items", 3)
	if n == 0 {
		return nil
	}
	out := make([]Item, n)
	for i := range out {
		out[i].Key, out[i].Value, out[i].Writer = r.str("item key"), r.bytes("item value"), r.id("item writer")
	}
	return out
}

func decode(d *wire.Decoder) (protocol.Message, error) {
	tag, err := d.Byte("wren message tag")
	if err != nil {
		return nil, err
	}
	r := &reader{d: d}
	var m protocol.Message
	switch tag {
	case tagSnapshotReq:
		m = &SnapshotReq{Tx: r.id("tx"), Lst: r.time("lst")}
	case tagSnapshotResp:
		m = &SnapshotResp{Tx: r.id("tx"), St: r.time("st")}
	case tagReadReq:
		m = &ReadReq{Tx: r.id("tx"), St: r.time("st"), Keys: r.keys()}
	case tagReadResp:
		x := &ReadResp{Tx: r.id("tx"), TooOld: r.bool("too old"), Lst: r.time("lst"), Items: r.items()}
		if r.err == nil && x.TooOld && len(x.Items) > 0 {
			return nil, d.Errorf("items", "a too-old answer carries %d items", len(x.Items))
		}
		m = x
	case tagCommitReq:
		m = &CommitReq{Tx: r.id("tx"), Lst: r.time("lst"), Hwt: r.time("hwt"), Writes: r.writes()}
	case tagCommitResp:
		m = &CommitResp{Tx: r.id("tx"), Committed: r.bool("committed"), Ct: r.time("ct")}
	case tagPrepare:
		m = &Prepare{Tx: r.id("tx"), Clock: r.time("clock"), Writes: r.writes()}
	case tagVote:
		m = &Vote{Tx: r.id("tx"), Pt: r.time("pt")}
	case tagDecision:
		m = &Decision{Tx: r.id("tx"), Committed: r.bool("committed"), Ct: r.time("ct")}
	case tagDecisionAck:
		m = &DecisionAck{Tx: r.id("tx")}
	case tagGossip:
		m = &Gossip{Local: r.time("local")}
	case tagStableTime:
		m = &StableTime{Lst: r.time("lst")}
	default:
		return nil, d.Errorf("wren message tag", "unknown tag %d", tag)
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, d.Done()
}
