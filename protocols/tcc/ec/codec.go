package ec

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes EC's client requests and answers for the network runtime (EC has no peer
// messages): one tag byte, then (ids as uvarints, the timestamp as a zigzag varint)
//
//	ReadReq    tx, keys
//	ReadResp   tx, items (key, value, writer)
//	WriteReq   tx, ts, writes (key, value)
//	WriteResp  tx
//
// Decode checks every count against the wire limits before allocating.
var Codec protocol.Codec = wire.Codec{Protocol: "ec", Write: write, Read: read}

const (
	tagReadReq byte = iota + 1
	tagReadResp
	tagWriteReq
	tagWriteResp
)

// write writes m's tag and fields to w, or reports that m is not EC's.
func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *ReadReq:
		w.Byte(tagReadReq)
		w.ID(m.Tx)
		w.Keys(m.Keys)
	case *ReadResp:
		w.Byte(tagReadResp)
		w.ID(m.Tx)
		w.Count("item count", len(m.Items), wire.MaxTxnOps)
		for _, it := range m.Items {
			w.String("item key", it.Key, wire.MaxKeyLen)
			w.Bytes("item value", it.Value, wire.MaxValueLen)
			w.ID(it.Writer)
		}
	case *WriteReq:
		w.Byte(tagWriteReq)
		w.ID(m.Tx)
		w.Varint(m.Ts)
		w.Writes(m.Writes)
	case *WriteResp:
		w.Byte(tagWriteResp)
		w.ID(m.Tx)
	default:
		return false
	}
	return true
}

// read reads one message's tag and fields.
func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("ec message tag"); tag {
	case tagReadReq:
		return &ReadReq{Tx: r.ID("tx"), Keys: r.Keys()}
	case tagReadResp:
		m := &ReadResp{Tx: r.ID("tx")}
		// An item takes at least 3 bytes: an empty key, an empty value and a writer.
		if n := r.Count("item count", wire.MaxTxnOps, 3); n > 0 {
			m.Items = make([]Item, n)
			for i := range m.Items {
				m.Items[i] = Item{Key: r.String("item key", wire.MaxKeyLen), Value: r.Bytes("item value", wire.MaxValueLen), Writer: r.ID("item writer")}
			}
		}
		return m
	case tagWriteReq:
		return &WriteReq{Tx: r.ID("tx"), Ts: r.Varint("ts"), Writes: r.Writes()}
	case tagWriteResp:
		return &WriteResp{Tx: r.ID("tx")}
	default:
		r.Fail("ec message tag", "unknown tag %d", tag)
		return nil
	}
}
