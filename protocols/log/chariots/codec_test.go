package chariots

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

func sampleMessages() []protocol.Message {
	rec := &Record{Host: 1, TOId: 7, LId: 12, Deps: []uint64{3, 6, 0}, Tags: []flstore.Tag{{Name: "k:x", Value: []byte("10")}, {Name: "t"}},
		Body: []byte("body"), Client: 9, AppendSeq: 4, CallSeq: 17}
	local := &Record{Host: 0, WantDeps: []uint64{0, 2, 1}, MinLId: 5, Client: 3, AppendSeq: 1}
	noop := &Record{Host: 2, TOId: 1, LId: 1, NoOp: true, Collected: true}
	j := flstore.Journal{{StartLId: 1, Maintainers: []protocol.NodeID{0, 1}, B: 1000}, {StartLId: 4001, Maintainers: []protocol.NodeID{0, 1, 5}, B: 1000}}
	table := [][]uint64{{1, 2, 3}, {0, 2, 0}, {1, 0, 3}}
	return []protocol.Message{
		&RecordBatch{Inc: 1234, Seq: 3, Records: []*Record{rec, local}},
		&RecordBatch{Records: []*Record{noop}},
		&BatchAck{Inc: 1234, Seq: 3},
		&Token{Hop: 9, MaxTOId: []uint64{4, 5, 6}, LastLId: 15, Deferred: []*Record{rec}, Ring: []protocol.NodeID{3, 4}, Journal: j,
			RowSent: []uint64{4, 5, 6}, RowSentAtUs: -5, Logged: map[txn.ClientID]*seqSet{3: {upTo: 4, above: map[uint64]bool{6: true}}, 9: {upTo: 1}}},
		&Token{MaxTOId: []uint64{0}, Ring: []protocol.NodeID{3}, Journal: j[:1], Logged: map[txn.ClientID]*seqSet{}},
		&Token{Gen: 7, Hop: 2, MaxTOId: []uint64{4, 1}, LastLId: 5, Ring: []protocol.NodeID{3}, Journal: j[:1],
			Logged: map[txn.ClientID]*seqSet{9: {upTo: 2}}, StableLId: 3, Recent: []Assigned{{LId: 4, N: 1, Host: 0, TOId: 4, Client: 9, AppendSeq: 3}, {LId: 5, N: 2, Host: 1, TOId: 1}}},
		&TokenAck{Gen: 7, Hop: 9},
		&RowUpdate{Row: []uint64{1, 2}, Gen: 7},
		&RebuildReq{StartUs: 1_000_000},
		&TokenCopy{Gen: 8},
		&TokenCopy{Gen: 8, Token: &Token{Gen: 7, MaxTOId: []uint64{0}, Ring: []protocol.NodeID{3}, Journal: j[:1], Logged: map[txn.ClientID]*seqSet{}}},
		&ShipBatch{FromDC: 2, Records: []*Record{rec}, Table: table},
		&ShipBatch{FromDC: 1, Table: table},
		&TableUpdate{Table: table},
		&AddBatcher{Node: 7},
		&FilterMapUpdate{Host: 1, FromTOId: 101, Filters: []protocol.NodeID{8, 4}},
		&AddQueue{Node: 6},
		&AddMaintainer{Node: 2},
		&flstore.AppendOp{Record: local},
		&flstore.AppendResult{TOId: 3, LId: 9},
		&flstore.HLQuery{},
		&flstore.HLResult{HL: 1900, Journal: j},
		&flstore.ReadOp{From: 1, To: 100, HL: 50},
		&flstore.ReadResult{Records: []*Record{rec, noop}, HL: 50},
		&flstore.LookupOp{Tag: "k:x", Op: flstore.Ge, Value: []byte("5"), MaxLId: 40, Limit: 3, MostRecentFirst: true},
		&flstore.LookupResult{LIds: []uint64{40, 39}},
		&flstore.HLGossip{Next: flstore.None, Contig: 3000, Journal: j, Gen: 7, HL: 2990, Frozen: true},
		&flstore.IndexAdd{Entries: []flstore.IndexEntry{{Tag: "k", Value: []byte("v"), LId: 3}, {Tag: "t", LId: 4}}},
		&flstore.IndexAck{Entries: []flstore.IndexEntry{{Tag: "k", LId: 3}}},
		&flstore.Assign{Records: []*Record{rec}, Journal: j, Gen: 7},
		&flstore.PersistAck{LIds: []uint64{12}, HL: 11, Gen: 7},
		&flstore.Freeze{Gen: 8},
		&flstore.FreezeAck{Gen: 8, Next: 13, Journal: j},
		&flstore.Truncate{Gen: 8, T: 12, From: 6, Journal: j},
		&flstore.TruncateAck{Gen: 8, Records: []*Record{rec}},
		&flstore.FetchReq{FromTOId: 5, Limit: 1000, Horizon: []uint64{1, 2, 3}},
		&flstore.FetchResp{FromTOId: 5, Records: []*Record{rec}},
		&FilterMapSync{Hosts: [][]FilterEpoch{{{FromTOId: 1, Filters: []protocol.NodeID{4}}, {FromTOId: 101, Filters: []protocol.NodeID{8, 4}}}, {{FromTOId: 1, Filters: []protocol.NodeID{8}}}}},
	}
}

