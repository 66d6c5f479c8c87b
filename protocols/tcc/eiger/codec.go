package eiger

import (
	"math"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
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
var Codec protocol.Codec = wire.Codec{Protocol: "eiger", Write: write, Read: read}

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

// write writes m's tag and fields to w, or reports that m is not Eiger's.
func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *Read:
		w.Byte(tagRead)
		w.Keys(m.Keys)
		w.Int63("clock", m.Clock)
	case *ReadByTime:
		w.Byte(tagReadByTime)
		w.Keys(m.Keys)
		w.Int63("effective time", m.EffTime)
		w.Int63("clock", m.Clock)
	case *ReadReply:
		if m.Retry && len(m.Reads) > 0 {
			w.Fail("read reply", "a retry carries reads")
		}
		w.Byte(tagReadReply)
		w.Count("reads", len(m.Reads), wire.MaxSnapshotKeys)
		for _, r := range m.Reads {
			if r.Pending && (r.Value != nil || r.Writer != txn.None || r.EVT != 0) {
				w.Fail("read", "a pending key carries a version")
			}
			w.String("key", r.Key, wire.MaxKeyLen)
			w.Bytes("value", r.Value, wire.MaxValueLen)
			w.ID(r.Writer)
			w.Int63("evt", r.EVT)
			w.Int63("lvt", r.LVT)
			w.Bool(r.Pending)
		}
		w.Int63("clock", m.Clock)
		w.Int("commit checks", m.CommitChecks, maxChecks)
		w.Bool(m.Retry)
	case *WriteReq:
		w.Byte(tagWriteReq)
		w.ID(m.Txn)
		w.Writes(m.Writes)
		w.Int("coordinator", int(m.Coordinator), math.MaxInt32)
		w.Count("participants", len(m.Participants), MaxParticipants)
		for _, n := range m.Participants {
			w.Int("participant", int(n), math.MaxInt32)
		}
		w.Count("deps", len(m.Deps), MaxDeps)
		for _, d := range m.Deps {
			w.String("dep key", d.Key, wire.MaxKeyLen)
			w.ID(d.Version)
		}
		w.Int63("clock", m.Clock)
	case *WriteReply:
		if m.Status < Prepared || m.Status > Aborted || (m.Status != Committed && m.CommitTime != 0) {
			w.Fail("write reply", "status %d with commit time %d", m.Status, m.CommitTime)
		}
		w.Byte(tagWriteReply)
		w.ID(m.Txn)
		w.Byte(byte(m.Status))
		w.Int63("commit time", m.CommitTime)
		w.Int63("clock", m.Clock)
	case *Vote:
		w.Byte(tagVote)
		w.ID(m.Txn)
		w.Int63("prepare time", m.PrepareTime)
	case *Commit:
		w.Byte(tagCommit)
		w.ID(m.Txn)
		w.Int63("commit time", m.CommitTime)
	case *CommitAck:
		w.Byte(tagCommitAck)
		w.ID(m.Txn)
	case *Abort:
		w.Byte(tagAbort)
		w.ID(m.Txn)
	case *Check:
		w.Byte(tagCheck)
		w.ID(m.Txn)
		w.Int63("effective time", m.EffTime)
	case *CheckReply:
		if m.Status < CheckCommitted || m.Status > CheckUndecided ||
			(m.Status != CheckCommitted && m.CommitTime != 0) || (m.Status != CheckUndecided && m.Floor != 0) {
			w.Fail("check reply", "status %d with commit time %d and floor %d", m.Status, m.CommitTime, m.Floor)
		}
		w.Byte(tagCheckReply)
		w.ID(m.Txn)
		w.Byte(byte(m.Status))
		w.Int63("commit time", m.CommitTime)
		w.Int63("floor", m.Floor)
	default:
		return false
	}
	return true
}

// check records a malformed-input error naming what unless ok: for a value within every limit
// that Eiger never sends.
func check(r *wire.Reader, ok bool, what, format string, args ...any) {
	if !ok {
		r.Fail(what, format, args...)
	}
}

