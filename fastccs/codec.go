package fastccs

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
	"github.com/meridian-kv/meridian/wire"
)

// MaxVCLen bounds a vector's length on the wire (datacenters × partitions).
const MaxVCLen = 1 << 16

// Codec encodes every FastCCS message, the client library's operations and answers as well as
// the peer messages: one tag byte, then the fields in declaration order. Integers are unsigned
// varints (a vector is its length, then its entries, each at most MaxInt64); strings and values
// carry a length prefix; a list carries its count. Decode checks every count against the wire
// limits (and the bytes left) before allocating and never panics.
var Codec protocol.Codec = codec{}

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
)

type codec struct{}

// encoder appends fields and remembers the first field that cannot be encoded.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) fail(what string, n, limit int) {
	if e.err == nil {
		e.err = fmt.Errorf("fastccs: cannot encode %s: %d is out of range [0, %d]", what, n, limit)
	}
}

func (e *encoder) uint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }

func (e *encoder) int(what string, x, limit int) {
	if x < 0 || x > limit {
		e.fail(what, x, limit)
	}
	e.uint(uint64(x))
}

func (e *encoder) id(t txn.ID) { e.uint(uint64(t)) }

// seq appends a sequence number (a vector entry), which is never negative.
func (e *encoder) seq(what string, x int64) {
	if x < 0 {
		e.fail(what, int(x), math.MaxInt64)
	}
	e.uint(uint64(x))
}

func (e *encoder) int64s(what string, v []int64) {
	e.int(what+" length", len(v), MaxVCLen)
	for _, x := range v {
		e.seq(what, x)
	}
}

func (e *encoder) str(what, s string, limit int) {
	if len(s) > limit {
		e.fail(what, len(s), limit)
	}
	e.b = wire.AppendString(e.b, s)
}

func (e *encoder) bytes(what string, v []byte) {
	if len(v) > wire.MaxValueLen {
		e.fail(what, len(v), wire.MaxValueLen)
	}
	e.b = wire.AppendBytes(e.b, v)
}

func (e *encoder) keys(keys []string) {
	e.int("key count", len(keys), wire.MaxSnapshotKeys)
	for _, k := range keys {
		e.str("key", k, wire.MaxKeyLen)
	}
}

func (e *encoder) writes(ws []txn.Write) {
	e.int("write count", len(ws), wire.MaxTxnOps)
	for _, w := range ws {
		e.str("key", w.Key, wire.MaxKeyLen)
		e.bytes("value", w.Value)
	}
}

