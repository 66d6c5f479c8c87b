package chariots

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Codec encodes a Chariots deployment's messages: FLStore's (flstore.Codec, tags below 100) and
// the pipeline's, one tag byte from 100 then the fields in declaration order with FLStore's
// record, journal, vector and node encodings (an ATable is a count of rows, each a vector).
var Codec protocol.Codec = wire.Codec{Protocol: "chariots", Write: write, Read: read}

const (
	tagRecordBatch byte = iota + 100
	tagBatchAck
	tagToken
	tagTokenAck
	tagRowUpdate
	tagShipBatch
	tagTableUpdate
	tagAddBatcher
	tagFilterMapUpdate
	tagAddQueue
	tagAddMaintainer
	tagFilterMapSync
	tagRebuildReq
	tagTokenCopy
)

func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *RecordBatch:
		w.Byte(tagRecordBatch)
		w.Uvarint(m.Inc)
		w.Uvarint(m.Seq)
		flstore.WriteRecords(w, m.Records)
	case *BatchAck:
		w.Byte(tagBatchAck)
		w.Uvarint(m.Inc)
		w.Uvarint(m.Seq)
	case *Token:
		w.Byte(tagToken)
		w.Uvarint(m.Gen)
		w.Uvarint(m.Hop)
		flstore.WriteVec(w, "max toid", m.MaxTOId, flstore.MaxDCs)
		w.Uvarint(m.LastLId)
		flstore.WriteRecords(w, m.Deferred)
		flstore.WriteNodes(w, m.Ring)
		flstore.WriteJournal(w, m.Journal)
		flstore.WriteVec(w, "row sent", m.RowSent, flstore.MaxDCs)
		w.Varint(m.RowSentAtUs)
		for _, c := range wire.SortedKeys(w, "clients logged", m.Logged) {
			w.Uvarint(uint64(c))
			writeSeqSet(w, m.Logged[c])
		}
		w.Uvarint(m.StableLId)
		w.Count("recent assignments", len(m.Recent), wire.MaxCheckpointCount)
		for _, a := range m.Recent {
			w.Uvarint(a.LId)
			w.Uvarint(a.N)
			w.Int("host", a.Host, flstore.MaxDCs-1)
			w.Uvarint(a.TOId)
			w.Uvarint(uint64(a.Client))
			w.Uvarint(a.AppendSeq)
		}
	case *TokenAck:
		w.Byte(tagTokenAck)
		w.Uvarint(m.Gen)
		w.Uvarint(m.Hop)
	case *RowUpdate:
		w.Byte(tagRowUpdate)
		flstore.WriteVec(w, "row", m.Row, flstore.MaxDCs)
		w.Uvarint(m.Gen)
	case *RebuildReq:
		w.Byte(tagRebuildReq)
		w.Uvarint(m.StartUs)
	case *TokenCopy:
		w.Byte(tagTokenCopy)
		w.Uvarint(m.Gen)
		writeToken(w, m.Token)
		w.Bool(m.Added)
	case *ShipBatch:
		w.Byte(tagShipBatch)
		w.Int("from", m.FromDC, flstore.MaxDCs-1)
		flstore.WriteRecords(w, m.Records)
		writeTable(w, m.Table)
	case *TableUpdate:
		w.Byte(tagTableUpdate)
		writeTable(w, m.Table)
	case *AddBatcher:
		w.Byte(tagAddBatcher)
		flstore.WriteNode(w, m.Node)
	case *FilterMapUpdate:
		w.Byte(tagFilterMapUpdate)
		w.Int("host", m.Host, flstore.MaxDCs-1)
		w.Uvarint(m.FromTOId)
		flstore.WriteNodes(w, m.Filters)
	case *AddQueue:
		w.Byte(tagAddQueue)
		flstore.WriteNode(w, m.Node)
	case *AddMaintainer:
		w.Byte(tagAddMaintainer)
		flstore.WriteNode(w, m.Node)
	case *FilterMapSync:
		w.Byte(tagFilterMapSync)
		writeHostEpochs(w, m.Hosts)
	default:
		return flstore.WriteMessage(w, m)
	}
	return true
}

