package eiger

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
	"github.com/meridian-kv/meridian/wire"
)

// Codec encodes Eiger's messages, the client library's requests and answers (carried in
// protocol.Request.Op and protocol.Reply.Op) as well as the partitions' peer messages: one tag
// byte, then the fields in declaration order. Times, ids and counts are uvarints (times and
// nodes must be non-negative); strings and values are length-prefixed; lists are a count, then
// the elements; booleans and statuses are one byte.
//
//	Read        keys, clock
//	ReadByTime  keys, effTime, clock
//	ReadReply   reads (key, value, writer, evt, lvt, pending), clock, commitChecks, retry
//	WriteReq    txn, writes (key, value), coordinator, participants, deps (key, version), clock
//	WriteReply  txn, status, commitTime, clock
//	Vote        txn, prepareTime
//	Commit      txn, commitTime
//	CommitAck   txn
//	Abort       txn
//	Check       txn, effTime
//	CheckReply  txn, status, commitTime, floor
//
// The encoding is canonical: fields a message's shape leaves empty (a pending key's value,
// writer and EVT; a retry's reads; the commit time of anything but a commit) must be zero, and
// Decode rejects anything Append would not produce. Decode checks every count against the wire
// limits and the bytes left before allocating, and never panics.
var Codec protocol.Codec = codec{}

const (
	tagRead byte = iota + 1
	tagReadByTime
	tagReadReply
	tagWriteReq
	tagWriteReply
	tagVote
	tagCommit
	tagCommitAck
	tagAbort
	tagCheck
	tagCheckReply
)

// Limits beyond the wire package's.
const (
	// MaxParticipants bounds a WOT's participant list.
	MaxParticipants = 1 << 16
	// MaxDeps bounds a client's dependency list on the wire.
	MaxDeps = 1 << 20
	// maxChecks bounds a ReadReply's commit-check count.
	maxChecks = 1 << 20
)

type codec struct{}

// enc appends fields, remembering the first field that cannot be encoded.
type enc struct {
	b   []byte
	err error
}

func (e *enc) fail(what string, format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf("eiger: cannot encode %s: %s", what, fmt.Sprintf(format, args...))
	}
}

func (e *enc) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) byte(v byte)   { e.b = append(e.b, v) }
func (e *enc) bool(v bool)   { e.b = wire.AppendBool(e.b, v) }
func (e *enc) id(v txn.ID)   { e.uint(uint64(v)) }
func (e *enc) node(v protocol.NodeID) {
	if v < 0 {
		e.fail("node", "negative id %d", v)
	}
	e.uint(uint64(v))
}

func (e *enc) time(what string, v int64) {
	if v < 0 {
		e.fail(what, "negative %d", v)
	}
	e.uint(uint64(v))
}

func (e *enc) count(what string, n, limit int) {
	if n > limit {
		e.fail(what, "%d exceeds the limit %d", n, limit)
	}
	e.uint(uint64(n))
}

func (e *enc) str(what string, s string, limit int) {
	if len(s) > limit {
		e.fail(what, "length %d exceeds the limit %d", len(s), limit)
	}
	e.b = wire.AppendString(e.b, s)
}

func (e *enc) bytes(what string, v []byte, limit int) {
	if len(v) > limit {
		e.fail(what, "length %d exceeds the limit %d", len(v), limit)
	}
	e.b = wire.AppendBytes(e.b, v)
}

