package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/server/rpc/rpctest"
)

var plaintext = grpc.WithTransportCredentials(insecure.NewCredentials())

// startServer serves b on a loopback port until the test ends and returns the address.
func startServer(t *testing.T, b Backend, lim Limits) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	Register(s, b, lim)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, addr string) (*Conn, txn.ClientID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, id, err := Dial(ctx, addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, id
}

func dialClient(t *testing.T, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := DialClient(ctx, addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctxT returns a context that ends with the test or after 5 s.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// await runs f, which must call its argument once, and waits for that.
func await[T any](t *testing.T, f func(func(T))) T {
	t.Helper()
	ch := make(chan T, 1)
	f(func(v T) { ch <- v })
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("callback never ran")
		panic("unreachable")
	}
}

// holdBackend records requests and answers them only when told to.
type holdBackend struct {
	*rpctest.MemBackend
	got chan protocol.Request
	mu  sync.Mutex
	fns []func(protocol.Reply, error)
}

func newHoldBackend() *holdBackend {
	return &holdBackend{MemBackend: rpctest.NewMemBackend(), got: make(chan protocol.Request, 100)}
}

func (b *holdBackend) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	b.mu.Lock()
	b.fns = append(b.fns, reply)
	b.mu.Unlock()
	b.got <- req
}

// release answers every held request with r (as a stopping node would).
func (b *holdBackend) release(r protocol.Reply) {
	b.mu.Lock()
	fns := b.fns
	b.fns = nil
	b.mu.Unlock()
	for _, f := range fns {
		f(r, nil)
	}
}

func TestDialRegistersDistinctClients(t *testing.T) {
	addr := startServer(t, rpctest.NewMemBackend(), Limits{})
	c1, id1 := dial(t, addr)
	_, id2 := dial(t, addr)
	if id1 == 0 || id1 == id2 || c1.ClientID() != id1 {
		t.Fatalf("ids %d, %d (conn says %d)", id1, id2, c1.ClientID())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := lis.Addr().String()
	lis.Close()
	if _, _, err := Dial(ctx, dead, plaintext); status.Code(err) != codes.Unavailable {
		t.Fatalf("dial of a closed port: %v, want Unavailable", err)
	}
}

// TestSessionOverConn drives a client.Session through a Conn from callbacks.
func TestSessionOverConn(t *testing.T) {
	addr := startServer(t, rpctest.NewMemBackend(), Limits{})
	conn, id := dial(t, addr)
	s := client.NewSession(conn, id, "", "c", nil)

	tx := s.Begin()
	type got struct {
		v   []byte
		err error
	}
	g := await(t, func(done func(got)) { tx.Get("a", func(v []byte, err error) { done(got{v, err}) }) })
	if g.err != nil || g.v != nil {
		t.Fatalf("initial get: %q, %v", g.v, g.err)
	}
	if err := tx.Put("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	res := await(t, tx.Commit)
	if res.Err != nil || res.Status != txn.Committed {
		t.Fatalf("commit: %+v", res)
	}

	// Two transactions read a; the second to commit read a stale version.
	t1, t2 := s.Begin(), s.Begin()
	for _, x := range []*client.Tx{t1, t2} {
		g := await(t, func(done func(got)) { x.Get("a", func(v []byte, err error) { done(got{v, err}) }) })
		if string(g.v) != "1" {
			t.Fatalf("get a: %q, %v", g.v, g.err)
		}
		x.Put("a", []byte("2"))
	}
	if res := await(t, t1.Commit); res.Status != txn.Committed {
		t.Fatalf("t1: %+v", res)
	}
	if res := await(t, t2.Commit); res.Status != txn.Aborted || res.Reason != txn.ReasonStaleRead || res.Err != nil {
		t.Fatalf("t2: %+v, want aborted stale-read", res)
	}

	type snap struct {
		reads []protocol.SnapshotRead
		err   error
	}
	sr := await(t, func(done func(snap)) {
		s.ReadSnapshot([]string{"a", "b"}, func(r []protocol.SnapshotRead, err error) { done(snap{r, err}) })
	})
	if sr.err != nil || len(sr.reads) != 2 || string(sr.reads[0].Value) != "2" || sr.reads[0].Version != t1.ID() ||
		sr.reads[1].Key != "b" || sr.reads[1].Version != txn.None {
		t.Fatalf("snapshot: %+v, %v", sr.reads, sr.err)
	}
	if now := conn.NowUs(); now < time.Now().Add(-time.Minute).UnixMicro() || now > time.Now().Add(time.Minute).UnixMicro() {
		t.Errorf("NowUs %d is not the wall clock", now)
	}
}

func TestClient(t *testing.T) {
	addr := startServer(t, rpctest.NewMemBackend(), Limits{})
	c := dialClient(t, addr)
	ctx := ctxT(t)

	tx := c.Begin()
	if tx.ID().Client() != c.ID() {
		t.Fatalf("txn %s of client %d", tx.ID(), c.ID())
	}
	if err := tx.Put("k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if v, ver, err := tx.GetVersion(ctx, "k"); string(v) != "v1" || ver != tx.ID() || err != nil {
		t.Fatalf("read own write: %q %s %v", v, ver, err)
	}
	if res, err := tx.Commit(ctx); err != nil || res.Status != txn.Committed {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, client.ErrFinished) {
		t.Fatalf("second commit: %v", err)
	}

	a, b := c.Begin(), c.Begin()
	if v, ver, err := a.GetVersion(ctx, "k"); string(v) != "v1" || ver != tx.ID() || err != nil {
		t.Fatalf("get: %q %s %v", v, ver, err)
	}
	if v, ver, err := a.GetVersion(ctx, "k"); string(v) != "v1" || ver != tx.ID() || err != nil { // repeatable
		t.Fatalf("second get: %q %s %v", v, ver, err)
	}
	if _, err := b.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	a.Put("k", []byte("v2"))
	b.Put("k", []byte("v3"))
	if res, err := b.Commit(ctx); err != nil || res.Status != txn.Committed {
		t.Fatalf("b: %+v, %v", res, err)
	}
	if res, err := a.Commit(ctx); err != nil || res.Status != txn.Aborted || res.Reason != txn.ReasonStaleRead {
		t.Fatalf("a: %+v, %v; want aborted stale-read", res, err)
	}

	reads, err := c.ReadSnapshot(ctx, []string{"k", "nothing"})
	if err != nil || len(reads) != 2 || string(reads[0].Value) != "v3" || reads[0].Version != b.ID() || reads[1].Version != txn.None {
		t.Fatalf("snapshot: %+v, %v", reads, err)
	}

	ab := c.Begin()
	ab.Put("k", []byte("never"))
	ab.Abort()
	if _, err := ab.Commit(ctx); !errors.Is(err, ErrAborted) {
		t.Fatalf("commit after abort: %v", err)
	}
	if v, _ := c.Begin().Get(ctx, "k"); string(v) != "v3" {
		t.Fatalf("aborted write visible: %q", v)
	}
	if _, err := c.Begin().Get(ctx, ""); err == nil {
		t.Fatal("empty key accepted")
	}
}

// countBackend counts the requests that reach the node.
type countBackend struct {
	*rpctest.MemBackend
	n atomic.Int64
}

func (b *countBackend) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	b.n.Add(1)
	b.MemBackend.Submit(req, reply)
}

func TestValidation(t *testing.T) {
	b := &countBackend{MemBackend: rpctest.NewMemBackend()}
	addr := startServer(t, b, Limits{MaxKeyBytes: 8, MaxValueBytes: 16, MaxTxnKeys: 3})
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	api := meridianpb.NewMeridianClient(cc)
	ctx := ctxT(t)
	reg, err := api.Register(ctx, &meridianpb.RegisterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id, token := reg.GetClientId(), reg.GetToken()
	own := uint64(txn.NewID(txn.ClientID(id), 1))
	rd := func(k string) *meridianpb.Read { return &meridianpb.Read{Key: []byte(k)} }
	wr := func(k, v string) *meridianpb.Write { return &meridianpb.Write{Key: []byte(k), Value: []byte(v)} }
	commit := func(client uint32, t *meridianpb.Txn) error {
		_, err := api.Commit(ctx, &meridianpb.CommitRequest{ClientId: client, Seq: 1, Txn: t, Token: token})
		return err
	}
	get := func(client uint32, key string) error {
		_, err := api.Get(ctx, &meridianpb.GetRequest{ClientId: client, Seq: 1, Key: []byte(key), Token: token})
		return err
	}
	snapshot := func(keys ...string) error {
		bk := make([][]byte, len(keys))
		for i, k := range keys {
			bk[i] = []byte(k)
		}
		_, err := api.ReadSnapshot(ctx, &meridianpb.ReadSnapshotRequest{ClientId: id, Seq: 1, Keys: bk, Token: token})
		return err
	}
	getFor := func(txnID uint64) error {
		_, err := api.Get(ctx, &meridianpb.GetRequest{ClientId: id, Seq: 1, Key: []byte("k"), TxnId: txnID, Token: token})
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"get empty key", get(id, ""), codes.InvalidArgument, "empty key"},
		{"get long key", get(id, "123456789"), codes.InvalidArgument, `key "123456789" is 9 bytes, over the limit of 8 bytes`},
		{"get unknown client", get(999, "k"), codes.FailedPrecondition, "unknown client id 999 (call Register first)"},
		{"get client 0", get(0, "k"), codes.FailedPrecondition, "unknown client id 0 (call Register first)"},
		{"commit unknown client", commit(999, &meridianpb.Txn{Id: uint64(txn.NewID(999, 1))}), codes.FailedPrecondition, "unknown client id 999 (call Register first)"},
		{"get for a foreign txn", getFor(uint64(txn.NewID(7, 1))), codes.InvalidArgument, "transaction id t7.1 does not belong to client " + itoa(id)},
		{"commit without txn", commit(id, nil), codes.InvalidArgument, "without a transaction"},
		{"foreign txn id", commit(id, &meridianpb.Txn{Id: uint64(txn.NewID(7, 1))}), codes.InvalidArgument, "transaction id t7.1 does not belong to client " + itoa(id)},
		{"txn id 0", commit(id, &meridianpb.Txn{}), codes.InvalidArgument, "transaction id init does not belong to client " + itoa(id)},
		{"empty read key", commit(id, &meridianpb.Txn{Id: own, Reads: []*meridianpb.Read{rd("")}}), codes.InvalidArgument, "empty key in read set"},
		{"empty write key", commit(id, &meridianpb.Txn{Id: own, Writes: []*meridianpb.Write{wr("", "v")}}), codes.InvalidArgument, "empty key in write set"},
		{"long write key", commit(id, &meridianpb.Txn{Id: own, Writes: []*meridianpb.Write{wr("0123456789", "v")}}), codes.InvalidArgument, "in write set is 10 bytes, over the limit of 8 bytes"},
		{"long value", commit(id, &meridianpb.Txn{Id: own, Writes: []*meridianpb.Write{wr("k", strings.Repeat("x", 17))}}), codes.InvalidArgument, `value of key "k" is 17 bytes, over the limit of 16 bytes`},
		{"too many keys", commit(id, &meridianpb.Txn{Id: own, Reads: []*meridianpb.Read{rd("a"), rd("b")}, Writes: []*meridianpb.Write{wr("a", ""), wr("b", "")}}), codes.InvalidArgument, "has 4 keys (reads plus writes), over the limit of 3 keys"},
		{"repeated read", commit(id, &meridianpb.Txn{Id: own, Reads: []*meridianpb.Read{rd("a"), rd("a")}}), codes.InvalidArgument, `repeated key "a" in read set`},
		{"repeated write", commit(id, &meridianpb.Txn{Id: own, Writes: []*meridianpb.Write{wr("a", "1"), wr("a", "2")}}), codes.InvalidArgument, `repeated key "a" in write set`},
		{"snapshot empty key", snapshot("a", ""), codes.InvalidArgument, "empty key"},
		{"snapshot too many keys", snapshot("a", "b", "c", "d"), codes.InvalidArgument, "snapshot read of 4 keys exceeds the limit of 3 keys"},
	} {
		st := status.Convert(tc.err)
		if tc.err == nil || st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
			t.Errorf("%s: got %v, want %s containing %q", tc.name, tc.err, tc.code, tc.msg)
		}
	}
	if n := b.n.Load(); n != 0 {
		t.Errorf("%d invalid requests reached the backend", n)
	}
	// The same key in the read and the write set, values at the limit: fine.
	if err := commit(id, &meridianpb.Txn{Id: own, Reads: []*meridianpb.Read{rd("12345678")}, Writes: []*meridianpb.Write{wr("12345678", strings.Repeat("x", 16))}}); err != nil {
		t.Errorf("valid commit: %v", err)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

func TestDefaultLimits(t *testing.T) {
	l := Limits{}.withDefaults()
	if l.MaxKeyBytes != 1024 || l.MaxValueBytes != 1<<20 || l.MaxTxnKeys != 10000 {
		t.Fatalf("defaults %+v", l)
	}
	addr := startServer(t, rpctest.NewMemBackend(), Limits{})
	c := dialClient(t, addr)
	tx := c.Begin()
	tx.Put(strings.Repeat("k", 1025), nil)
	_, err := tx.Commit(ctxT(t))
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "is 1025 bytes, over the limit of 1024 bytes") {
		t.Fatalf("long key: %v", err)
	}
}

// slowBackend answers each request from its own goroutine after a short delay, so that
// completions race.
type slowBackend struct{ *rpctest.MemBackend }

func (b slowBackend) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	go func() {
		time.Sleep(time.Duration(req.Seq%7) * 100 * time.Microsecond)
		b.MemBackend.Submit(req, reply)
	}()
}

func TestCallbacksAreSerialized(t *testing.T) {
	addr := startServer(t, slowBackend{rpctest.NewMemBackend()}, Limits{})
	conn, id := dial(t, addr)
	const n = 200
	var active, maxActive, calls atomic.Int64
	var wg sync.WaitGroup
	wg.Add(n)
	var seq atomic.Uint64
	issue := func() {
		req := protocol.Request{Client: id, Seq: seq.Add(1), Kind: protocol.Get, Key: "k"}
		conn.Call(req, func(r protocol.Reply) {
			defer wg.Done()
			if a := active.Add(1); a > maxActive.Load() {
				maxActive.Store(a)
			}
			if r.Err != "" {
				t.Errorf("reply: %s", r.Err)
			}
			calls.Add(1)
			time.Sleep(20 * time.Microsecond) // widen the window for an overlap
			active.Add(-1)
		})
	}
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < n/8; i++ {
				issue()
			}
		}()
	}
	wg.Wait()
	if maxActive.Load() != 1 || calls.Load() != n {
		t.Fatalf("%d callbacks ran, up to %d at once; want %d, one at a time", calls.Load(), maxActive.Load(), n)
	}
}

