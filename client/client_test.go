package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// fakeTransport records requests. With serve set it answers synchronously; otherwise calls wait
// in pending until the test answers them.
type fakeTransport struct {
	now     int64
	reqs    []protocol.Request
	serve   func(protocol.Request) protocol.Reply
	pending []call
}

type call struct {
	req  protocol.Request
	done func(protocol.Reply)
}

func (f *fakeTransport) Call(req protocol.Request, done func(protocol.Reply)) {
	f.reqs = append(f.reqs, req)
	if f.serve != nil {
		done(f.serve(req))
		return
	}
	f.pending = append(f.pending, call{req, done})
}

func (f *fakeTransport) NowUs() int64 { return f.now }

// answer delivers r to the oldest pending call, echoing its Seq.
func (f *fakeTransport) answer(t *testing.T, r protocol.Reply) protocol.Request {
	t.Helper()
	if len(f.pending) == 0 {
		t.Fatal("no pending call to answer")
	}
	c := f.pending[0]
	f.pending = f.pending[1:]
	r.Seq = c.req.Seq
	c.done(r)
	return c.req
}

const clientID txn.ClientID = 7

func newSession(tr Transport) (*Session, *[]history.Txn) {
	var recorded []history.Txn
	s := NewSession(tr, clientID, "V", "V/3", func(h history.Txn) { recorded = append(recorded, h) })
	return s, &recorded
}

// getResult captures one Get completion.
type getResult struct {
	called bool
	value  []byte
	err    error
}

func get(tx *Tx, key string) *getResult {
	r := &getResult{}
	tx.Get(key, func(v []byte, err error) {
		if r.called {
			panic("Get completion called twice")
		}
		r.called, r.value, r.err = true, v, err
	})
	return r
}

// commitResult captures one Commit completion.
type commitResult struct {
	called bool
	Result
}

func commit(tx *Tx) *commitResult {
	res := &commitResult{}
	tx.Commit(func(r Result) {
		if res.called {
			panic("Commit completion called twice")
		}
		res.called, res.Result = true, r
	})
	return res
}

func TestIDsAndRequestSeqsAreUniqueAndIncreasing(t *testing.T) {
	tr := &fakeTransport{serve: func(req protocol.Request) protocol.Reply {
		return protocol.Reply{Seq: req.Seq, Status: txn.Committed}
	}}
	s, _ := newSession(tr)
	if s.Name() != "V/3" {
		t.Fatalf("Name = %q", s.Name())
	}
	var ids []txn.ID
	for i := range 5 {
		tx := s.Begin()
		ids = append(ids, tx.ID())
		get(tx, "a")
		get(tx, "b")
		if err := tx.Put("c", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		commit(tx)
	}
	for i, id := range ids {
		if id != txn.NewID(clientID, uint32(i+1)) || id.Client() != clientID {
			t.Fatalf("transaction %d has id %v, want %v", i, id, txn.NewID(clientID, uint32(i+1)))
		}
	}
	// Every request of the session has a fresh, increasing Seq.
	for i, r := range tr.reqs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("request %d has Seq %d, want %d", i, r.Seq, i+1)
		}
	}
	if len(tr.reqs) != 15 {
		t.Fatalf("%d requests, want 15", len(tr.reqs))
	}
}

func TestGetRecordsVersionAndCaches(t *testing.T) {
	tr := &fakeTransport{}
	s, _ := newSession(tr)
	tx := s.Begin()
	writer := txn.NewID(3, 9)
	g := get(tx, "k")
	if g.called {
		t.Fatal("Get completed before the reply")
	}
	req := tr.answer(t, protocol.Reply{Value: []byte("v1"), Version: writer})
	if req.Kind != protocol.Get || req.Key != "k" {
		t.Fatalf("request %+v, want a Get of k", req)
	}
	if !g.called || g.err != nil || string(g.value) != "v1" {
		t.Fatalf("Get = %+v, want v1", g)
	}
	g2 := get(tx, "k")
	if !g2.called || string(g2.value) != "v1" || len(tr.reqs) != 1 {
		t.Fatalf("second Get of k: %+v with %d requests, want v1 from the cache and no request", g2, len(tr.reqs))
	}
	commit(tx)
	c := tr.answer(t, protocol.Reply{Status: txn.Committed})
	if want := []txn.Read{{Key: "k", Version: writer}}; !slices.Equal(c.Txn.Reads, want) {
		t.Fatalf("commit reads %v, want %v", c.Txn.Reads, want)
	}
}