func (e *enc) keys(keys []string) {
	e.count("keys", len(keys), wire.MaxSnapshotKeys)
	for _, k := range keys {
		e.str("key", k, wire.MaxKeyLen)
	}
}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	e := &enc{b: dst}
	switch m := m.(type) {
	case *Read:
		if m == nil {
			break
		}
		e.byte(tagRead)
		e.keys(m.Keys)
		e.time("clock", m.Clock)
		return e.done(dst)
	case *ReadByTime:
		if m == nil {
			break
		}
		e.byte(tagReadByTime)
		e.keys(m.Keys)
		e.time("effective time", m.EffTime)
		e.time("clock", m.Clock)
		return e.done(dst)
	case *ReadReply:
		if m == nil {
			break
		}
		e.byte(tagReadReply)
		if m.Retry && len(m.Reads) > 0 {
			e.fail("read reply", "a retry carries reads")
		}
		e.count("reads", len(m.Reads), wire.MaxSnapshotKeys)
		for _, r := range m.Reads {
			if r.Pending && (r.Value != nil || r.Writer != txn.None || r.EVT != 0) {
				e.fail("read", "a pending key carries a version")
			}
			e.str("key", r.Key, wire.MaxKeyLen)
			e.bytes("value", r.Value, wire.MaxValueLen)
			e.id(r.Writer)
			e.time("evt", r.EVT)
			e.time("lvt", r.LVT)
			e.bool(r.Pending)
		}
		e.time("clock", m.Clock)
		e.count("commit checks", m.CommitChecks, maxChecks)
		e.bool(m.Retry)
		return e.done(dst)
	case *WriteReq:
		if m == nil {
			break
		}
		e.byte(tagWriteReq)
		e.id(m.Txn)
		e.count("writes", len(m.Writes), wire.MaxTxnOps)
		for _, w := range m.Writes {
			e.str("write key", w.Key, wire.MaxKeyLen)
			e.bytes("write value", w.Value, wire.MaxValueLen)
		}
		e.node(m.Coordinator)
		e.count("participants", len(m.Participants), MaxParticipants)
		for _, n := range m.Participants {
			e.node(n)
		}
		e.count("deps", len(m.Deps), MaxDeps)
		for _, d := range m.Deps {
			e.str("dep key", d.Key, wire.MaxKeyLen)
			e.id(d.Version)
		}
		e.time("clock", m.Clock)
		return e.done(dst)
	case *WriteReply:
		if m == nil {
			break
		}
		if m.Status < Prepared || m.Status > Aborted || (m.Status != Committed && m.CommitTime != 0) {
			e.fail("write reply", "status %d with commit time %d", m.Status, m.CommitTime)
		}
		e.byte(tagWriteReply)
		e.id(m.Txn)
		e.byte(byte(m.Status))
		e.time("commit time", m.CommitTime)
		e.time("clock", m.Clock)
		return e.done(dst)
	case *Vote:
		if m == nil {
			break
		}
		e.byte(tagVote)
		e.id(m.Txn)
		e.time("prepare time", m.PrepareTime)
		return e.done(dst)
	case *Commit:
		if m == nil {
			break
		}
		e.byte(tagCommit)
		e.id(m.Txn)
		e.time("commit time", m.CommitTime)
		return e.done(dst)
	case *CommitAck:
		if m == nil {
			break
		}
		e.byte(tagCommitAck)
		e.id(m.Txn)
		return e.done(dst)
	case *Abort:
		if m == nil {
			break
		}
		e.byte(tagAbort)
		e.id(m.Txn)
		return e.done(dst)
	case *Check:
		if m == nil {
			break
		}
		e.byte(tagCheck)
		e.id(m.Txn)
		e.time("effective time", m.EffTime)
		return e.done(dst)
	case *CheckReply:
		if m == nil {
			break
		}
		if m.Status < CheckCommitted || m.Status > CheckUndecided ||
			(m.Status != CheckCommitted && m.CommitTime != 0) || (m.Status != CheckUndecided && m.Floor != 0) {
			e.fail("check reply", "status %d with commit time %d and floor %d", m.Status, m.CommitTime, m.Floor)
		}
		e.byte(tagCheckReply)
		e.id(m.Txn)
		e.byte(byte(m.Status))
		e.time("commit time", m.CommitTime)
		e.time("floor", m.Floor)
		return e.done(dst)
	}
	return dst, fmt.Errorf("eiger: cannot encode %T (nil or not an Eiger message)", m)
}

// done returns the encoding, or dst unchanged and the first error.
func (e *enc) done(dst []byte) ([]byte, error) {
	if e.err != nil {
		return dst, e.err
	}
	return e.b, nil
}

// dec reads fields, remembering the first error; after it every read returns a zero value.
type dec struct {
	d   *wire.Decoder
	err error
}

func (d *dec) uint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, err := d.d.Uvarint(what)
	d.err = err
	return v
}

func (d *dec) id(what string) txn.ID { return txn.ID(d.uint(what)) }

func (d *dec) limited(what string, limit uint64) uint64 {
	v := d.uint(what)
	if d.err == nil && v > limit {
		d.err = d.d.Errorf(what, "%d exceeds the limit %d", v, limit)
	}
	return v
}

func (d *dec) time(what string) int64 { return int64(d.limited(what, math.MaxInt64)) }

func (d *dec) node(what string) protocol.NodeID {
	return protocol.NodeID(d.limited(what, math.MaxInt32))
}

func (d *dec) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	v, err := d.d.Byte(what)
	d.err = err
	return v
}

func (d *dec) bool(what string) bool {
	if d.err != nil {
		return false
	}
	v, err := d.d.Bool(what)
	d.err = err
	return v
}

func (d *dec) str(what string, limit int) string {
	if d.err != nil {
		return ""
	}
	v, err := d.d.String(what, limit)
	d.err = err
	return v
}

func (d *dec) bytes(what string, limit int) []byte {
	if d.err != nil {
		return nil
	}
	v, err := d.d.Bytes(what, limit)
	d.err = err
	return v
}

