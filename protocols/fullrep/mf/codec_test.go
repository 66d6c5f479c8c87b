package mf

import (
	"errors"
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
)

func codecTable(n int) []int64 {
	t := make([]int64, n*n)
	for i := range t {
		t[i] = int64(1000 - i) // MF stamps with a logical counter
	}
	return t
}

func sampleMessages() map[string]*Message {
	writes := []txn.Write{{Key: "k1", Value: []byte("t1.1")}, {Key: "k2", Value: []byte{0, 0xff}}, {Key: "k3"}}
	return map[string]*Message{
		"empty full":        {From: 1, SendTS: 1000, Full: true, Table: codecTable(2)},
		"empty incremental": {From: 0, SendTS: 1000, Base: make([]int64, 3), Table: codecTable(3)},
		"all kinds n=5": {From: 3, SendTS: 1000, Base: make([]int64, 5), Table: codecTable(5), Records: []rlog.Record[Entry]{
			{Host: 3, TS: 990, Payload: Entry{Txn: &txn.Txn{ID: txn.NewID(1, 1), Writes: writes}}},
			{Host: 0, TS: 991, Payload: Entry{Txn: &txn.Txn{ID: txn.NewID(1, 2)}}},
			{Host: 1, TS: 995, Payload: Entry{Finished: true, Committed: true, Txn: &txn.Txn{ID: txn.NewID(1, 1), Writes: writes}}},
			{Host: 4, TS: 999, Payload: Entry{Finished: true, Txn: &txn.Txn{ID: txn.NewID(9, 3)}}},
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

func TestCodecEntryShapes(t *testing.T) {
	for name, e := range map[string]Entry{
		"no txn":              {Finished: true},
		"reads":               {Txn: &txn.Txn{ID: 1, Reads: []txn.Read{{Key: "k"}}}},
		"committed, not done": {Committed: true, Txn: &txn.Txn{ID: 1}},
	} {
		m := &Message{From: 0, SendTS: 1, Base: make([]int64, 2), Table: codecTable(2), Records: []rlog.Record[Entry]{{Payload: e}}}
		if b, err := Codec.Append(nil, m); err == nil {
			t.Errorf("%s: encoded as %x", name, b)
		}
	}
	if _, err := Codec.Append(nil, (*Message)(nil)); err == nil {
		t.Errorf("nil *Message encoded")
	}
	// A record whose transaction carries a read: 1 site, from 0, ts 0, seq 1, full, table [0],
	// one record (host 0, ts 0): tag Ep, txn id 1, one read ("k", version 0), no writes.
	b := []byte{1, 0, 0, 1, 1, 0, 1, 0, 0, tagPending, 1, 1, 1, 'k', 0, 0}
	if _, err := Codec.Decode(b); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("entry with reads: %v", err)
	}
	b[9] = 7
	if _, err := Codec.Decode(b); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("unknown tag: %v", err)
	}
}

// FuzzMFDecode: Decode never panics, and whatever decodes is well formed and re-encodes to the
// same bytes (internal/codectest).
func FuzzMFDecode(f *testing.F) { codectest.Fuzz(f, Codec, messages(), wellFormed) }