func TestReadYourWritesAndPutReplaces(t *testing.T) {
	tr := &fakeTransport{}
	s, _ := newSession(tr)
	tx := s.Begin()
	if err := tx.Put("w", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if g := get(tx, "w"); !g.called || string(g.value) != "first" || len(tr.reqs) != 0 {
		t.Fatalf("Get after Put = %+v with %d requests, want first and no request", g, len(tr.reqs))
	}
	if err := tx.Put("w", []byte("second")); err != nil {
		t.Fatal(err)
	}
	if g := get(tx, "w"); string(g.value) != "second" {
		t.Fatalf("Get after the second Put = %q", g.value)
	}
	// A key read first, then written: the read stays recorded and one write is added.
	get(tx, "r")
	tr.answer(t, protocol.Reply{Value: []byte("old"), Version: txn.NewID(1, 1)})
	if err := tx.Put("r", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put("r", []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if g := get(tx, "r"); string(g.value) != "newer" {
		t.Fatalf("Get of a read-then-written key = %q, want newer", g.value)
	}
	commit(tx)
	c := tr.answer(t, protocol.Reply{Status: txn.Committed})
	want := []txn.Write{{Key: "w", Value: []byte("second")}, {Key: "r", Value: []byte("newer")}}
	if !slices.EqualFunc(c.Txn.Writes, want, func(a, b txn.Write) bool { return a.Key == b.Key && string(a.Value) == string(b.Value) }) {
		t.Fatalf("commit writes %v, want %v (one entry per key, latest value)", c.Txn.Writes, want)
	}
	if wantR := []txn.Read{{Key: "r", Version: txn.NewID(1, 1)}}; !slices.Equal(c.Txn.Reads, wantR) {
		t.Fatalf("commit reads %v, want %v", c.Txn.Reads, wantR)
	}
	if msg := protocol.ValidateCommit(c); msg != "" {
		t.Fatalf("the client built an invalid commit: %s", msg)
	}
}

func TestCommitSendsTxnReportsLatencyAndRecordsHistory(t *testing.T) {
	tr := &fakeTransport{now: 1000}
	s, recorded := newSession(tr)
	tx := s.Begin()
	tr.now = 1200
	get(tx, "a")
	tr.answer(t, protocol.Reply{Value: []byte("x"), Version: txn.NewID(2, 2)})
	if err := tx.Put("b", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put("c", []byte("z")); err != nil {
		t.Fatal(err)
	}
	tr.now = 2000
	res := commit(tx)
	if res.called {
		t.Fatal("Commit completed before the reply")
	}
	if len(*recorded) != 0 {
		t.Fatal("history recorded before the outcome")
	}
	tr.now = 5500
	req := tr.answer(t, protocol.Reply{Status: txn.Aborted, Reason: txn.ReasonRemoteConflict})
	if req.Kind != protocol.Commit || req.Txn == nil || req.Txn.ID != tx.ID() {
		t.Fatalf("commit request %+v", req)
	}
	if !res.called || res.Status != txn.Aborted || res.Reason != txn.ReasonRemoteConflict || res.Err != nil || res.CommitLatencyUs != 3500 {
		t.Fatalf("Result %+v, want aborted (remote-conflict) with latency 3500", res.Result)
	}
	if len(*recorded) != 1 {
		t.Fatalf("%d transactions recorded, want 1", len(*recorded))
	}
	h := (*recorded)[0]
	want := history.Txn{ID: tx.ID(), DC: "V", Client: "V/3", Status: txn.Aborted, Reason: txn.ReasonRemoteConflict,
		StartUs: 1000, EndUs: 5500, Reads: []txn.Read{{Key: "a", Version: txn.NewID(2, 2)}}, Writes: []string{"b", "c"}}
	if h.ID != want.ID || h.DC != want.DC || h.Client != want.Client || h.Status != want.Status || h.Reason != want.Reason ||
		h.StartUs != want.StartUs || h.EndUs != want.EndUs || !slices.Equal(h.Reads, want.Reads) || !slices.Equal(h.Writes, want.Writes) {
		t.Fatalf("recorded %+v, want %+v", h, want)
	}

	// A committed read-only transaction.
	tx2 := s.Begin()
	var got Result
	tr.now = 10_000
	tx2.Commit(func(r Result) { got = r })
	tr.now = 13_250
	tr.answer(t, protocol.Reply{Status: txn.Committed})
	if got.Status != txn.Committed || got.Err != nil || got.CommitLatencyUs != 3250 || got.Reason != "" {
		t.Fatalf("Result %+v, want committed with latency 3250", got)
	}
	if h := (*recorded)[1]; h.Status != txn.Committed || h.StartUs != 5500 || h.EndUs != 13_250 || len(h.Reads) != 0 || len(h.Writes) != 0 {
		t.Fatalf("read-only commit recorded as %+v", h)
	}
}

func TestFinishedTransactionErrors(t *testing.T) {
	tr := &fakeTransport{}
	s, recorded := newSession(tr)
	tx := s.Begin()
	commit(tx)
	// Finished as soon as Commit is called, before the reply.
	for _, stage := range []string{"commit pending", "commit answered"} {
		n := len(tr.reqs)
		if g := get(tx, "k"); !g.called || !errors.Is(g.err, ErrFinished) {
			t.Fatalf("%s: Get = %+v, want ErrFinished", stage, g)
		}
		if err := tx.Put("k", nil); !errors.Is(err, ErrFinished) {
			t.Fatalf("%s: Put = %v, want ErrFinished", stage, err)
		}
		res := commit(tx)
		if !res.called || res.Status != txn.Aborted || !errors.Is(res.Err, ErrFinished) {
			t.Fatalf("%s: second Commit = %+v, want aborted with ErrFinished", stage, res.Result)
		}
		if len(tr.reqs) != n {
			t.Fatalf("%s: a finished transaction sent a request", stage)
		}
		if stage == "commit pending" {
			tr.answer(t, protocol.Reply{Status: txn.Committed})
		}
	}
	if len(*recorded) != 1 {
		t.Fatalf("%d transactions recorded, want 1", len(*recorded))
	}
}

func TestEmptyKeysAreRejectedLocally(t *testing.T) {
	tr := &fakeTransport{}
	s, _ := newSession(tr)
	tx := s.Begin()
	if g := get(tx, ""); !g.called || g.err == nil {
		t.Fatalf("Get(\"\") = %+v, want an error", g)
	}
	if err := tx.Put("", []byte("v")); err == nil {
		t.Fatal("Put(\"\") accepted")
	}
	var snapErr error
	called := false
	s.ReadSnapshot([]string{"a", ""}, func(_ []protocol.SnapshotRead, err error) { called, snapErr = true, err })
	if !called || snapErr == nil {
		t.Fatal("ReadSnapshot with an empty key did not fail")
	}
	if len(tr.reqs) != 0 {
		t.Fatalf("%d requests sent for empty keys", len(tr.reqs))
	}
	// The transaction is still usable.
	if err := tx.Put("a", nil); err != nil {
		t.Fatalf("Put after a rejected empty key: %v", err)
	}
}

func TestReplyErrors(t *testing.T) {
	t.Run("Get", func(t *testing.T) {
		tr := &fakeTransport{}
		s, _ := newSession(tr)
		tx := s.Begin()
		g := get(tx, "k")
		tr.answer(t, protocol.Reply{Err: "replica is sad", Value: []byte("junk"), Version: txn.NewID(1, 1)})
		if g.err == nil || !strings.Contains(g.err.Error(), "replica is sad") || g.value != nil {
			t.Fatalf("Get = %+v, want the replica's error", g)
		}
		// The failed read is neither recorded nor cached.
		get(tx, "k")
		if len(tr.reqs) != 2 {
			t.Fatalf("Get after a failed Get sent %d requests in all, want 2", len(tr.reqs))
		}
		tr.answer(t, protocol.Reply{Value: []byte("ok"), Version: txn.NewID(2, 2)})
		commit(tx)
		c := tr.answer(t, protocol.Reply{Status: txn.Committed})
		if want := []txn.Read{{Key: "k", Version: txn.NewID(2, 2)}}; !slices.Equal(c.Txn.Reads, want) {
			t.Fatalf("reads %v, want %v", c.Txn.Reads, want)
		}
	})
	for _, c := range []struct {
		name  string
		reply protocol.Reply
		want  string
	}{
		{"commit error", protocol.Reply{Err: "malformed", Status: txn.Committed}, "malformed"},
		{"commit without a status", protocol.Reply{}, "failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &fakeTransport{}
			s, recorded := newSession(tr)
			res := commit(s.Begin())
			tr.answer(t, c.reply)
			if !res.called || res.Status != txn.Unknown || res.Err == nil || !strings.Contains(res.Err.Error(), c.want) {
				t.Fatalf("Result %+v, want an unknown outcome with an error mentioning %q", res.Result, c.want)
			}
			if len(*recorded) != 1 || (*recorded)[0].Status != txn.Unknown {
				t.Fatalf("recorded %+v, want one transaction of unknown outcome", *recorded)
			}
		})
	}
}

func TestReadSnapshot(t *testing.T) {
	tr := &fakeTransport{}
	s, recorded := newSession(tr)
	var got []protocol.SnapshotRead
	var gotErr error
	s.ReadSnapshot([]string{"a", "b"}, func(r []protocol.SnapshotRead, err error) { got, gotErr = r, err })
	want := []protocol.SnapshotRead{{Key: "a", Value: []byte("1"), Version: txn.NewID(1, 1)}, {Key: "b"}}
	req := tr.answer(t, protocol.Reply{Snapshot: want})
	if req.Kind != protocol.ReadSnapshot || !slices.Equal(req.Keys, []string{"a", "b"}) {
		t.Fatalf("request %+v, want a ReadSnapshot of a, b", req)
	}
	if gotErr != nil || len(got) != 2 || string(got[0].Value) != "1" || got[1].Version != txn.None {
		t.Fatalf("ReadSnapshot = %+v, %v", got, gotErr)
	}
	s.ReadSnapshot([]string{"a"}, func(r []protocol.SnapshotRead, err error) { got, gotErr = r, err })
	tr.answer(t, protocol.Reply{Err: "nope"})
	if gotErr == nil || got != nil {
		t.Fatalf("ReadSnapshot with an error reply = %+v, %v", got, gotErr)
	}
	if len(*recorded) != 0 {
		t.Fatal("snapshot reads were recorded as transactions")
	}
}

func TestNilRecorderIsAllowed(t *testing.T) {
	tr := &fakeTransport{serve: func(req protocol.Request) protocol.Reply {
		return protocol.Reply{Seq: req.Seq, Status: txn.Committed}
	}}
	s := NewSession(tr, 1, "A", "A/0", nil)
	if res := commit(s.Begin()); !res.called || res.Status != txn.Committed {
		t.Fatalf("commit = %+v", res.Result)
	}
}

// TestLargeTransactionKeepsReadsAndWritesStraight crosses the size from which a Tx indexes its
// keys: repeated reads, read-your-writes and overwritten puts must behave the same on both sides.
func TestLargeTransactionKeepsReadsAndWritesStraight(t *testing.T) {
	tr := &fakeTransport{serve: func(req protocol.Request) protocol.Reply {
		return protocol.Reply{Value: []byte("stored-" + req.Key), Version: txn.NewID(1, 1)}
	}}
	s, _ := newSession(tr)
	tx := s.Begin()
	key := func(i int) string { return fmt.Sprintf("k%d", i) }
	get := func(k string) string {
		var got string
		tx.Get(k, func(v []byte, err error) {
			if err != nil {
				t.Fatal(err)
			}
			got = string(v)
		})
		return got
	}
	for i := range 3 * indexFrom {
		if i%2 == 0 {
			if v := get(key(i)); v != "stored-"+key(i) {
				t.Fatalf("Get(%s) = %q", key(i), v)
			}
		} else if err := tx.Put(key(i), []byte("mine")); err != nil {
			t.Fatal(err)
		}
	}
	requests := len(tr.reqs)
	for i := range 3 * indexFrom {
		want := "stored-" + key(i)
		if i%2 == 1 {
			want = "mine"
		}
		if v := get(key(i)); v != want {
			t.Fatalf("second Get(%s) = %q, want %q", key(i), v, want)
		}
	}
	if len(tr.reqs) != requests {
		t.Fatalf("repeated Gets made %d more requests", len(tr.reqs)-requests)
	}
	if err := tx.Put(key(0), []byte("overwrite")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(key(1), []byte("again")); err != nil {
		t.Fatal(err)
	}
	if v := get(key(0)); v != "overwrite" {
		t.Fatalf("read-your-write after an index: %q", v)
	}
	res := commit(tx)
	ct := tr.reqs[len(tr.reqs)-1].Txn
	if !res.called || len(ct.Reads) != 3*indexFrom/2 || len(ct.Writes) != 3*indexFrom/2+1 {
		t.Fatalf("committed %d reads and %d writes, want %d and %d", len(ct.Reads), len(ct.Writes), 3*indexFrom/2, 3*indexFrom/2+1)
	}
	for _, w := range ct.Writes {
		if w.Key == key(1) && string(w.Value) != "again" {
			t.Fatalf("overwritten put sent %q", w.Value)
		}
	}
}
