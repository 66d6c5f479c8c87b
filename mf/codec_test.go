package mf

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/rlog"
	"github.com/meridian-kv/meridian/txn"
	"github.com/meridian-kv/meridian/wire"
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
		"empty full":        {From: 1, SendTS: 1000, Seq: 1, Full: true, Table: codecTable(2)},
		"empty incremental": {From: 0, SendTS: 1000, Seq: 2, Table: codecTable(3)},
		"all kinds n=5": {From: 3, SendTS: 1000, Seq: 40, Table: codecTable(5), Records: []rlog.Record[Entry]{
			{Host: 3, TS: 990, Payload: Entry{Txn: &txn.Txn{ID: txn.NewID(1, 1), Writes: writes}}},
			{Host: 0, TS: 991, Payload: Entry{Txn: &txn.Txn{ID: txn.NewID(1, 2)}}},
			{Host: 1, TS: 995, Payload: Entry{Finished: true, Committed: true, Txn: &txn.Txn{ID: txn.NewID(1, 1), Writes: writes}}},
			{Host: 4, TS: 999, Payload: Entry{Finished: true, Txn: &txn.Txn{ID: txn.NewID(9, 3)}}},
		}},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for name, m := range sampleMessages() {
		b, err := Codec.Append([]byte("dst"), m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := Codec.Decode(b[3:])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%s: got %+v, want %+v", name, got, m)
		}
		b = b[3:]
		for n := range len(b) {
			if msg, err := Codec.Decode(b[:n:n]); !errors.Is(err, wire.ErrMalformed) || msg != nil {
				t.Fatalf("%s: prefix of %d/%d bytes: %v, %v", name, n, len(b), msg, err)
			}
		}
		if _, err := Codec.Decode(append(b, 0)); err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Errorf("%s: trailing byte: %v", name, err)
		}
	}
}

func TestCodecEntryShapes(t *testing.T) {
	for name, e := range map[string]Entry{
		"no txn":              {Finished: true},
		"reads":               {Txn: &txn.Txn{ID: 1, Reads: []txn.Read{{Key: "k"}}}},
		"committed, not done": {Committed: true, Txn: &txn.Txn{ID: 1}},
	} {
		m := &Message{From: 0, SendTS: 1, Seq: 1, Table: codecTable(2), Records: []rlog.Record[Entry]{{Payload: e}}}
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

// FuzzMFDecode feeds arbitrary bytes to Codec.Decode: it must never panic, and whatever decodes
// must be well formed, re-encode to the same bytes and decode to an equal message.
func FuzzMFDecode(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := Codec.Append(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Codec.Decode(b)
		if err != nil {
			if m != nil {
				t.Fatalf("error %v with a message", err)
			}
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("error does not wrap wire.ErrMalformed: %v", err)
			}
			return
		}
		if !m.(*Message).wellFormed() {
			t.Fatalf("decoded a malformed message: %+v", m)
		}
		again, err := Codec.Append(nil, m)
		if err != nil {
			t.Fatalf("decoded message does not re-encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encodes differently:\n in %x\nout %x", b, again)
		}
		m2, err := Codec.Decode(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
