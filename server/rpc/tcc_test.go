package rpc

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/server/rpc/rpctest"
)

// echoOp is the operation of opBackend's protocol; echoCodec encodes it as a tag byte and a
// string. The string "panic" makes the codec panic, "silent" makes the backend answer without
// an operation.
type echoOp struct{ S string }

func (*echoOp) SizeBytes() int { return 8 }

type echoCodec struct{}

func (echoCodec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	op, ok := m.(*echoOp)
	if !ok || op == nil {
		return dst, errors.New("echo: not an echoOp")
	}
	return wire.AppendString(append(dst, 'e'), op.S), nil
}

func (echoCodec) Decode(b []byte) (protocol.Message, error) {
	d := wire.NewDecoder(b)
	if tag, err := d.Byte("echo tag"); err != nil || tag != 'e' {
		return nil, errors.New("echo: bad tag")
	}
	s, err := d.String("echo text", 1<<10)
	if err == nil {
		err = d.Done()
	}
	if s == "panic" {
		panic("echo codec bug")
	}
	return &echoOp{S: s}, err
}

// opBackend is a node of a partitioned protocol: it answers every operation with its own name
// and the operation's text, and adopts every client id.
type opBackend struct {
	*rpctest.MemBackend
	name string
	mu   sync.Mutex
	reqs []protocol.Request
}

func newOpBackend(name string) *opBackend {
	return &opBackend{MemBackend: rpctest.NewMemBackend(), name: name}
}

func (b *opBackend) AdoptClientID(txn.ClientID) error { return nil }
func (b *opBackend) OpCodec() protocol.Codec          { return echoCodec{} }

func (b *opBackend) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	b.mu.Lock()
	b.reqs = append(b.reqs, req)
	b.mu.Unlock()
	r := protocol.Reply{Client: req.Client, Seq: req.Seq}
	if op, ok := req.Op.(*echoOp); ok && req.Kind == protocol.Operation && op.S != "silent" {
		r.Op = &echoOp{S: b.name + ":" + op.S}
	}
	reply(r, nil)
}

func operate(t *testing.T, addr string, in *meridianpb.OperateRequest) (*meridianpb.OperateResponse, error) {
	t.Helper()
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	return meridianpb.NewMeridianClient(cc).Operate(ctxT(t), in)
}

// registerOn registers client id (0: a new one) with token at the node at addr, over a
// connection of its own.
func registerOn(t *testing.T, addr string, id uint32, token []byte) (*meridianpb.RegisterResponse, error) {
	t.Helper()
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	return meridianpb.NewMeridianClient(cc).Register(ctxT(t), &meridianpb.RegisterRequest{ClientId: id, Token: token})
}

func encodeEcho(s string) []byte {
	b, _ := echoCodec{}.Append(nil, &echoOp{S: s})
	return b
}

