package multipaxos

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes Multi-Paxos peer messages for the network runtime: one tag byte, then
//
//	Forward   the transaction (wire.AppendTxn)
//	Prepare   ballot, from
//	Promise   ballot, entries
//	Nack      ballot
//	Accept    ballot, slot, optional transaction (wire.Writer.OptionalTxn; absent: a no-op; a
//	          batch with instance batching)
//	Accepted  ballot, slot
//	Commit    ballot, up-to slot, trim-to slot (at most the up-to slot)
//	CommitAck ballot, executed slot
//	Fetch     from
//	Chosen    entries
//
// An entry list is a count (at most maxFetchEntries for Chosen, MaxPromiseEntries for Promise)
// then, per entry, slot, ballot and optional transaction. Decode refuses slot 0 and entries out
// of ascending slot order, which the protocol never sends.
var Codec protocol.Codec = wire.Codec{Protocol: "multipaxos", Write: write, Read: read}

// MaxPromiseEntries bounds the entries of one Promise on the wire: a replica more than this many
// accepted slots ahead of a candidate's commit index cannot send its promise over the network.
const MaxPromiseEntries = 1 << 20

const (
	tagForward byte = iota + 1
	tagPrepare
	tagPromise
	tagNack
	tagAccept
	tagAccepted
	tagCommit
	tagFetch
	tagChosen
	tagCommitAck
)

// writeOptTxn writes a slot's value: a transaction, a no-op (nil) or, with instance batching, a
// batch (wire.Writer.OptionalTxn).
func writeOptTxn(w *wire.Writer, t *txn.Txn) { w.OptionalTxn(t) }

func readOptTxn(r *wire.Reader) *txn.Txn { return r.OptionalTxn() }

func writeEntries(w *wire.Writer, es []Entry, limit int) {
	w.Count("entry count", len(es), limit)
	prev := uint64(0)
	for _, e := range es {
		if e.Slot <= prev {
			w.Fail("entry slot", "slot %d after slot %d", e.Slot, prev)
		}
		prev = e.Slot
		w.Uvarint(e.Slot)
		w.Uvarint(e.Ballot)
		writeOptTxn(w, e.Txn)
	}
}

func readEntries(r *wire.Reader, limit int) []Entry {
	n := r.Count("entry count", limit, 3)
	if n == 0 {
		return nil
	}
	es := make([]Entry, 0, n)
	prev := uint64(0)
	for range n {
		e := Entry{Slot: r.Uvarint("slot"), Ballot: r.Uvarint("ballot"), Txn: readOptTxn(r)}
		if r.Err() != nil {
			return nil
		}
		if e.Slot <= prev {
			r.Fail("entry slot", "slot %d after slot %d", e.Slot, prev)
			return nil
		}
		prev = e.Slot
		es = append(es, e)
	}
	return es
}

func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *Forward:
		w.Byte(tagForward)
		w.Txn(m.Txn)
	case *Prepare:
		w.Byte(tagPrepare)
		w.Uvarint(m.Ballot)
		w.Uvarint(m.From)
	case *Promise:
		w.Byte(tagPromise)
		w.Uvarint(m.Ballot)
		writeEntries(w, m.Entries, MaxPromiseEntries)
	case *Nack:
		w.Byte(tagNack)
		w.Uvarint(m.Ballot)
	case *Accept:
		w.Byte(tagAccept)
		w.Uvarint(m.Ballot)
		writeSlot(w, m.Slot)
		writeOptTxn(w, m.Txn)
	case *Accepted:
		w.Byte(tagAccepted)
		w.Uvarint(m.Ballot)
		writeSlot(w, m.Slot)
	case *Commit:
		w.Byte(tagCommit)
		w.Uvarint(m.Ballot)
		w.Uvarint(m.UpTo)
		if m.TrimTo > m.UpTo {
			w.Fail("trim-to slot", "%d above the up-to slot %d", m.TrimTo, m.UpTo)
		}
		w.Uvarint(m.TrimTo)
	case *CommitAck:
		w.Byte(tagCommitAck)
		w.Uvarint(m.Ballot)
		w.Uvarint(m.Executed)
	case *Fetch:
		w.Byte(tagFetch)
		w.Uvarint(m.From)
	case *Chosen:
		w.Byte(tagChosen)
		writeEntries(w, m.Entries, maxFetchEntries)
	default:
		return false
	}
	return true
}

func writeSlot(w *wire.Writer, s uint64) {
	if s == 0 {
		w.Fail("slot", "slot 0")
	}
	w.Uvarint(s)
}

func readSlot(r *wire.Reader) uint64 {
	s := r.Uvarint("slot")
	if s == 0 && r.Err() == nil {
		r.Fail("slot", "slot 0")
	}
	return s
}

func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("multipaxos message tag"); tag {
	case tagForward:
		return &Forward{Txn: r.Txn()}
	case tagPrepare:
		return &Prepare{Ballot: r.Uvarint("ballot"), From: r.Uvarint("from")}
	case tagPromise:
		return &Promise{Ballot: r.Uvarint("ballot"), Entries: readEntries(r, MaxPromiseEntries)}
	case tagNack:
		return &Nack{Ballot: r.Uvarint("ballot")}
	case tagAccept:
		return &Accept{Ballot: r.Uvarint("ballot"), Slot: readSlot(r), Txn: readOptTxn(r)}
	case tagAccepted:
		return &Accepted{Ballot: r.Uvarint("ballot"), Slot: readSlot(r)}
	case tagCommit:
		m := &Commit{Ballot: r.Uvarint("ballot"), UpTo: r.Uvarint("up-to slot"), TrimTo: r.Uvarint("trim-to slot")}
		if m.TrimTo > m.UpTo && r.Err() == nil {
			r.Fail("trim-to slot", "%d above the up-to slot %d", m.TrimTo, m.UpTo)
		}
		return m
	case tagCommitAck:
		return &CommitAck{Ballot: r.Uvarint("ballot"), Executed: r.Uvarint("executed slot")}
	case tagFetch:
		return &Fetch{From: r.Uvarint("from")}
	case tagChosen:
		return &Chosen{Entries: readEntries(r, maxFetchEntries)}
	default:
		if r.Err() == nil {
			r.Fail("multipaxos message tag", "unknown tag %d", tag)
		}
		return nil
	}
}
