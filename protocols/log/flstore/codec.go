package flstore

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes FLStore's peer messages and client operations for the network runtime: one tag
// byte, then the fields in declaration order (integers as uvarints, the clock as a zigzag
// varint, lists as a count then the elements). A record is its host, TOId, position,
// dependency vectors, MinLId, tags (name, value), body, client, append and call numbers, and
// its no-op and collected flags; a journal is its epochs (start, range size, maintainers).
// Decode checks every count against the limits below before allocating.
var Codec protocol.Codec = wire.Codec{Protocol: "flstore", Write: WriteMessage, Read: func(r *wire.Reader) protocol.Message {
	return ReadMessage(r, r.Byte("tag"))
}}

// Wire limits of the log family.
const (
	MaxDCs     = 64      // entries of a dependency vector or ATable row
	MaxRecords = 1 << 16 // records (or positions, entries) in one message
	MaxTags    = 64      // tags on one record
	MaxNodes   = 1 << 20 // node ids
	MaxEpochs  = 1 << 10 // epochs of a journal
)

const (
	tagAppendOp byte = iota + 1
	tagAppendResult
	tagHLQuery
	tagHLResult
	tagReadOp
	tagReadResult
	tagLookupOp
	tagLookupResult
	tagHLGossip
	tagIndexAdd
	tagIndexAck
	tagAssign
	tagPersistAck
	tagFetchReq
	tagFetchResp
	tagFreeze
	tagFreezeAck
	tagTruncate
	tagTruncateAck
)

// WriteMessage writes m's tag and fields, or reports that m is not an FLStore message.
func WriteMessage(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *AppendOp:
		w.Byte(tagAppendOp)
		WriteRecord(w, m.Record)
	case *AppendResult:
		w.Byte(tagAppendResult)
		w.Uvarint(m.TOId)
		w.Uvarint(m.LId)
	case *HLQuery:
		w.Byte(tagHLQuery)
	case *HLResult:
		w.Byte(tagHLResult)
		w.Uvarint(m.HL)
		WriteJournal(w, m.Journal)
	case *ReadOp:
		w.Byte(tagReadOp)
		w.Uvarint(m.From)
		w.Uvarint(m.To)
		w.Uvarint(m.HL)
	case *ReadResult:
		w.Byte(tagReadResult)
		WriteRecords(w, m.Records)
		w.Uvarint(m.HL)
	case *LookupOp:
		w.Byte(tagLookupOp)
		w.String("tag", m.Tag, wire.MaxKeyLen)
		w.Int("predicate", int(m.Op), int(Ge))
		w.Bytes("value", m.Value, wire.MaxValueLen)
		w.Uvarint(m.MaxLId)
		w.Int("limit", m.Limit, MaxRecords)
		w.Bool(m.MostRecentFirst)
		WriteJournal(w, m.Journal)
	case *LookupResult:
		w.Byte(tagLookupResult)
		WriteVec(w, "positions", m.LIds, MaxRecords)
		w.Bool(m.Covered)
	case *HLGossip:
		w.Byte(tagHLGossip)
		w.Uvarint(m.Next)
		w.Uvarint(m.Contig)
		WriteJournal(w, m.Journal)
		w.Uvarint(m.Gen)
		w.Uvarint(m.HL)
		w.Bool(m.Frozen)
	case *IndexAdd:
		w.Byte(tagIndexAdd)
		writeEntries(w, m.Entries)
		w.Uvarint(m.Through)
		w.Int("epochs", m.Epochs, MaxEpochs)
	case *IndexAck:
		w.Byte(tagIndexAck)
		writeEntries(w, m.Entries)
		w.Uvarint(m.Through)
		w.Int("epochs", m.Epochs, MaxEpochs)
	case *Assign:
		w.Byte(tagAssign)
		WriteRecords(w, m.Records)
		WriteJournal(w, m.Journal)
		w.Uvarint(m.Gen)
	case *PersistAck:
		w.Byte(tagPersistAck)
		WriteVec(w, "positions", m.LIds, MaxRecords)
		w.Uvarint(m.HL)
		w.Uvarint(m.Gen)
	case *Freeze:
		w.Byte(tagFreeze)
		w.Uvarint(m.Gen)
	case *FreezeAck:
		w.Byte(tagFreezeAck)
		w.Uvarint(m.Gen)
		w.Uvarint(m.Next)
		WriteJournal(w, m.Journal)
	case *Truncate:
		w.Byte(tagTruncate)
		w.Uvarint(m.Gen)
		w.Uvarint(m.T)
		w.Uvarint(m.From)
		WriteJournal(w, m.Journal)
	case *TruncateAck:
		w.Byte(tagTruncateAck)
		w.Uvarint(m.Gen)
		WriteRecords(w, m.Records)
	case *FetchReq:
		w.Byte(tagFetchReq)
		w.Uvarint(m.FromTOId)
		w.Int("limit", m.Limit, MaxRecords)
		WriteVec(w, "horizon", m.Horizon, MaxDCs)
	case *FetchResp:
		w.Byte(tagFetchResp)
		w.Uvarint(m.FromTOId)
		WriteRecords(w, m.Records)
	default:
		return false
	}
	return true
}