func TestServerCancellationAndOutstandingSeq(t *testing.T) {
	b := newHoldBackend()
	addr := startServer(t, b, Limits{})
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	api := meridianpb.NewMeridianClient(cc)
	reg, err := api.Register(ctxT(t), &meridianpb.RegisterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id, token := reg.GetClientId(), reg.GetToken()

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := api.Commit(ctx, &meridianpb.CommitRequest{ClientId: id, Seq: 5,
			Txn: &meridianpb.Txn{Id: uint64(txn.NewID(txn.ClientID(id), 1))}, Token: token})
		errc <- err
	}()
	<-b.got // the node holds the commit
	// A second request with the same seq is refused while the first is outstanding.
	_, err = api.Get(ctxT(t), &meridianpb.GetRequest{ClientId: id, Seq: 5, Key: []byte("k"), Token: token})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "seq 5 of client") {
		t.Fatalf("duplicate seq: %v", err)
	}
	cancel()
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled commit: %v, want Canceled", err)
	}
	// The node decides later; the reply goes nowhere and frees the seq.
	b.release(protocol.Reply{Client: txn.ClientID(id), Seq: 5, Status: txn.Committed})
	go func() { <-b.got; b.release(protocol.Reply{Err: "node stopping"}) }()
	_, err = api.Get(ctxT(t), &meridianpb.GetRequest{ClientId: id, Seq: 5, Key: []byte("k"), Token: token})
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "node stopping" {
		t.Fatalf("reply with Err: %v, want Unavailable \"node stopping\"", err)
	}
}