func TestOperateValidation(t *testing.T) {
	b := newOpBackend("n0")
	addr := startServer(t, b, Limits{MaxOpBytes: 64})
	reg, err := registerOn(t, addr, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, token := reg.GetClientId(), reg.GetToken()
	resp, err := operate(t, addr, &meridianpb.OperateRequest{ClientId: id, Seq: 1, Op: encodeEcho("hi"), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := (echoCodec{}).Decode(resp.GetOp()); err != nil || got.(*echoOp).S != "n0:hi" {
		t.Fatalf("answer %v, %v", got, err)
	}
	if r := b.reqs[0]; r.Kind != protocol.Operation || r.Client != txn.ClientID(id) || r.Seq != 1 {
		t.Errorf("backend got %+v", r)
	}
	for _, tc := range []struct {
		name string
		in   *meridianpb.OperateRequest
		code codes.Code
		want string
	}{
		{"unknown client", &meridianpb.OperateRequest{ClientId: id + 1, Op: encodeEcho("x"), Token: token}, codes.FailedPrecondition, "unknown client id"},
		{"no token", &meridianpb.OperateRequest{ClientId: id, Op: encodeEcho("x")}, codes.Unauthenticated, "token"},
		{"empty", &meridianpb.OperateRequest{ClientId: id, Token: token}, codes.InvalidArgument, "empty operation"},
		{"too large", &meridianpb.OperateRequest{ClientId: id, Op: encodeEcho(strings.Repeat("x", 64)), Token: token}, codes.InvalidArgument,
			"operation of 66 bytes exceeds the limit of 64 bytes"},
		{"malformed", &meridianpb.OperateRequest{ClientId: id, Op: []byte("zz"), Token: token}, codes.InvalidArgument, "operation does not decode: echo: bad tag"},
		{"trailing bytes", &meridianpb.OperateRequest{ClientId: id, Op: append(encodeEcho("x"), 0), Token: token}, codes.InvalidArgument, "operation does not decode"},
		{"codec panics", &meridianpb.OperateRequest{ClientId: id, Op: encodeEcho("panic"), Token: token}, codes.InvalidArgument, "the codec panicked"},
		{"no answer", &meridianpb.OperateRequest{ClientId: id, Op: encodeEcho("silent"), Token: token}, codes.Internal, "without one"},
	} {
		_, err := operate(t, addr, tc.in)
		if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.want) {
			t.Errorf("%s: got %v, want %v %q", tc.name, err, tc.code, tc.want)
		}
	}
	// A protocol without operations.
	plain := startServer(t, rpctest.NewMemBackend(), Limits{})
	preg, _ := registerOn(t, plain, 0, nil)
	if _, err := operate(t, plain, &meridianpb.OperateRequest{ClientId: preg.GetClientId(), Op: encodeEcho("x"), Token: preg.GetToken()}); status.Code(err) != codes.Unimplemented {
		t.Errorf("operation to a node without operations: %v", err)
	}
}

// restartable serves a fresh service on one address each time start is called, as a restarted
// node does: it has forgotten every client.
type restartable struct {
	t    *testing.T
	addr string
	b    Backend
	s    *grpc.Server
}

func (r *restartable) start() {
	r.t.Helper()
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	var err error
	for range 50 { // the old listener's port may take a moment to be free
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr = lis.Addr().String()
	r.s = grpc.NewServer()
	Register(r.s, r.b, Limits{})
	go r.s.Serve(lis)
}

func TestTCCTransport(t *testing.T) {
	nodes := []*restartable{{t: t, b: newOpBackend("n0")}, {t: t, b: newOpBackend("n1")}}
	addrs := map[protocol.NodeID]string{}
	for i, n := range nodes {
		n.start()
		addrs[protocol.NodeID(i)] = n.addr
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.s.Stop()
		}
	})
	conns, err := DialNodes(addrs, echoCodec{}, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer conns.Close()
	tr, err := conns.NewTransport(ctxT(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	call := func(to protocol.NodeID, s string) protocol.Reply {
		return await(t, func(done func(protocol.Reply)) {
			tr.CallNode(to, protocol.Request{Kind: protocol.Operation, Op: &echoOp{S: s}}, done)
		})
	}
	// The other node learns the client id on first contact.
	for _, to := range []protocol.NodeID{0, 1} {
		r := call(to, "a")
		if op, ok := r.Op.(*echoOp); r.Err != "" || !ok || op.S != []string{"n0", "n1"}[to]+":a" {
			t.Fatalf("call to node %d: %+v", to, r)
		}
		if r.Client != tr.ClientID() {
			t.Errorf("reply client %d, want %d", r.Client, tr.ClientID())
		}
	}
	// A restarted node forgot the client: the transport registers the id again. (The first
	// call may find the old connection broken, as the library's retry would.)
	nodes[1].s.Stop()
	nodes[1].start()
	r := call(1, "b")
	for i := 0; i < 10 && r.Err != ""; i++ {
		time.Sleep(10 * time.Millisecond)
		r = call(1, "b")
	}
	if op, ok := r.Op.(*echoOp); r.Err != "" || !ok || op.S != "n1:b" {
		t.Fatalf("call after a restart: %+v", r)
	}
	// Failures come back as Reply.Err.
	if r := call(7, "x"); !strings.Contains(r.Err, "no connection to node 7") {
		t.Errorf("call to an unknown node: %+v", r)
	}
	if r := call(0, "silent"); !strings.Contains(r.Err, "without one") {
		t.Errorf("call answered without an operation: %+v", r)
	}
	r = await(t, func(done func(protocol.Reply)) { tr.CallNode(0, protocol.Request{Kind: protocol.Get, Key: "k"}, done) })
	if !strings.Contains(r.Err, "only operations") {
		t.Errorf("a Get through a TCCTransport: %+v", r)
	}

	// Callbacks of every transport run one at a time, and After runs there too.
	tr2, err := conns.NewTransport(ctxT(t), 0)
	if err != nil || tr2.ClientID() == tr.ClientID() {
		t.Fatalf("second transport: id %d, %v", tr2.ClientID(), err)
	}
	var running, overlaps atomic.Int32
	var wg sync.WaitGroup
	cb := func() {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		wg.Done()
	}
	for i := range 20 {
		wg.Add(2)
		for _, x := range []*TCCTransport{tr, tr2} {
			x.CallNode(protocol.NodeID(i%2), protocol.Request{Kind: protocol.Operation, Op: &echoOp{S: "c"}}, func(protocol.Reply) { cb() })
		}
		wg.Add(1)
		tr.After(int64(i*100), cb)
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d callbacks overlapped", n)
	}
	if now := tr.NowUs(); now < time.Now().Add(-time.Minute).UnixMicro() {
		t.Errorf("NowUs %d is not Unix microseconds", now)
	}

	// After Close, calls fail with ErrClosed.
	conns.Close()
	if r := call(0, "late"); r.Err != ErrClosed.Error() {
		t.Errorf("call after Close: %+v", r)
	}
}

func TestDialNodesNeedsCodec(t *testing.T) {
	if _, err := DialNodes(nil, nil, plaintext); err == nil {
		t.Error("DialNodes without a codec succeeded")
	}
	conns, err := DialNodes(map[protocol.NodeID]string{}, echoCodec{}, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer conns.Close()
	if _, err := conns.NewTransport(context.Background(), 3); err == nil {
		t.Error("NewTransport with an unknown home node succeeded")
	}
}