func (e *encoder) versions(vs []KeyVersion) {
	e.int("version count", len(vs), wire.MaxSnapshotKeys)
	for _, v := range vs {
		e.str("key", v.Key, wire.MaxKeyLen)
		e.bytes("value", v.Value)
		e.id(v.Writer)
		e.int64s("ct", v.CT)
	}
}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	e := &encoder{b: dst}
	switch m := m.(type) {
	case *MultigetSlice:
		if m != nil {
			e.b = append(e.b, tagMultigetSlice)
			e.keys(m.Keys)
			e.int64s("vc", m.VC)
			return e.result(dst)
		}
	case *MultigetSliceByTime:
		if m != nil {
			e.b = append(e.b, tagMultigetSliceByTime)
			e.keys(m.Keys)
			e.int64s("vc", m.VC)
			return e.result(dst)
		}
	case *MultigetSliceResp:
		if m != nil {
			e.b = append(e.b, tagMultigetSliceResp)
			e.versions(m.Versions)
			e.int64s("ctm", m.CTM)
			e.int64s("svc", m.SVC)
			return e.result(dst)
		}
	case *MultigetSliceByTimeResp:
		if m != nil {
			e.b = append(e.b, tagMultigetSliceByTimeResp)
			e.versions(m.Versions)
			e.int64s("ctm", m.CTM)
			e.b = wire.AppendBool(e.b, m.Collected)
			return e.result(dst)
		}
	case *WriteReq:
		if m != nil {
			e.b = append(e.b, tagWriteReq)
			e.id(m.Tx)
			e.writes(m.Writes)
			e.int64s("vc", m.VC)
			e.int("coordinator", m.Coordinator, MaxVCLen)
			e.int("size", m.Size, MaxVCLen)
			return e.result(dst)
		}
	case *WriteResp:
		if m != nil {
			e.b = append(e.b, tagWriteResp)
			e.id(m.Tx)
			e.b = wire.AppendBool(e.b, m.Committed)
			e.int64s("ct", m.CT)
			return e.result(dst)
		}
	case *Prepared:
		if m != nil {
			e.b = append(e.b, tagPrepared)
			e.id(m.Tx)
			e.seq("sn", m.SN)
			return e.result(dst)
		}
	case *Commit:
		if m != nil {
			e.b = append(e.b, tagCommit)
			e.id(m.Tx)
			e.int64s("ct", m.CT)
			return e.result(dst)
		}
	case *Abort:
		if m != nil {
			e.b = append(e.b, tagAbort)
			e.id(m.Tx)
			return e.result(dst)
		}
	case *CheckCommit:
		if m != nil {
			e.b = append(e.b, tagCheckCommit)
			e.id(m.Tx)
			e.seq("sn", m.SN)
			return e.result(dst)
		}
	case *Replicate:
		if m != nil {
			e.b = append(e.b, tagReplicate)
			e.seq("prev", m.Prev)
			e.int("entry count", len(m.Entries), wire.MaxTxnOps)
			for _, x := range m.Entries {
				e.seq("sn", x.SN)
				e.id(x.Tx)
				e.writes(x.Writes)
				e.int64s("ct", x.CT)
			}
			e.seq("upto", m.Upto)
			return e.result(dst)
		}
	case *ReplicateAck:
		if m != nil {
			e.b = append(e.b, tagReplicateAck)
			e.seq("upto", m.Upto)
			return e.result(dst)
		}
	case *Gossip:
		if m != nil {
			e.b = append(e.b, tagGossip)
			e.int("gossip direction", int(m.Dir), int(GossipDown))
			e.int("base", m.Base, MaxVCLen)
			e.int64s("values", m.Values)
			e.int("slot count", len(m.Slots), MaxVCLen)
			for _, k := range m.Slots {
				e.int("slot", k, MaxVCLen)
			}
			return e.result(dst)
		}
	}
	return dst, fmt.Errorf("fastccs: cannot encode %T", m)
}

func (e *encoder) result(dst []byte) ([]byte, error) {
	if e.err != nil {
		return dst, e.err
	}
	return e.b, nil
}

// decoder reads fields and remembers the first error; after one, every read returns zero.
type decoder struct {
	d   *wire.Decoder
	err error
}

func (d *decoder) uint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, err := d.d.Uvarint(what)
	d.err = err
	return v
}

func (d *decoder) int(what string, limit int) int {
	if d.err != nil {
		return 0
	}
	v, err := d.d.Int(what, limit)
	d.err = err
	return v
}

// count reads a list length whose elements take at least minBytes each.
func (d *decoder) count(what string, limit, minBytes int) int {
	if d.err != nil {
		return 0
	}
	n, err := d.d.Count(what, limit, minBytes)
	d.err = err
	return n
}

func (d *decoder) id(what string) txn.ID { return txn.ID(d.uint(what)) }

func (d *decoder) int64s(what string) []int64 {
	n := d.count(what+" length", MaxVCLen, 1)
	if n == 0 {
		return nil
	}
	v := make([]int64, n)
	for i := range v {
		v[i] = d.seq(what)
	}
	return v
}

func (d *decoder) seq(what string) int64 {
	x := d.uint(what)
	if x > math.MaxInt64 && d.err == nil {
		d.err = d.d.Errorf(what, "%d exceeds the largest sequence number", x)
	}
	return int64(x)
}

func (d *decoder) str(what string, limit int) string {
	if d.err != nil {
		return ""
	}
	s, err := d.d.String(what, limit)
	d.err = err
	return s
}

func (d *decoder) bytes(what string) []byte {
	if d.err != nil {
		return nil
	}
	b, err := d.d.Bytes(what, wire.MaxValueLen)
	d.err = err
	return b
}

func (d *decoder) bool(what string) bool {
	if d.err != nil {
		return false
	}
	v, err := d.d.Bool(what)
	d.err = err
	return v
}