// TestCodecRoundTrip encodes every message shape of a Chariots deployment (FLStore's
// included), decodes it back unchanged, and refuses every truncation and a trailing byte.
func TestCodecRoundTrip(t *testing.T) {
	codectest.RoundTrip(t, Codec, sampleMessages())
	var fl []protocol.Message
	for _, m := range sampleMessages() {
		if _, err := flstore.Codec.Append(nil, m); err == nil {
			fl = append(fl, m)
		}
	}
	if len(fl) != 19 {
		t.Fatalf("flstore's codec encodes %d of the samples, want its 19 messages", len(fl))
	}
	codectest.RoundTrip(t, flstore.Codec, fl)
}

// TestCodecRefuses checks that malformed messages are not encoded.
func TestCodecRefuses(t *testing.T) {
	for _, m := range []protocol.Message{
		nil,
		(*Token)(nil),
		&flstore.AppendOp{},
		&RecordBatch{Records: []*Record{nil}},
		&ShipBatch{FromDC: -1},
		&flstore.LookupOp{Op: 9},
		&AddQueue{Node: -1},
	} {
		if _, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%#v encoded", m)
		}
	}
}

// FuzzCodec checks that Decode never panics, refuses garbage, and decodes only canonical
// encodings.
func FuzzCodec(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }

// TestHostileInput hands every node of a two-datacenter deployment every sample message (and
// malformed records: a host out of range, a short dependency vector, position 0) from every
// other node, and as client requests: nothing may panic, and the invariants must still hold.
func TestHostileInput(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"spare_queues": "1"})
	bad := []*Record{{Host: 9, TOId: 1, LId: 1, Deps: []uint64{0}}, {Host: 1, TOId: 2, Deps: []uint64{1}}, {Host: 0}}
	msgs := append(sampleMessages(), &RecordBatch{Seq: 1, Records: bad}, &flstore.Assign{Records: bad},
		&flstore.FetchResp{Records: bad}, &ShipBatch{FromDC: 1, Records: bad, Table: [][]uint64{{1}}},
		&Token{Hop: 99, MaxTOId: []uint64{1, 1}, RowSent: []uint64{0, 0}, Ring: []protocol.NodeID{0, 1, 2}, Journal: flstore.Journal{{StartLId: 1, B: 1, Maintainers: []protocol.NodeID{0}}}})
	for to := range w.Reps {
		for i, m := range msgs {
			from := protocol.NodeID((to + i) % len(w.Reps))
			w.Reps[to].HandleMessage(from, m)
			w.Reps[to].HandleRequest(protocol.Request{Client: 5, Seq: uint64(i + 1), Kind: protocol.Operation, Op: m})
		}
	}
	w.appendAt(dcA, 1, "a")
	w.appendAt(dcB, 2, "b")
	w.converged(2_000_000)
}
