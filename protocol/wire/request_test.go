package wire

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

func sampleTxn() *txn.Txn {
	return &txn.Txn{
		ID:     txn.NewID(7, 42),
		Reads:  []txn.Read{{Key: "k1", Version: txn.NewID(3, 9)}, {Key: "k2", Version: txn.None}},
		Writes: []txn.Write{{Key: "k1", Value: []byte("v1")}, {Key: "k3"}},
	}
}

func sampleRequests() []protocol.Request {
	return []protocol.Request{
		{},
		{Client: 1, Seq: 1, Kind: protocol.Get, Key: "k17"},
		{Client: 1<<32 - 1, Seq: 1<<64 - 1, Kind: protocol.Commit, Txn: sampleTxn()},
		{Client: 2, Seq: 3, Kind: protocol.Commit, Txn: &txn.Txn{ID: txn.NewID(2, 3)}},
		{Client: 2, Seq: 4, Kind: protocol.ReadSnapshot, Keys: []string{"a", "", "k\x00\xff"}},
		{Client: 5, Seq: 6, Kind: 200, Key: "odd kind", Keys: []string{"x"}, Txn: sampleTxn()},
	}
}

func sampleReplies() []protocol.Reply {
	return []protocol.Reply{
		{},
		{Client: 1, Seq: 1, Value: []byte("hello"), Version: txn.NewID(3, 4)},
		{Client: 1, Seq: 2, Version: txn.None},
		{Client: 2, Seq: 5, Snapshot: []protocol.SnapshotRead{
			{Key: "a", Value: []byte{0, 1, 2}, Version: txn.NewID(1, 1)},
			{Key: "b"},
		}},
		{Client: 3, Seq: 7, Status: txn.Committed},
		{Client: 3, Seq: 8, Status: txn.Aborted, Reason: txn.ReasonRemoteConflict},
		{Client: 3, Seq: 9, Err: "helios: unknown request kind 9"},
	}
}

func TestRequestRoundTrip(t *testing.T) {
	for i, r := range sampleRequests() {
		b, err := AppendRequest([]byte("prefix"), &r)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("request %d: AppendRequest clobbered dst", i)
		}
		got, err := DecodeRequest(b[len("prefix"):])
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("request %d: got %+v, want %+v", i, got, r)
		}
		checkPrefixesAndTrailer(t, b[len("prefix"):], func(b []byte) error { _, err := DecodeRequest(b); return err })
	}
}

// testOp is a protocol operation for the tests, with testCodec its codec: a tag byte, then a
// string.
type testOp struct{ S string }

func (*testOp) SizeBytes() int { return 8 }

type testCodec struct{}

func (testCodec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	op, ok := m.(*testOp)
	if !ok || op == nil {
		return dst, errors.New("testCodec: not a *testOp")
	}
	return AppendString(append(dst, 7), op.S), nil
}

func (testCodec) Decode(b []byte) (protocol.Message, error) {
	d := NewDecoder(b)
	if tag, err := d.Byte("tag"); err != nil || tag != 7 {
		return nil, errors.New("testCodec: bad tag")
	}
	s, err := d.String("s", 100)
	if err == nil {
		err = d.Done()
	}
	return &testOp{S: s}, err
}

