package ec

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
	"github.com/meridian-kv/meridian/wire"
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
var Codec protocol.Codec = codec{}

const (
	tagReadReq byte = iota + 1
	tagReadResp
	tagWriteReq
	tagWriteResp
)

type codec struct{}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	start := dst
	ok := true
	// list appends n elements with el, refusing more than the wire limit.
	list := func(n int, el func(i int) bool) {
		if ok = ok && n <= wire.MaxTxnOps; ok {
			dst = binary.AppendUvarint(dst, uint64(n))
			for i := 0; ok && i < n; i++ {
				ok = el(i)
			}
		}
	}
	str := func(s string) bool { dst = wire.AppendString(dst, s); return len(s) <= wire.MaxKeyLen }
	val := func(v []byte) bool { dst = wire.AppendBytes(dst, v); return len(v) <= wire.MaxValueLen }
	switch m := m.(type) {
	case *ReadReq:
		if ok = m != nil; ok {
			dst = binary.AppendUvarint(append(dst, tagReadReq), uint64(m.Tx))
			list(len(m.Keys), func(i int) bool { return str(m.Keys[i]) })
		}
	case *ReadResp:
		if ok = m != nil; ok {
			dst = binary.AppendUvarint(append(dst, tagReadResp), uint64(m.Tx))
			list(len(m.Items), func(i int) bool {
				it := m.Items[i]
				ok := str(it.Key) && val(it.Value)
				dst = binary.AppendUvarint(dst, uint64(it.Writer))
				return ok
			})
		}
	case *WriteReq:
		if ok = m != nil; ok {
			dst = binary.AppendVarint(binary.AppendUvarint(append(dst, tagWriteReq), uint64(m.Tx)), m.Ts)
			list(len(m.Writes), func(i int) bool { return str(m.Writes[i].Key) && val(m.Writes[i].Value) })
		}
	case *WriteResp:
		if ok = m != nil; ok {
			dst = binary.AppendUvarint(append(dst, tagWriteResp), uint64(m.Tx))
		}
	default:
		ok = false
	}
	if !ok {
		return start, fmt.Errorf("ec: cannot encode %T (nil, unknown or over the wire limits)", m)
	}
	return dst, nil
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	m, err := decode(wire.NewDecoder(b))
	if err != nil {
		return nil, fmt.Errorf("ec: %w", err)
	}
	return m, nil
}

func decode(d *wire.Decoder) (protocol.Message, error) {
	tag, err := d.Byte("ec message tag")
	if err != nil {
		return nil, err
	}
	var id uint64
	if id, err = d.Uvarint("tx"); err != nil {
		return nil, err
	}
	tx := txn.ID(id)
	// count reads a list length whose elements take at least minBytes each.
	count := func(what string, minBytes int) int {
		var n int
		if err == nil {
			n, err = d.Count(what, wire.MaxTxnOps, minBytes)
		}
		return n
	}
	str := func(what string) (s string) {
		if err == nil {
			s, err = d.String(what, wire.MaxKeyLen)
		}
		return s
	}
	val := func(what string) (v []byte) {
		if err == nil {
			v, err = d.Bytes(what, wire.MaxValueLen)
		}
		return v
	}
	var m protocol.Message
	switch tag {
	case tagReadReq:
		x := &ReadReq{Tx: tx}
		if n := count("keys", 1); n > 0 {
			x.Keys = make([]string, n)
			for i := range x.Keys {
				x.Keys[i] = str("key")
			}
		}
		m = x
	case tagReadResp:
		x := &ReadResp{Tx: tx}
		if n := count("items", 3); n > 0 {
			x.Items = make([]Item, n)
			for i := range x.Items {
				x.Items[i].Key, x.Items[i].Value = str("item key"), val("item value")
				if err == nil {
					id, err = d.Uvarint("item writer")
					x.Items[i].Writer = txn.ID(id)
				}
			}
		}
		m = x
	case tagWriteReq:
		x := &WriteReq{Tx: tx}
		if x.Ts, err = d.Varint("ts"); err == nil {
			if n := count("writes", 2); n > 0 {
				x.Writes = make([]txn.Write, n)
				for i := range x.Writes {
					x.Writes[i].Key, x.Writes[i].Value = str("write key"), val("write value")
				}
			}
		}
		m = x
	case tagWriteResp:
		m = &WriteResp{Tx: tx}
	default:
		return nil, d.Errorf("ec message tag", "unknown tag %d", tag)
	}
	if err != nil {
		return nil, err
	}
	return m, d.Done()
}
