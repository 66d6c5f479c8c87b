package helios

import (
	"errors"
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
)

const nowUs = int64(1_760_000_000_000_000)

func codecTable(n int) []int64 {
	t := make([]int64, n*n)
	for i := range t {
		t[i] = nowUs - int64(i*1500)
	}
	return t
}

func sampleTxn(client txn.ClientID, seq uint32, keys int) *txn.Txn {
	t := &txn.Txn{ID: txn.NewID(client, seq)}
	for k := range keys {
		key := fmt.Sprintf("k%d", 1000+int(seq)*7+k*131)
		t.Reads = append(t.Reads, txn.Read{Key: key, Version: txn.NewID(client+1, seq+uint32(k))})
		t.Writes = append(t.Writes, txn.Write{Key: key, Value: []byte(t.ID.String())})
	}
	return t
}

func sampleMessages() map[string]*Message {
	committed := sampleTxn(3, 9, 2)
	return map[string]*Message{
		"empty full":        {From: 0, SendTS: nowUs, Full: true, Table: codecTable(2)},
		"empty incremental": {From: 1, SendTS: nowUs, Base: make([]int64, 3), Table: codecTable(3)},
		"preparing": {From: 1, SendTS: nowUs, Base: make([]int64, 3), Table: codecTable(3), Records: []rlog.Record[Entry]{
			{Host: 1, TS: nowUs - 10, Payload: Entry{Kind: Preparing, Txn: sampleTxn(1, 1, 5)}},
			{Host: 1, TS: nowUs - 5, Payload: Entry{Kind: Preparing, Txn: &txn.Txn{ID: txn.NewID(1, 2)}}},
		}},
		"all kinds n=5": {From: 4, SendTS: nowUs, Full: true, Table: codecTable(5), Records: []rlog.Record[Entry]{
			{Host: 0, TS: nowUs - 90_000, Payload: Entry{Kind: Preparing, Txn: sampleTxn(2, 4, 3)}},
			{Host: 2, TS: nowUs - 80_000, Payload: Entry{Kind: Finished, Txn: committed, Of: committed.ID, Committed: true}},
			{Host: 3, TS: nowUs - 70_000, Payload: Entry{Kind: Finished, Of: txn.NewID(5, 6)}},
			{Host: 4, TS: nowUs - 1, Payload: Entry{Kind: Nack, Of: txn.NewID(2, 4)}},
			{Host: 4, TS: nowUs, Payload: Entry{Kind: Finished, Of: txn.None}},
		}},
	}
}

// messages is sampleMessages in name order.
func messages() []protocol.Message { return codectest.Messages(sampleMessages()) }

// wellFormed is the protocol's own check of a decoded message.
func wellFormed(m protocol.Message) bool { return m.(*Message).wellFormed() }

// TestCodecRoundTrip: every sample round-trips to a well-formed equal message, and truncations and
// a trailing byte are refused (internal/codectest).
func TestCodecRoundTrip(t *testing.T) {
	msgs := messages()
	codectest.RoundTrip(t, Codec, msgs)
	for _, m := range msgs {
		if !wellFormed(m) {
			t.Errorf("sample %+v is not well formed", m)
		}
	}
}

// TestCodecEntryShapes checks that the codec refuses entries Helios never creates, instead of
// silently dropping fields.
func TestCodecEntryShapes(t *testing.T) {
	tx := sampleTxn(1, 1, 1)
	for name, e := range map[string]Entry{
		"preparing without txn":  {Kind: Preparing},
		"preparing with of":      {Kind: Preparing, Txn: tx, Of: 5},
		"committed without txn":  {Kind: Finished, Committed: true, Of: tx.ID},
		"committed, of mismatch": {Kind: Finished, Committed: true, Txn: tx, Of: tx.ID + 1},
		"aborted with txn":       {Kind: Finished, Txn: tx, Of: tx.ID},
		"nack with txn":          {Kind: Nack, Txn: tx, Of: tx.ID},
		"kind 0":                 {Of: 1},
		"kind 4":                 {Kind: 4, Of: 1},
	} {
		m := &Message{From: 0, SendTS: 1, Base: make([]int64, 2), Table: codecTable(2), Records: []rlog.Record[Entry]{{Payload: e}}}
		if b, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%s: encoded as %x", name, b)
		}
	}
	if _, err := Codec.Append(nil, nil); err == nil {
		t.Errorf("nil message encoded")
	}
	if _, err := Codec.Append(nil, (*Message)(nil)); err == nil {
		t.Errorf("nil *Message encoded")
	}
	// An unknown tag is rejected: message for 1 site from 0, ts 0, seq 1, full, table [0],
	// one record (host 0, ts 0) with tag 9.
	if _, err := Codec.Decode([]byte{1, 0, 0, 1, 1, 0, 1, 0, 0, 9, 0}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("unknown tag: %v", err)
	}
}

// FuzzHeliosDecode: Decode never panics, and whatever decodes is well formed and re-encodes to the
// same bytes (internal/codectest).
func FuzzHeliosDecode(f *testing.F) { codectest.Fuzz(f, Codec, messages(), wellFormed) }

// benchMessage is a realistic full message: a 5-datacenter table and 50 records, half preparing
// and half committed, of transactions reading and writing 5 keys each.
func benchMessage() *Message {
	m := &Message{From: 2, SendTS: nowUs, Full: true, Table: codecTable(5)}
	for i := range 50 {
		tx := sampleTxn(txn.ClientID(100+i%7), uint32(5000+i), 5)
		e := Entry{Kind: Preparing, Txn: tx}
		if i%2 == 1 {
			e = Entry{Kind: Finished, Txn: tx, Of: tx.ID, Committed: true}
		}
		m.Records = append(m.Records, rlog.Record[Entry]{Host: i % 5, TS: nowUs - int64(50-i)*2000, Payload: e})
	}
	return m
}

func BenchmarkHeliosEncode(b *testing.B) {
	m := benchMessage()
	buf, err := Codec.Append(nil, m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = Codec.Append(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeliosDecode(b *testing.B) {
	buf, err := Codec.Append(nil, benchMessage())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Codec.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}