func TestRequestWithOpRoundTrip(t *testing.T) {
	for i, r := range []protocol.Request{
		{Client: 9, Seq: 10, Kind: protocol.Operation, Op: &testOp{S: "multiget"}},
		{Client: 9, Seq: 11, Kind: protocol.Operation, Op: &testOp{}},
		{Kind: protocol.Operation, Key: "odd", Txn: sampleTxn(), Op: &testOp{S: "x"}},
	} {
		b, err := AppendRequestWith([]byte("prefix"), &r, testCodec{})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got, err := DecodeRequestWith(b[len("prefix"):], testCodec{})
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("request %d: got %+v, %v; want %+v", i, got, err, r)
		}
		decode := func(b []byte) error { _, err := DecodeRequestWith(b, testCodec{}); return err }
		checkPrefixesAndTrailer(t, b[len("prefix"):], decode)
		if _, err := DecodeRequest(b[len("prefix"):]); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "no codec") {
			t.Errorf("request %d decoded without a codec: %v", i, err)
		}
		if b, err := AppendRequest([]byte("x"), &r); err == nil || string(b) != "x" {
			t.Errorf("request %d encoded without a codec: %v", i, err)
		}
	}
	// A request without an Op is the same with or without a codec.
	for i, r := range sampleRequests() {
		a, err1 := AppendRequest(nil, &r)
		b, err2 := AppendRequestWith(nil, &r, testCodec{})
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("request %d: encodings differ with a codec (%v, %v)", i, err1, err2)
		}
	}
}

func TestRequestOpErrors(t *testing.T) {
	r := protocol.Request{Kind: protocol.Operation, Op: &testOp{S: "ok"}}
	b, err := AppendRequestWith(nil, &r, testCodec{})
	if err != nil {
		t.Fatal(err)
	}
	// The codec rejects the operation (bad tag): a malformed request naming the operation.
	b[len(b)-len("ok")-2] = 8
	if _, err := DecodeRequestWith(b, testCodec{}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "request operation") {
		t.Errorf("operation the codec rejects: %v", err)
	}
	// The codec cannot encode it.
	bad := protocol.Request{Op: &struct{ testOp }{}}
	if b, err := AppendRequestWith([]byte("x"), &bad, testCodec{}); err == nil || string(b) != "x" {
		t.Errorf("unencodable operation: %d bytes, %v", len(b), err)
	}
	// An operation longer than MaxOpLen.
	long := protocol.Request{Op: &bigOp{}}
	if b, err := AppendRequestWith([]byte("x"), &long, bigCodec{}); err == nil || string(b) != "x" {
		t.Errorf("operation over MaxOpLen: %d bytes, %v", len(b), err)
	}
	// A reply carrying an operation is refused, not silently truncated.
	if _, err := AppendReply(nil, &protocol.Reply{Op: &testOp{}}); err == nil {
		t.Errorf("reply with an operation encoded")
	}
}

type bigOp struct{}

func (*bigOp) SizeBytes() int { return MaxOpLen + 1 }

type bigCodec struct{}

func (bigCodec) Append(dst []byte, _ protocol.Message) ([]byte, error) {
	return append(dst, make([]byte, MaxOpLen+1)...), nil
}

func (bigCodec) Decode([]byte) (protocol.Message, error) { return nil, errors.New("bigCodec") }

func TestReplyRoundTrip(t *testing.T) {
	for i, r := range sampleReplies() {
		b, err := AppendReply(nil, &r)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		got, err := DecodeReply(b)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("reply %d: got %+v, want %+v", i, got, r)
		}
		checkPrefixesAndTrailer(t, b, func(b []byte) error { _, err := DecodeReply(b); return err })
	}
}