func (d *decoder) keys() []string {
	n := d.count("key count", wire.MaxSnapshotKeys, 1)
	if n == 0 {
		return nil
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = d.str("key", wire.MaxKeyLen)
	}
	return keys
}

func (d *decoder) writes() []txn.Write {
	n := d.count("write count", wire.MaxTxnOps, 2)
	if n == 0 {
		return nil
	}
	ws := make([]txn.Write, n)
	for i := range ws {
		ws[i] = txn.Write{Key: d.str("key", wire.MaxKeyLen), Value: d.bytes("value")}
	}
	return ws
}

func (d *decoder) versions() []KeyVersion {
	n := d.count("version count", wire.MaxSnapshotKeys, 4)
	if n == 0 {
		return nil
	}
	vs := make([]KeyVersion, n)
	for i := range vs {
		vs[i] = KeyVersion{Key: d.str("key", wire.MaxKeyLen), Value: d.bytes("value"), Writer: d.id("writer"), CT: d.int64s("ct")}
	}
	return vs
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	d := &decoder{d: wire.NewDecoder(b)}
	tag, err := d.d.Byte("fastccs message tag")
	if err != nil {
		return nil, fmt.Errorf("fastccs: %w", err)
	}
	var m protocol.Message
	switch tag {
	case tagMultigetSlice:
		m = &MultigetSlice{Keys: d.keys(), VC: d.int64s("vc")}
	case tagMultigetSliceByTime:
		m = &MultigetSliceByTime{Keys: d.keys(), VC: d.int64s("vc")}
	case tagMultigetSliceResp:
		m = &MultigetSliceResp{Versions: d.versions(), CTM: d.int64s("ctm"), SVC: d.int64s("svc")}
	case tagMultigetSliceByTimeResp:
		m = &MultigetSliceByTimeResp{Versions: d.versions(), CTM: d.int64s("ctm"), Collected: d.bool("collected")}
	case tagWriteReq:
		x := &WriteReq{Tx: d.id("txn id"), Writes: d.writes()}
		x.VC, x.Coordinator, x.Size = d.int64s("vc"), d.int("coordinator", MaxVCLen), d.int("size", MaxVCLen)
		m = x
	case tagWriteResp:
		m = &WriteResp{Tx: d.id("txn id"), Committed: d.bool("committed"), CT: d.int64s("ct")}
	case tagPrepared:
		m = &Prepared{Tx: d.id("txn id"), SN: d.seq("sn")}
	case tagCommit:
		m = &Commit{Tx: d.id("txn id"), CT: d.int64s("ct")}
	case tagAbort:
		m = &Abort{Tx: d.id("txn id")}
	case tagCheckCommit:
		m = &CheckCommit{Tx: d.id("txn id"), SN: d.seq("sn")}
	case tagReplicate:
		x := &Replicate{Prev: d.seq("prev")}
		if n := d.count("entry count", wire.MaxTxnOps, 4); n > 0 {
			x.Entries = make([]ReplicatedTx, n)
			for i := range x.Entries {
				x.Entries[i] = ReplicatedTx{SN: d.seq("sn"), Tx: d.id("txn id"), Writes: d.writes(), CT: d.int64s("ct")}
			}
		}
		x.Upto = d.seq("upto")
		m = x
	case tagReplicateAck:
		m = &ReplicateAck{Upto: d.seq("upto")}
	case tagGossip:
		x := &Gossip{Dir: uint8(d.int("gossip direction", int(GossipDown)))}
		x.Base, x.Values = d.int("base", MaxVCLen), d.int64s("values")
		if n := d.count("slot count", MaxVCLen, 1); n > 0 {
			x.Slots = make([]int, n)
			for i := range x.Slots {
				x.Slots[i] = d.int("slot", MaxVCLen)
			}
		}
		m = x
	default:
		return nil, fmt.Errorf("fastccs: %w", d.d.Errorf("fastccs message tag", "unknown tag %d", tag))
	}
	if d.err == nil {
		d.err = d.d.Done()
	}
	if d.err != nil {
		return nil, fmt.Errorf("fastccs: %w", d.err)
	}
	return m, nil
}