// count reads a list length; every element takes at least minBytes bytes.
func (d *dec) count(what string, limit, minBytes int) int {
	if d.err != nil {
		return 0
	}
	n, err := d.d.Count(what, limit, minBytes)
	d.err = err
	return n
}

func (d *dec) keys() []string {
	n := d.count("keys", wire.MaxSnapshotKeys, 1)
	if n == 0 {
		return nil
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = d.str("key", wire.MaxKeyLen)
	}
	return keys
}

func (d *dec) check(ok bool, what, format string, args ...any) {
	if d.err == nil && !ok {
		d.err = d.d.Errorf(what, format, args...)
	}
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	d := &dec{d: wire.NewDecoder(b)}
	m := decode(d)
	if d.err == nil {
		d.err = d.d.Done()
	}
	if d.err != nil {
		return nil, fmt.Errorf("eiger: %w", d.err)
	}
	return m, nil
}

func decode(d *dec) protocol.Message {
	switch tag := d.byte("eiger message tag"); tag {
	case tagRead:
		return &Read{Keys: d.keys(), Clock: d.time("clock")}
	case tagReadByTime:
		return &ReadByTime{Keys: d.keys(), EffTime: d.time("effective time"), Clock: d.time("clock")}
	case tagReadReply:
		m := &ReadReply{}
		if n := d.count("reads", wire.MaxSnapshotKeys, 6); n > 0 {
			m.Reads = make([]KeyRead, n)
			for i := range m.Reads {
				r := &m.Reads[i]
				r.Key = d.str("key", wire.MaxKeyLen)
				r.Value = d.bytes("value", wire.MaxValueLen)
				r.Writer = d.id("writer")
				r.EVT = d.time("evt")
				r.LVT = d.time("lvt")
				r.Pending = d.bool("pending")
				d.check(!r.Pending || r.Value == nil && r.Writer == txn.None && r.EVT == 0, "read", "a pending key carries a version")
			}
		}
		m.Clock = d.time("clock")
		m.CommitChecks = int(d.limited("commit checks", maxChecks))
		m.Retry = d.bool("retry")
		d.check(!m.Retry || len(m.Reads) == 0, "read reply", "a retry carries reads")
		return m
	case tagWriteReq:
		m := &WriteReq{Txn: d.id("txn")}
		if n := d.count("writes", wire.MaxTxnOps, 2); n > 0 {
			m.Writes = make([]txn.Write, n)
			for i := range m.Writes {
				m.Writes[i] = txn.Write{Key: d.str("write key", wire.MaxKeyLen), Value: d.bytes("write value", wire.MaxValueLen)}
			}
		}
		m.Coordinator = d.node("coordinator")
		if n := d.count("participants", MaxParticipants, 1); n > 0 {
			m.Participants = make([]protocol.NodeID, n)
			for i := range m.Participants {
				m.Participants[i] = d.node("participant")
			}
		}
		if n := d.count("deps", MaxDeps, 2); n > 0 {
			m.Deps = make([]Dep, n)
			for i := range m.Deps {
				m.Deps[i] = Dep{Key: d.str("dep key", wire.MaxKeyLen), Version: d.id("dep version")}
			}
		}
		m.Clock = d.time("clock")
		return m
	case tagWriteReply:
		m := &WriteReply{Txn: d.id("txn"), Status: WriteStatus(d.byte("status")), CommitTime: d.time("commit time"), Clock: d.time("clock")}
		d.check(m.Status >= Prepared && m.Status <= Aborted, "status", "unknown write status %d", m.Status)
		d.check(m.Status == Committed || m.CommitTime == 0, "commit time", "set for status %d", m.Status)
		return m
	case tagVote:
		return &Vote{Txn: d.id("txn"), PrepareTime: d.time("prepare time")}
	case tagCommit:
		return &Commit{Txn: d.id("txn"), CommitTime: d.time("commit time")}
	case tagCommitAck:
		return &CommitAck{Txn: d.id("txn")}
	case tagAbort:
		return &Abort{Txn: d.id("txn")}
	case tagCheck:
		return &Check{Txn: d.id("txn"), EffTime: d.time("effective time")}
	case tagCheckReply:
		m := &CheckReply{Txn: d.id("txn"), Status: CheckStatus(d.byte("status")), CommitTime: d.time("commit time"), Floor: d.time("floor")}
		d.check(m.Status >= CheckCommitted && m.Status <= CheckUndecided, "status", "unknown check status %d", m.Status)
		d.check(m.Status == CheckCommitted || m.CommitTime == 0, "commit time", "set for status %d", m.Status)
		d.check(m.Status == CheckUndecided || m.Floor == 0, "floor", "set for status %d", m.Status)
		return m
	default:
		d.check(false, "eiger message tag", "unknown tag %d", tag)
		return nil
	}
}