func TestClientDeadlineWhenBackendNeverReplies(t *testing.T) {
	b := newHoldBackend()
	t.Cleanup(func() { b.release(protocol.Reply{Err: "test over"}) })
	addr := startServer(t, b, Limits{})

	conn, id := dial(t, addr)
	conn.SetCallTimeout(50 * time.Millisecond)
	start := time.Now()
	r := await(t, func(done func(protocol.Reply)) {
		conn.Call(protocol.Request{Seq: 1, Kind: protocol.Get, Key: "k"}, done)
	})
	if !strings.Contains(r.Err, "deadline") || r.Seq != 1 || r.Client != id {
		t.Fatalf("reply %+v, want a deadline error", r)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %s", d)
	}

	c := dialClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Begin().Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get: %v, want deadline exceeded", err)
	}
	tx := c.Begin()
	tx.Put("k", []byte("v"))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if res, err := tx.Commit(ctx2); !errors.Is(err, context.DeadlineExceeded) || res.Status != 0 {
		t.Fatalf("commit: %+v, %v; want unknown outcome and deadline exceeded", res, err)
	}

	// A reply with Err reaches the sync client as Unavailable.
	go func() {
		for req := range b.got {
			if req.Client == c.ID() && req.Seq == 3 { // the Session's third request: the Get below
				b.release(protocol.Reply{Err: "node stopping"})
				return
			}
		}
	}()
	_, err := c.Begin().Get(ctxT(t), "k")
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "node stopping" {
		t.Fatalf("get from a stopping node: %v", err)
	}
}

