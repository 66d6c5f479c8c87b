package epaxos

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes EPaxos peer messages for the network runtime: one tag byte, then (instances as
// replica and slot uvarints, attributes as seq and a counted list of instances, a command as a
// presence byte and the transaction)
//
//	PreAccept       instance, ballot, command, attributes
//	PreAcceptReply  instance, ballot, ok, unchanged, attributes
//	Accept          instance, ballot, no-op, command, attributes
//	AcceptReply     instance, ballot, ok
//	Commit          instance, no-op, command, attributes
//	CommitAck       instance
//	Progress        counted slots, one per instance space
//	Prepare         instance, ballot
//	PrepareReply    instance, ballot, ok, status, value ballot, no-op, unchanged, tried, command, attributes
//	TryPreAccept    instance, ballot, command, attributes
//	TryPreAcceptReply instance, ballot, ok, conflict, impossible
//
// Decode checks every count against its limit before allocating and refuses unknown tags and
// statuses, so a decoded message is one Append could have produced; the replica checks the
// rest (sorted deps, owned ballots) before it trusts a message.
var Codec protocol.Codec = wire.Codec{Protocol: "epaxos", Write: write, Read: read}

// Limits on decoded fields: replicas per instance space index and dependencies per instance.
const (
	maxReplicas = 1 << 16
	maxDeps     = 1 << 20
)

const (
	tagPreAccept byte = iota + 1
	tagPreAcceptReply
	tagAccept
	tagAcceptReply
	tagCommit
	tagPrepare
	tagPrepareReply
	tagCommitAck
	tagProgress
	tagTryPreAccept
	tagTryPreAcceptReply
)

func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *PreAccept:
		w.Byte(tagPreAccept)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
		writeCmd(w, m.Cmd)
		writeAttrs(w, m.Attrs)
	case *PreAcceptReply:
		w.Byte(tagPreAcceptReply)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
		w.Bool(m.OK)
		w.Bool(m.Unchanged)
		writeAttrs(w, m.Attrs)
	case *Accept:
		w.Byte(tagAccept)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
		w.Bool(m.NoOp)
		writeCmd(w, m.Cmd)
		writeAttrs(w, m.Attrs)
	case *AcceptReply:
		w.Byte(tagAcceptReply)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
		w.Bool(m.OK)
	case *Commit:
		w.Byte(tagCommit)
		writeInst(w, m.Inst)
		w.Bool(m.NoOp)
		writeCmd(w, m.Cmd)
		writeAttrs(w, m.Attrs)
	case *CommitAck:
		w.Byte(tagCommitAck)
		writeInst(w, m.Inst)
	case *Progress:
		w.Byte(tagProgress)
		w.Count("spaces", len(m.UpTo), maxReplicas)
		for _, s := range m.UpTo {
			w.Uvarint(s)
		}
	case *Prepare:
		w.Byte(tagPrepare)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
	case *PrepareReply:
		if m.Status > Accepted {
			w.Fail("status", "%d is not reported by a promise", m.Status)
		}
		w.Byte(tagPrepareReply)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
		w.Bool(m.OK)
		w.Byte(byte(m.Status))
		w.Uvarint(m.VBallot)
		w.Bool(m.NoOp)
		w.Bool(m.Unchanged)
		w.Bool(m.Tried)
		writeCmd(w, m.Cmd)
		writeAttrs(w, m.Attrs)
	case *TryPreAccept:
		w.Byte(tagTryPreAccept)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
		writeCmd(w, m.Cmd)
		writeAttrs(w, m.Attrs)
	case *TryPreAcceptReply:
		w.Byte(tagTryPreAcceptReply)
		writeInst(w, m.Inst)
		w.Uvarint(m.Ballot)
		w.Bool(m.OK)
		w.Bool(m.Conflict)
		w.Bool(m.Impossible)
	default:
		return false
	}
	return true
}

