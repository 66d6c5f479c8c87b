package alvin

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes ALVIN's POB messages for the network runtime: one tag byte, then the fields in
// declaration order; a dependency or id list is a count (at most MaxIDs) and the ids, strictly
// increasing; an optional payload is wire.Writer.OptionalTxn: a flag, then the transaction or,
// with instance batching, the batch (its id and members, at most wire.MaxBatchTxns).
// Decode refuses what ALVIN never sends: unsorted or repeated ids, a payload of another
// transaction, a NO-OP with a payload or dependencies, a status out of range.
var Codec protocol.Codec = wire.Codec{Protocol: "alvin", Write: write, Read: read}

// MaxIDs bounds a dependency list or a report's id list on the wire.
const MaxIDs = 1 << 20

const (
	tagPropose byte = iota + 1
	tagAckPropose
	tagAccept
	tagAckAccept
	tagStable
	tagPrepare
	tagPromise
	tagNack
	tagFetch
	tagDelivered
)

func writeIDs(w *wire.Writer, ids []txn.ID) {
	w.Count("id count", len(ids), MaxIDs)
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			w.Fail("ids", "not strictly increasing")
		}
		w.ID(id)
	}
}

func readIDs(r *wire.Reader) []txn.ID {
	n := r.Count("id count", MaxIDs, 1)
	if n == 0 {
		return nil
	}
	ids := make([]txn.ID, n)
	for i := range ids {
		ids[i] = r.ID("id")
	}
	for i := 1; i < n; i++ {
		if ids[i] <= ids[i-1] {
			r.Fail("ids", "not strictly increasing")
			break
		}
	}
	return ids
}

func writePayload(w *wire.Writer, tid txn.ID, t *txn.Txn) {
	if t != nil && t.ID != tid {
		w.Fail("payload", "of another transaction")
	}
	w.OptionalTxn(t)
}

func readPayload(r *wire.Reader, tid txn.ID) *txn.Txn {
	t := r.OptionalTxn()
	if r.Err() == nil && t != nil && t.ID != tid {
		r.Fail("payload", "of another transaction")
	}
	return t
}

// head writes a message's tag, transaction id and epoch.
func head(w *wire.Writer, tag byte, tid txn.ID, epoch uint64) {
	w.Byte(tag)
	w.ID(tid)
	w.Uvarint(epoch)
}

func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *Propose:
		head(w, tagPropose, m.Tid, m.Epoch)
		w.Uvarint(m.Pos)
		writeIDs(w, m.Deps)
		if m.Payload == nil {
			w.Fail("propose", "without payload")
		}
		writePayload(w, m.Tid, m.Payload)
	case *AckPropose:
		head(w, tagAckPropose, m.Tid, m.Epoch)
		w.Uvarint(m.Pos)
		writeIDs(w, m.Deps)
	case *Accept:
		head(w, tagAccept, m.Tid, m.Epoch)
		writeDecision(w, m.Tid, m.Pos, m.Deps, m.NoOp, m.Payload)
	case *AckAccept:
		head(w, tagAckAccept, m.Tid, m.Epoch)
		w.Uvarint(m.Pos)
		writeIDs(w, m.Deps)
	case *Stable:
		head(w, tagStable, m.Tid, m.Epoch)
		writeDecision(w, m.Tid, m.Pos, m.Deps, m.NoOp, m.Payload)
	case *Prepare:
		head(w, tagPrepare, m.Tid, m.Epoch)
	case *Promise:
		head(w, tagPromise, m.Tid, m.Epoch)
		if m.Status > StableStatus {
			w.Fail("status", "%d out of range", m.Status)
		}
		w.Byte(byte(m.Status))
		w.Uvarint(m.Pos)
		writeIDs(w, m.Deps)
		w.Bool(m.NoOp)
		w.Uvarint(m.AcceptedEpoch)
		w.Bool(m.HasProposal)
		w.Uvarint(m.ProposedEpoch)
		w.Uvarint(m.ProposedPos)
		writeIDs(w, m.ProposedDeps)
		writePayload(w, m.Tid, m.Payload)
	case *Nack:
		head(w, tagNack, m.Tid, m.Promised)
	case *Fetch:
		w.Byte(tagFetch)
		writeIDs(w, m.Tids)
	case *Delivered:
		w.Byte(tagDelivered)
		writeIDs(w, m.Tids)
		writeIDs(w, m.Gone)
	default:
		return false
	}
	return true
}

// writeDecision writes the value of an ACCEPT or STABLE.
func writeDecision(w *wire.Writer, tid txn.ID, pos uint64, deps []txn.ID, noop bool, payload *txn.Txn) {
	if noop && (payload != nil || len(deps) > 0) {
		w.Fail("no-op", "with a payload or dependencies")
	}
	w.Uvarint(pos)
	writeIDs(w, deps)
	w.Bool(noop)
	writePayload(w, tid, payload)
}

func readDecision(r *wire.Reader, tid txn.ID) (pos uint64, deps []txn.ID, noop bool, payload *txn.Txn) {
	pos, deps, noop = r.Uvarint("pos"), readIDs(r), r.Bool("no-op")
	payload = readPayload(r, tid)
	if noop && (payload != nil || len(deps) > 0) {
		r.Fail("no-op", "with a payload or dependencies")
	}
	return pos, deps, noop, payload
}

func read(r *wire.Reader) protocol.Message {
	tag := r.Byte("alvin message tag")
	switch tag {
	case tagFetch:
		return &Fetch{Tids: readIDs(r)}
	case tagDelivered:
		return &Delivered{Tids: readIDs(r), Gone: readIDs(r)}
	}
	tid, epoch := r.ID("tid"), r.Uvarint("epoch")
	switch tag {
	case tagPropose:
		m := &Propose{Tid: tid, Epoch: epoch, Pos: r.Uvarint("pos"), Deps: readIDs(r), Payload: readPayload(r, tid)}
		if r.Err() == nil && m.Payload == nil {
			r.Fail("propose", "without payload")
		}
		return m
	case tagAckPropose:
		return &AckPropose{Tid: tid, Epoch: epoch, Pos: r.Uvarint("pos"), Deps: readIDs(r)}
	case tagAccept:
		m := &Accept{Tid: tid, Epoch: epoch}
		m.Pos, m.Deps, m.NoOp, m.Payload = readDecision(r, tid)
		return m
	case tagAckAccept:
		return &AckAccept{Tid: tid, Epoch: epoch, Pos: r.Uvarint("pos"), Deps: readIDs(r)}
	case tagStable:
		m := &Stable{Tid: tid, Epoch: epoch}
		m.Pos, m.Deps, m.NoOp, m.Payload = readDecision(r, tid)
		return m
	case tagPrepare:
		return &Prepare{Tid: tid, Epoch: epoch}
	case tagPromise:
		m := &Promise{Tid: tid, Epoch: epoch, Status: Status(r.Byte("status"))}
		if m.Status > StableStatus {
			r.Fail("status", "%d out of range", m.Status)
		}
		m.Pos, m.Deps, m.NoOp, m.AcceptedEpoch = r.Uvarint("pos"), readIDs(r), r.Bool("no-op"), r.Uvarint("accepted epoch")
		m.HasProposal, m.ProposedEpoch, m.ProposedPos = r.Bool("has proposal"), r.Uvarint("proposed epoch"), r.Uvarint("proposed pos")
		m.ProposedDeps, m.Payload = readIDs(r), readPayload(r, tid)
		return m
	case tagNack:
		return &Nack{Tid: tid, Promised: epoch}
	}
	r.Fail("alvin message tag", "unknown tag %d", tag)
	return nil
}