func TestCloseCompletesOutstandingCalls(t *testing.T) {
	b := newHoldBackend()
	t.Cleanup(func() { b.release(protocol.Reply{Err: "test over"}) })
	addr := startServer(t, b, Limits{})
	conn, _ := dial(t, addr)
	ch := make(chan protocol.Reply, 2)
	conn.Call(protocol.Request{Seq: 1, Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) { ch <- r })
	<-b.got
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	conn.Call(protocol.Request{Seq: 2, Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) { ch <- r })
	got := map[uint64]string{}
	for range 2 {
		select {
		case r := <-ch:
			got[r.Seq] = r.Err
		case <-time.After(5 * time.Second):
			t.Fatal("callback never ran")
		}
	}
	if got[1] == "" || got[2] != ErrClosed.Error() {
		t.Fatalf("replies after close: %v", got)
	}
}

// TestConnsShareAConnection: two clients registered over one gRPC connection (NewConn) have
// distinct ids; closing one cancels its outstanding call and leaves the other working.
func TestConnsShareAConnection(t *testing.T) {
	b := newHoldBackend()
	t.Cleanup(func() { b.release(protocol.Reply{Err: "test over"}) })
	addr := startServer(t, b, Limits{})
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c1, id1, err := NewConn(ctxT(t), cc)
	if err != nil {
		t.Fatal(err)
	}
	c2, id2, err := NewConn(ctxT(t), cc)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if id1 == id2 {
		t.Fatalf("both clients got id %d", id1)
	}
	held := make(chan protocol.Reply, 1)
	c1.Call(protocol.Request{Seq: 1, Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) { held <- r })
	<-b.got
	go c1.Close() // it waits for the call it cancels
	select {
	case r := <-held:
		if r.Err == "" {
			t.Fatalf("the closed client's outstanding call completed without an error: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the client did not cancel its outstanding call")
	}
	r := await(t, func(done func(protocol.Reply)) {
		c2.Call(protocol.Request{Seq: 1, Kind: protocol.Get, Key: "k"}, done)
		<-b.got
		b.release(protocol.Reply{Client: id2, Seq: 1, Value: []byte("v")})
	})
	if r.Err != "" || string(r.Value) != "v" {
		t.Fatalf("the other client over the shared connection: %+v", r)
	}
}

// TestValuesRoundTrip checks that keys and values are bytes, not UTF-8 text.
func TestValuesRoundTrip(t *testing.T) {
	addr := startServer(t, rpctest.NewMemBackend(), Limits{})
	c := dialClient(t, addr)
	ctx := ctxT(t)
	key, val := "\xff\x00k", []byte{0, 0xfe, 'v'}
	tx := c.Begin()
	tx.Put(key, val)
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Begin().Get(ctx, key); err != nil || !bytes.Equal(v, val) {
		t.Fatalf("got %q, %v", v, err)
	}
}