func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("epaxos message tag"); tag {
	case tagPreAccept:
		m := &PreAccept{Inst: readInst(r), Ballot: r.Uvarint("ballot"), Cmd: readCmd(r)}
		m.Attrs = readAttrs(r)
		return m
	case tagPreAcceptReply:
		m := &PreAcceptReply{Inst: readInst(r), Ballot: r.Uvarint("ballot"), OK: r.Bool("ok"), Unchanged: r.Bool("unchanged")}
		m.Attrs = readAttrs(r)
		return m
	case tagAccept:
		m := &Accept{Inst: readInst(r), Ballot: r.Uvarint("ballot"), NoOp: r.Bool("no-op"), Cmd: readCmd(r)}
		m.Attrs = readAttrs(r)
		return m
	case tagAcceptReply:
		return &AcceptReply{Inst: readInst(r), Ballot: r.Uvarint("ballot"), OK: r.Bool("ok")}
	case tagCommit:
		m := &Commit{Inst: readInst(r), NoOp: r.Bool("no-op"), Cmd: readCmd(r)}
		m.Attrs = readAttrs(r)
		return m
	case tagCommitAck:
		return &CommitAck{Inst: readInst(r)}
	case tagProgress:
		m := &Progress{}
		if n := r.Count("spaces", maxReplicas, 1); n > 0 {
			m.UpTo = make([]uint64, n)
			for k := range m.UpTo {
				m.UpTo[k] = r.Uvarint("slot")
			}
		}
		return m
	case tagPrepare:
		return &Prepare{Inst: readInst(r), Ballot: r.Uvarint("ballot")}
	case tagPrepareReply:
		m := &PrepareReply{Inst: readInst(r), Ballot: r.Uvarint("ballot"), OK: r.Bool("ok")}
		if m.Status = Status(r.Byte("status")); m.Status > Accepted {
			r.Fail("status", "%d is not reported by a promise", m.Status)
		}
		m.VBallot, m.NoOp, m.Unchanged, m.Tried, m.Cmd = r.Uvarint("value ballot"), r.Bool("no-op"), r.Bool("unchanged"), r.Bool("tried"), readCmd(r)
		m.Attrs = readAttrs(r)
		return m
	case tagTryPreAccept:
		m := &TryPreAccept{Inst: readInst(r), Ballot: r.Uvarint("ballot"), Cmd: readCmd(r)}
		m.Attrs = readAttrs(r)
		return m
	case tagTryPreAcceptReply:
		return &TryPreAcceptReply{Inst: readInst(r), Ballot: r.Uvarint("ballot"), OK: r.Bool("ok"), Conflict: r.Bool("conflict"), Impossible: r.Bool("impossible")}
	default:
		r.Fail("epaxos message tag", "unknown tag %d", tag)
		return nil
	}
}

func writeInst(w *wire.Writer, i Instance) {
	w.Int("replica", int(i.Replica), maxReplicas)
	w.Uvarint(i.Slot)
}

func readInst(r *wire.Reader) Instance {
	return Instance{Replica: uint32(r.Int("replica", maxReplicas)), Slot: r.Uvarint("slot")}
}

// writeCmd writes an optional command: a transaction or, with instance batching, a batch
// (wire.Writer.OptionalTxn).
func writeCmd(w *wire.Writer, t *txn.Txn) { w.OptionalTxn(t) }

func readCmd(r *wire.Reader) *txn.Txn { return r.OptionalTxn() }

func writeAttrs(w *wire.Writer, a Attrs) {
	w.Uvarint(a.Seq)
	w.Count("deps", len(a.Deps), maxDeps)
	for _, d := range a.Deps {
		writeInst(w, d)
	}
}

func readAttrs(r *wire.Reader) Attrs {
	a := Attrs{Seq: r.Uvarint("seq")}
	if n := r.Count("deps", maxDeps, 2); n > 0 {
		a.Deps = make([]Instance, n)
		for k := range a.Deps {
			a.Deps[k] = readInst(r)
		}
	}
	return a
}