// node reads a node id (a protocol.NodeID is an int32).
func node(r *wire.Reader, what string) protocol.NodeID {
	return protocol.NodeID(r.Int(what, math.MaxInt32))
}

// read reads one message's tag and fields.
func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("eiger message tag"); tag {
	case tagRead:
		return &Read{Keys: r.Keys(), Clock: r.Int63("clock")}
	case tagReadByTime:
		return &ReadByTime{Keys: r.Keys(), EffTime: r.Int63("effective time"), Clock: r.Int63("clock")}
	case tagReadReply:
		m := &ReadReply{}
		// A read takes at least 6 bytes: an empty key, an empty value, a writer, the two times
		// and the pending flag.
		if n := r.Count("reads", wire.MaxSnapshotKeys, 6); n > 0 {
			m.Reads = make([]KeyRead, n)
			for i := range m.Reads {
				kr := &m.Reads[i]
				kr.Key = r.String("key", wire.MaxKeyLen)
				kr.Value = r.Bytes("value", wire.MaxValueLen)
				kr.Writer = r.ID("writer")
				kr.EVT = r.Int63("evt")
				kr.LVT = r.Int63("lvt")
				kr.Pending = r.Bool("pending")
				check(r, !kr.Pending || kr.Value == nil && kr.Writer == txn.None && kr.EVT == 0, "read", "a pending key carries a version")
			}
		}
		m.Clock = r.Int63("clock")
		m.CommitChecks = r.Int("commit checks", maxChecks)
		m.Retry = r.Bool("retry")
		check(r, !m.Retry || len(m.Reads) == 0, "read reply", "a retry carries reads")
		return m
	case tagWriteReq:
		m := &WriteReq{Txn: r.ID("txn"), Writes: r.Writes(), Coordinator: node(r, "coordinator")}
		if n := r.Count("participants", MaxParticipants, 1); n > 0 {
			m.Participants = make([]protocol.NodeID, n)
			for i := range m.Participants {
				m.Participants[i] = node(r, "participant")
			}
		}
		// A dependency takes at least 2 bytes: an empty key and a version.
		if n := r.Count("deps", MaxDeps, 2); n > 0 {
			m.Deps = make([]Dep, n)
			for i := range m.Deps {
				m.Deps[i] = Dep{Key: r.String("dep key", wire.MaxKeyLen), Version: r.ID("dep version")}
			}
		}
		m.Clock = r.Int63("clock")
		return m
	case tagWriteReply:
		m := &WriteReply{Txn: r.ID("txn"), Status: WriteStatus(r.Byte("status")), CommitTime: r.Int63("commit time"), Clock: r.Int63("clock")}
		check(r, m.Status >= Prepared && m.Status <= Aborted, "status", "unknown write status %d", m.Status)
		check(r, m.Status == Committed || m.CommitTime == 0, "commit time", "set for status %d", m.Status)
		return m
	case tagVote:
		return &Vote{Txn: r.ID("txn"), PrepareTime: r.Int63("prepare time")}
	case tagCommit:
		return &Commit{Txn: r.ID("txn"), CommitTime: r.Int63("commit time")}
	case tagCommitAck:
		return &CommitAck{Txn: r.ID("txn")}
	case tagAbort:
		return &Abort{Txn: r.ID("txn")}
	case tagCheck:
		return &Check{Txn: r.ID("txn"), EffTime: r.Int63("effective time")}
	case tagCheckReply:
		m := &CheckReply{Txn: r.ID("txn"), Status: CheckStatus(r.Byte("status")), CommitTime: r.Int63("commit time"), Floor: r.Int63("floor")}
		check(r, m.Status >= CheckCommitted && m.Status <= CheckUndecided, "status", "unknown check status %d", m.Status)
		check(r, m.Status == CheckCommitted || m.CommitTime == 0, "commit time", "set for status %d", m.Status)
		check(r, m.Status == CheckUndecided || m.Floor == 0, "floor", "set for status %d", m.Status)
		return m
	default:
		r.Fail("eiger message tag", "unknown tag %d", tag)
		return nil
	}
}