func read(r *wire.Reader) protocol.Message {
	tag := r.Byte("tag")
	switch tag {
	case tagRecordBatch:
		return &RecordBatch{Inc: r.Uvarint("incarnation"), Seq: r.Uvarint("seq"), Records: flstore.ReadRecords(r)}
	case tagBatchAck:
		return &BatchAck{Inc: r.Uvarint("incarnation"), Seq: r.Uvarint("seq")}
	case tagToken:
		tk := &Token{Gen: r.Uvarint("generation"), Hop: r.Uvarint("hop"), MaxTOId: flstore.ReadVec(r, "max toid", flstore.MaxDCs), LastLId: r.Uvarint("last lid"),
			Deferred: flstore.ReadRecords(r), Ring: flstore.ReadNodes(r), Journal: flstore.ReadJournal(r),
			RowSent: flstore.ReadVec(r, "row sent", flstore.MaxDCs), RowSentAtUs: r.Varint("row sent at"), Logged: map[txn.ClientID]*seqSet{}}
		for range r.Count("clients logged", wire.MaxCheckpointCount, 3) {
			c := readClient(r)
			tk.Logged[c] = readSeqSet(r)
		}
		tk.StableLId = r.Uvarint("stable position")
		for range r.Count("recent assignments", wire.MaxCheckpointCount, 6) {
			tk.Recent = append(tk.Recent, Assigned{LId: r.Uvarint("position"), N: r.Uvarint("run length"), Host: r.Int("host", flstore.MaxDCs-1),
				TOId: r.Uvarint("toid"), Client: readClient(r), AppendSeq: r.Uvarint("append number")})
		}
		return tk
	case tagTokenAck:
		return &TokenAck{Gen: r.Uvarint("generation"), Hop: r.Uvarint("hop")}
	case tagRowUpdate:
		return &RowUpdate{Row: flstore.ReadVec(r, "row", flstore.MaxDCs), Gen: r.Uvarint("generation")}
	case tagRebuildReq:
		return &RebuildReq{StartUs: r.Uvarint("start")}
	case tagTokenCopy:
		return &TokenCopy{Gen: r.Uvarint("generation"), Token: readToken(r), Added: r.Bool("added")}
	case tagShipBatch:
		return &ShipBatch{FromDC: r.Int("from", flstore.MaxDCs-1), Records: flstore.ReadRecords(r), Table: readTable(r)}
	case tagTableUpdate:
		return &TableUpdate{Table: readTable(r)}
	case tagAddBatcher:
		return &AddBatcher{Node: flstore.ReadNode(r)}
	case tagFilterMapUpdate:
		return &FilterMapUpdate{Host: r.Int("host", flstore.MaxDCs-1), FromTOId: r.Uvarint("from toid"), Filters: flstore.ReadNodes(r)}
	case tagAddQueue:
		return &AddQueue{Node: flstore.ReadNode(r)}
	case tagAddMaintainer:
		return &AddMaintainer{Node: flstore.ReadNode(r)}
	case tagFilterMapSync:
		return &FilterMapSync{Hosts: readHostEpochs(r)}
	}
	return flstore.ReadMessage(r, tag)
}

func writeTable(w *wire.Writer, t [][]uint64) {
	w.Count("table rows", len(t), flstore.MaxDCs)
	for _, row := range t {
		flstore.WriteVec(w, "table row", row, flstore.MaxDCs)
	}
}

func readTable(r *wire.Reader) [][]uint64 {
	n := r.Count("table rows", flstore.MaxDCs, 1)
	if n == 0 {
		return nil
	}
	t := make([][]uint64, n)
	for i := range t {
		t[i] = flstore.ReadVec(r, "table row", flstore.MaxDCs)
	}
	return t
}

// readClient reads a client id (a uvarint within txn.ClientID's range).
func readClient(r *wire.Reader) txn.ClientID {
	c := r.Uvarint("client")
	if c > uint64(^txn.ClientID(0)) && r.Err() == nil {
		r.Fail("client", "client id %d out of range", c)
	}
	return txn.ClientID(c)
}