// checkPrefixesAndTrailer checks that decode rejects every strict prefix of a valid encoding b
// and b with a trailing byte, with an ErrMalformed error and no panic.
func checkPrefixesAndTrailer(t *testing.T, b []byte, decode func([]byte) error) {
	t.Helper()
	for n := range len(b) {
		if err := decode(b[:n:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d/%d bytes: got %v, want ErrMalformed", n, len(b), err)
		}
	}
	if err := decode(append(b[:len(b):len(b)], 0)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "trailing") {
		t.Fatalf("trailing byte: got %v, want a trailing-bytes error", err)
	}
}

func TestEncodeLimits(t *testing.T) {
	long := strings.Repeat("k", MaxKeyLen+1)
	for i, r := range []protocol.Request{
		{Key: long},
		{Keys: []string{"a", long}},
		{Txn: &txn.Txn{Reads: []txn.Read{{Key: long}}}},
		{Txn: &txn.Txn{Writes: []txn.Write{{Key: "k", Value: make([]byte, MaxValueLen+1)}}}},
		{Txn: &txn.Txn{Writes: make([]txn.Write, MaxTxnOps+1)}},
	} {
		b, err := AppendRequest([]byte("x"), &r)
		if err == nil || string(b) != "x" {
			t.Errorf("request %d over a limit: got %d bytes, %v; want an error and dst unchanged", i, len(b), err)
		}
	}
	for i, r := range []protocol.Reply{
		{Value: make([]byte, MaxValueLen+1)},
		{Err: strings.Repeat("e", MaxTextLen+1)},
		{Snapshot: []protocol.SnapshotRead{{Key: long}}},
	} {
		if _, err := AppendReply(nil, &r); err == nil {
			t.Errorf("reply %d over a limit encoded", i)
		}
	}
	if _, err := AppendTxn(nil, nil); err == nil {
		t.Errorf("nil transaction encoded")
	}
	// At the limits exactly, everything round-trips.
	r := protocol.Request{Key: long[1:], Txn: &txn.Txn{Writes: []txn.Write{{Key: long[1:], Value: make([]byte, MaxValueLen)}}}}
	b, err := AppendRequest(nil, &r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeRequest(b); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("request at the limits: %v", err)
	}
}

// TestHostileCounts checks that counts the input cannot hold are refused before allocation.
func TestHostileCounts(t *testing.T) {
	// Request: client 0, seq 0, kind 0, key "", then MaxSnapshotKeys keys in 4 bytes.
	b := []byte{0, 0, 0, 0, 0x80, 0x80, 0x04, 0, 0, 0, 0}
	if _, err := DecodeRequest(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("huge key count: %v", err)
	}
	// Reply snapshot of 60000 entries in a few bytes.
	b = []byte{0, 0, 0, 0, 0xe0, 0xd4, 0x03, 0, 0, 0}
	if _, err := DecodeReply(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("huge snapshot: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		DecodeReply(b)
	}
	runtime.ReadMemStats(&after)
	if n := (after.TotalAlloc - before.TotalAlloc) / 20; n > 2048 {
		t.Errorf("rejecting a huge snapshot count allocated %d bytes", n)
	}
}

// FuzzRequestDecode feeds arbitrary bytes to DecodeRequestWith (with testCodec for operations)
// and DecodeReply: they must never panic, and whatever decodes must re-encode to the same bytes (the format is canonical) and
// decode to an equal value.
func FuzzRequestDecode(f *testing.F) {
	for _, r := range sampleRequests() {
		b, err := AppendRequest(nil, &r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	op := protocol.Request{Client: 3, Seq: 4, Kind: protocol.Operation, Op: &testOp{S: "op"}}
	b, err := AppendRequestWith(nil, &op, testCodec{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, r := range sampleReplies() {
		b, err := AppendReply(nil, &r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := DecodeRequestWith(b, testCodec{}); err == nil {
			again, err := AppendRequestWith(nil, &req, testCodec{})
			if err != nil {
				t.Fatalf("decoded request does not re-encode: %v", err)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("request re-encodes differently:\n in %x\nout %x", b, again)
			}
			req2, err := DecodeRequestWith(again, testCodec{})
			if err != nil || !reflect.DeepEqual(req, req2) {
				t.Fatalf("request round trip: %v\n%+v\n%+v", err, req, req2)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("request error does not wrap ErrMalformed: %v", err)
		}
		if rep, err := DecodeReply(b); err == nil {
			again, err := AppendReply(nil, &rep)
			if err != nil {
				t.Fatalf("decoded reply does not re-encode: %v", err)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("reply re-encodes differently:\n in %x\nout %x", b, again)
			}
			rep2, err := DecodeReply(again)
			if err != nil || !reflect.DeepEqual(rep, rep2) {
				t.Fatalf("reply round trip: %v\n%+v\n%+v", err, rep, rep2)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("reply error does not wrap ErrMalformed: %v", err)
		}
	})
}