// ReadMessage reads the fields of the message tagged tag (an unknown tag fails r).
func ReadMessage(r *wire.Reader, tag byte) protocol.Message {
	switch tag {
	case tagAppendOp:
		return &AppendOp{Record: ReadRecord(r)}
	case tagAppendResult:
		return &AppendResult{TOId: r.Uvarint("toid"), LId: r.Uvarint("lid")}
	case tagHLQuery:
		return &HLQuery{}
	case tagHLResult:
		return &HLResult{HL: r.Uvarint("hl"), Journal: ReadJournal(r)}
	case tagReadOp:
		return &ReadOp{From: r.Uvarint("from"), To: r.Uvarint("to"), HL: r.Uvarint("hl")}
	case tagReadResult:
		return &ReadResult{Records: ReadRecords(r), HL: r.Uvarint("hl")}
	case tagLookupOp:
		return &LookupOp{Tag: r.String("tag", wire.MaxKeyLen), Op: Compare(r.Int("predicate", int(Ge))),
			Value: r.Bytes("value", wire.MaxValueLen), MaxLId: r.Uvarint("max lid"), Limit: r.Int("limit", MaxRecords),
			MostRecentFirst: r.Bool("most recent first"), Journal: ReadJournal(r)}
	case tagLookupResult:
		return &LookupResult{LIds: ReadVec(r, "positions", MaxRecords), Covered: r.Bool("covered")}
	case tagHLGossip:
		return &HLGossip{Next: r.Uvarint("next"), Contig: r.Uvarint("contig"), Journal: ReadJournal(r), Gen: r.Uvarint("generation"),
			HL: r.Uvarint("hl"), Frozen: r.Bool("frozen")}
	case tagIndexAdd:
		return &IndexAdd{Entries: readEntries(r), Through: r.Uvarint("through"), Epochs: r.Int("epochs", MaxEpochs)}
	case tagIndexAck:
		return &IndexAck{Entries: readEntries(r), Through: r.Uvarint("through"), Epochs: r.Int("epochs", MaxEpochs)}
	case tagAssign:
		return &Assign{Records: ReadRecords(r), Journal: ReadJournal(r), Gen: r.Uvarint("generation")}
	case tagPersistAck:
		return &PersistAck{LIds: ReadVec(r, "positions", MaxRecords), HL: r.Uvarint("hl"), Gen: r.Uvarint("generation")}
	case tagFreeze:
		return &Freeze{Gen: r.Uvarint("generation")}
	case tagFreezeAck:
		return &FreezeAck{Gen: r.Uvarint("generation"), Next: r.Uvarint("next"), Journal: ReadJournal(r)}
	case tagTruncate:
		return &Truncate{Gen: r.Uvarint("generation"), T: r.Uvarint("stable prefix"), From: r.Uvarint("from"), Journal: ReadJournal(r)}
	case tagTruncateAck:
		return &TruncateAck{Gen: r.Uvarint("generation"), Records: ReadRecords(r)}
	case tagFetchReq:
		return &FetchReq{FromTOId: r.Uvarint("from toid"), Limit: r.Int("limit", MaxRecords), Horizon: ReadVec(r, "horizon", MaxDCs)}
	case tagFetchResp:
		return &FetchResp{FromTOId: r.Uvarint("from toid"), Records: ReadRecords(r)}
	}
	r.Fail("tag", "unknown message tag %d", tag)
	return nil
}

// WriteVec writes a list of at most limit uvarints.
func WriteVec(w *wire.Writer, what string, v []uint64, limit int) {
	w.Count(what, len(v), limit)
	for _, x := range v {
		w.Uvarint(x)
	}
}

// ReadVec reads a list WriteVec wrote; an empty list is nil.
func ReadVec(r *wire.Reader, what string, limit int) []uint64 {
	n := r.Count(what, limit, 1)
	if n == 0 {
		return nil
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uvarint(what)
	}
	return v
}

// WriteNode writes a node id.
func WriteNode(w *wire.Writer, n protocol.NodeID) { w.Int("node", int(n), MaxNodes) }

// ReadNode reads a node id.
func ReadNode(r *wire.Reader) protocol.NodeID { return protocol.NodeID(r.Int("node", MaxNodes)) }

// WriteNodes writes a list of node ids.
func WriteNodes(w *wire.Writer, ns []protocol.NodeID) {
	w.Count("node count", len(ns), MaxNodes)
	for _, n := range ns {
		WriteNode(w, n)
	}
}

// ReadNodes reads a list WriteNodes wrote; an empty list is nil.
func ReadNodes(r *wire.Reader) []protocol.NodeID {
	n := r.Count("node count", MaxNodes, 1)
	if n == 0 {
		return nil
	}
	ns := make([]protocol.NodeID, n)
	for i := range ns {
		ns[i] = ReadNode(r)
	}
	return ns
}

