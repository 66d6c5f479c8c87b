package ogre

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes Ogre's peer messages for the network runtime: one tag byte, then (ids and
// versions as uvarints)
//
//	Prepare      the transaction (id, reads with their versions, writes)
//	Vote         txn id, positive, stale, versions (one per write), read-before sets
//	Decision     commit; if committed: the transaction, versions overwritten (one per write),
//	             read-before sets; if aborted: the txn id
//	DecisionAck  txn id
//	Ingest       stream sequence number, then a committed Decision as above (without its tag)
//	IngestAck    stream sequence number
//
// A read-before set list is a count (0 without dependency tracking, else one set per write) and
// each set's ids. Decode checks every count against the wire limits before allocating, and that
// a committed decision carries one version per write.
var Codec protocol.Codec = wire.Codec{Protocol: "ogre", Write: write, Read: read}

const (
	tagPrepare byte = iota + 1
	tagVote
	tagDecision
	tagDecisionAck
	tagIngest
	tagIngestAck
)

// maxReadersPerKey bounds one read-before set on the wire.
const maxReadersPerKey = 1 << 20

func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *Prepare:
		w.Byte(tagPrepare)
		w.Txn(m.Txn)
	case *Vote:
		w.Byte(tagVote)
		w.ID(m.Txn)
		w.Bool(m.Positive)
		w.Bool(m.Stale)
		writeVersions(w, m.Versions)
		writeDeps(w, m.RBDeps)
	case *Decision:
		w.Byte(tagDecision)
		writeDecision(w, m)
	case *DecisionAck:
		w.Byte(tagDecisionAck)
		w.ID(m.Txn)
	case *Ingest:
		w.Byte(tagIngest)
		w.Uvarint(m.Seq)
		if m.Decision == nil || !m.Decision.Commit {
			w.Fail("ingest", "a stream entry is a committed decision")
			return true
		}
		writeDecision(w, m.Decision)
	case *IngestAck:
		w.Byte(tagIngestAck)
		w.Uvarint(m.Seq)
	default:
		return false
	}
	return true
}

func writeDecision(w *wire.Writer, m *Decision) {
	w.Bool(m.Commit)
	if !m.Commit {
		if m.Txn == nil {
			w.Fail("decision", "no transaction")
			return
		}
		w.ID(m.Txn.ID)
		return
	}
	if m.Txn == nil || len(m.Pred) != len(m.Txn.Writes) {
		w.Fail("decision", "a committed decision needs its transaction and one version per write")
		return
	}
	w.Txn(m.Txn)
	writeVersions(w, m.Pred)
	writeDeps(w, m.RBDeps)
}

func writeVersions(w *wire.Writer, vs []uint64) {
	w.Count("version count", len(vs), wire.MaxTxnOps)
	for _, v := range vs {
		w.Uvarint(v)
	}
}

func writeDeps(w *wire.Writer, deps [][]txn.ID) {
	w.Count("read-before set count", len(deps), wire.MaxTxnOps)
	for _, set := range deps {
		w.Count("read-before set size", len(set), maxReadersPerKey)
		for _, id := range set {
			w.ID(id)
		}
	}
}

func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("ogre message tag"); tag {
	case tagPrepare:
		return &Prepare{Txn: r.Txn()}
	case tagVote:
		return &Vote{Txn: r.ID("txn"), Positive: r.Bool("positive"), Stale: r.Bool("stale"), Versions: readVersions(r), RBDeps: readDeps(r)}
	case tagDecision:
		return readDecision(r)
	case tagDecisionAck:
		return &DecisionAck{Txn: r.ID("txn")}
	case tagIngest:
		in := &Ingest{Seq: r.Uvarint("seq"), Decision: readDecision(r)}
		if r.Err() == nil && !in.Decision.Commit {
			r.Fail("ingest", "an aborted decision in the stream")
		}
		return in
	case tagIngestAck:
		return &IngestAck{Seq: r.Uvarint("seq")}
	default:
		r.Fail("ogre message tag", "unknown tag %d", tag)
		return nil
	}
}

func readDecision(r *wire.Reader) *Decision {
	if !r.Bool("commit") {
		return &Decision{Txn: &txn.Txn{ID: r.ID("txn")}}
	}
	d := &Decision{Txn: r.Txn(), Commit: true, Pred: readVersions(r), RBDeps: readDeps(r)}
	if r.Err() == nil && len(d.Pred) != len(d.Txn.Writes) {
		r.Fail("decision", "%d versions for %d writes", len(d.Pred), len(d.Txn.Writes))
	}
	return d
}

func readVersions(r *wire.Reader) []uint64 {
	n := r.Count("version count", wire.MaxTxnOps, 1)
	if n == 0 {
		return nil
	}
	vs := make([]uint64, n)
	for i := range vs {
		vs[i] = r.Uvarint("version")
	}
	return vs
}

func readDeps(r *wire.Reader) [][]txn.ID {
	n := r.Count("read-before set count", wire.MaxTxnOps, 1)
	if n == 0 {
		return nil
	}
	deps := make([][]txn.ID, n)
	for i := range deps {
		if m := r.Count("read-before set size", maxReadersPerKey, 1); m > 0 {
			deps[i] = make([]txn.ID, m)
			for j := range deps[i] {
				deps[i][j] = r.ID("read-before id")
			}
		}
	}
	return deps
}