// WriteJournal writes an epoch journal.
func WriteJournal(w *wire.Writer, j Journal) {
	w.Count("epoch count", len(j), MaxEpochs)
	for _, e := range j {
		w.Uvarint(e.StartLId)
		w.Uvarint(e.B)
		WriteNodes(w, e.Maintainers)
	}
}

// ReadJournal reads a journal WriteJournal wrote; an empty one is nil.
func ReadJournal(r *wire.Reader) Journal {
	n := r.Count("epoch count", MaxEpochs, 3)
	if n == 0 {
		return nil
	}
	j := make(Journal, n)
	for i := range j {
		j[i] = Epoch{StartLId: r.Uvarint("start lid"), B: r.Uvarint("range size"), Maintainers: ReadNodes(r)}
	}
	return j
}

// WriteRecord writes one record; nil fails w.
func WriteRecord(w *wire.Writer, rec *Record) {
	if rec == nil {
		w.Fail("record", "nil record")
		return
	}
	w.Int("host", rec.Host, MaxDCs-1)
	w.Uvarint(rec.TOId)
	w.Uvarint(rec.LId)
	WriteVec(w, "deps", rec.Deps, MaxDCs)
	WriteVec(w, "wanted deps", rec.WantDeps, MaxDCs)
	w.Uvarint(rec.MinLId)
	w.Count("tag count", len(rec.Tags), MaxTags)
	for _, t := range rec.Tags {
		w.String("tag name", t.Name, wire.MaxKeyLen)
		w.Bytes("tag value", t.Value, wire.MaxValueLen)
	}
	w.Bytes("body", rec.Body, wire.MaxValueLen)
	w.Uvarint(uint64(rec.Client))
	w.Uvarint(rec.AppendSeq)
	w.Uvarint(rec.CallSeq)
	w.Int("via", int(rec.Via), MaxNodes)
	w.Bool(rec.NoOp)
	w.Bool(rec.Collected)
}

// ReadRecord reads a record WriteRecord wrote (empty lists and byte strings are nil).
func ReadRecord(r *wire.Reader) *Record {
	rec := &Record{Host: r.Int("host", MaxDCs-1), TOId: r.Uvarint("toid"), LId: r.Uvarint("lid"), Deps: ReadVec(r, "deps", MaxDCs),
		WantDeps: ReadVec(r, "wanted deps", MaxDCs), MinLId: r.Uvarint("min lid")}
	if n := r.Count("tag count", MaxTags, 2); n > 0 {
		rec.Tags = make([]Tag, n)
		for i := range rec.Tags {
			rec.Tags[i] = Tag{Name: r.String("tag name", wire.MaxKeyLen), Value: r.Bytes("tag value", wire.MaxValueLen)}
		}
	}
	rec.Body = r.Bytes("body", wire.MaxValueLen)
	client := r.Uvarint("client")
	if client > uint64(^txn.ClientID(0)) {
		r.Fail("client", "client id %d out of range", client)
	}
	rec.Client = txn.ClientID(client)
	rec.AppendSeq, rec.CallSeq = r.Uvarint("append seq"), r.Uvarint("call seq")
	rec.Via = protocol.NodeID(r.Int("via", MaxNodes))
	rec.NoOp, rec.Collected = r.Bool("no-op"), r.Bool("collected")
	return rec
}

// WriteRecords writes a list of records.
func WriteRecords(w *wire.Writer, rs []*Record) {
	w.Count("record count", len(rs), MaxRecords)
	for _, rec := range rs {
		WriteRecord(w, rec)
	}
}

// ReadRecords reads a list WriteRecords wrote; an empty list is nil.
func ReadRecords(r *wire.Reader) []*Record {
	// A record takes at least 14 bytes: one per field.
	n := r.Count("record count", MaxRecords, 14)
	if n == 0 {
		return nil
	}
	rs := make([]*Record, n)
	for i := range rs {
		rs[i] = ReadRecord(r)
	}
	return rs
}

func writeEntries(w *wire.Writer, es []IndexEntry) {
	w.Count("entry count", len(es), MaxRecords)
	for _, e := range es {
		writeEntry(w, e)
	}
}

func readEntries(r *wire.Reader) []IndexEntry {
	n := r.Count("entry count", MaxRecords, 3)
	if n == 0 {
		return nil
	}
	es := make([]IndexEntry, n)
	for i := range es {
		es[i] = readEntry(r)
	}
	return es
}

func writeEntry(w *wire.Writer, e IndexEntry) {
	w.String("tag", e.Tag, wire.MaxKeyLen)
	w.Bytes("value", e.Value, wire.MaxValueLen)
	w.Uvarint(e.LId)
}

func readEntry(r *wire.Reader) IndexEntry {
	return IndexEntry{Tag: r.String("tag", wire.MaxKeyLen), Value: r.Bytes("value", wire.MaxValueLen), LId: r.Uvarint("lid")}
}
