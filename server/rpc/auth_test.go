package rpc

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/server/rpc/rpctest"
)

// apiConn opens a gRPC connection of its own to addr, closed when the test ends.
func apiConn(t *testing.T, addr string) meridianpb.MeridianClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return meridianpb.NewMeridianClient(cc)
}

// flipped returns token with its first bit changed.
func flipped(token []byte) []byte {
	out := bytes.Clone(token)
	out[0] ^= 1
	return out
}

// wantCode fails the test unless err has code and its message contains msg.
func wantCode(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	if st := status.Convert(err); err == nil || st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Errorf("%s: %v, want %s containing %q", what, err, code, msg)
	}
}

// TestRequestsNeedTheirToken: a request naming a registered client id is served only if it
// carries the token Register returned for that id; any other fails with Unauthenticated before
// it reaches the node.
func TestRequestsNeedTheirToken(t *testing.T) {
	b := &countBackend{MemBackend: rpctest.NewMemBackend()}
	addr := startServer(t, b, Limits{})
	victim, err := registerOn(t, addr, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := registerOn(t, addr, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(victim.GetToken()) == 0 || bytes.Equal(victim.GetToken(), other.GetToken()) {
		t.Fatalf("tokens %x and %x, want two distinct ones", victim.GetToken(), other.GetToken())
	}
	api, ctx, id := apiConn(t, addr), ctxT(t), victim.GetClientId()
	for name, token := range map[string][]byte{"no token": nil, "a changed token": flipped(victim.GetToken()), "another client's token": other.GetToken()} {
		_, err := api.Get(ctx, &meridianpb.GetRequest{ClientId: id, Seq: 1, Key: []byte("k"), Token: token})
		wantCode(t, "get with "+name, err, codes.Unauthenticated, "token client id "+itoa(id))
		_, err = api.Commit(ctx, &meridianpb.CommitRequest{ClientId: id, Seq: 1, Token: token,
			Txn: &meridianpb.Txn{Id: uint64(txn.NewID(txn.ClientID(id), 1)), Writes: []*meridianpb.Write{{Key: []byte("k"), Value: []byte("stolen")}}}})
		wantCode(t, "commit with "+name, err, codes.Unauthenticated, "token")
		_, err = api.ReadSnapshot(ctx, &meridianpb.ReadSnapshotRequest{ClientId: id, Seq: 1, Keys: [][]byte{[]byte("k")}, Token: token})
		wantCode(t, "snapshot read with "+name, err, codes.Unauthenticated, "token")
	}
	if n := b.n.Load(); n != 0 {
		t.Fatalf("%d requests without their token reached the node", n)
	}
	if _, err := api.Get(ctx, &meridianpb.GetRequest{ClientId: id, Seq: 1, Key: []byte("k"), Token: victim.GetToken()}); err != nil {
		t.Fatalf("get with the token: %v", err)
	}
}

// TestRegisterAgainNeedsTheToken: a node registers an id it allocated again only with the token
// it issued, also after a restart (which forgets the registrations, not the key), and never an
// id it did not allocate.
func TestRegisterAgainNeedsTheToken(t *testing.T) {
	node := &restartable{t: t, b: rpctest.NewMemBackend()}
	node.start()
	t.Cleanup(func() { node.s.Stop() })
	reg, err := registerOn(t, node.addr, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, token := reg.GetClientId(), reg.GetToken()
	if again, err := registerOn(t, node.addr, id, token); err != nil || again.GetClientId() != id || !bytes.Equal(again.GetToken(), token) {
		t.Fatalf("registering again with the token: %v, %v", again, err)
	}
	_, err = registerOn(t, node.addr, id, nil)
	wantCode(t, "registering a registered id without its token", err, codes.Unauthenticated, "registered here with another token")
	_, err = registerOn(t, node.addr, id+1, token)
	wantCode(t, "registering an id never allocated", err, codes.InvalidArgument, "cannot register client id "+itoa(id+1))

	node.s.Stop()
	node.start()
	_, err = registerOn(t, node.addr, id, nil)
	wantCode(t, "after a restart, without the token", err, codes.InvalidArgument, "only the token it issued proves one")
	_, err = registerOn(t, node.addr, id, flipped(token))
	wantCode(t, "after a restart, with a changed token", err, codes.InvalidArgument, "only the token it issued proves one")
	if again, err := registerOn(t, node.addr, id, token); err != nil || again.GetClientId() != id {
		t.Fatalf("after a restart, with the token: %v, %v", again, err)
	}
	if _, err := apiConn(t, node.addr).Get(ctxT(t), &meridianpb.GetRequest{ClientId: id, Seq: 1, Key: []byte("k"), Token: token}); err != nil {
		t.Fatalf("get after registering again: %v", err)
	}
}

// TestAdoptionBindsTheFirstToken: a node that adopts an id another node allocated (a partition
// of a partitioned protocol) binds it to the token of the first registration, and from then on
// takes no other, to register or to call.
func TestAdoptionBindsTheFirstToken(t *testing.T) {
	home := startServer(t, newOpBackend("home"), Limits{})
	other := startServer(t, newOpBackend("other"), Limits{})
	reg, err := registerOn(t, home, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, token := reg.GetClientId(), reg.GetToken()
	if got, err := registerOn(t, other, id, token); err != nil || got.GetClientId() != id || !bytes.Equal(got.GetToken(), token) {
		t.Fatalf("adopting with the home token: %v, %v", got, err)
	}
	_, err = registerOn(t, other, id, flipped(token))
	wantCode(t, "adopting again with another token", err, codes.Unauthenticated, "registered here with another token")
	_, err = registerOn(t, other, id, nil)
	wantCode(t, "adopting again without a token", err, codes.Unauthenticated, "registered here with another token")
	_, err = operate(t, other, &meridianpb.OperateRequest{ClientId: id, Seq: 1, Op: encodeEcho("x"), Token: flipped(token)})
	wantCode(t, "operation with another token", err, codes.Unauthenticated, "token")
	if _, err := operate(t, other, &meridianpb.OperateRequest{ClientId: id, Seq: 1, Op: encodeEcho("x"), Token: token}); err != nil {
		t.Fatalf("operation with the bound token: %v", err)
	}
	_, err = registerOn(t, other, 4242, []byte("short"))
	wantCode(t, "adopting with a malformed token", err, codes.InvalidArgument, "takes the 16-byte token its node issued, not 5 bytes")
}

// TestRegistrationLimits: registrations are bounded per connection and in total; registering
// an id registered already takes no room.
func TestRegistrationLimits(t *testing.T) {
	addr := startServer(t, rpctest.NewMemBackend(), Limits{MaxClients: 3, MaxClientsPerConn: 2, ClientIdleTimeout: time.Hour})
	ctx := ctxT(t)
	a, b, c := apiConn(t, addr), apiConn(t, addr), apiConn(t, addr)
	first, err := a.Register(ctx, &meridianpb.RegisterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Register(ctx, &meridianpb.RegisterRequest{}); err != nil {
		t.Fatalf("a second registration over one connection: %v", err)
	}
	_, err = a.Register(ctx, &meridianpb.RegisterRequest{})
	wantCode(t, "a third registration over one connection", err, codes.ResourceExhausted, "limit of 2 registered clients per connection, none idle for 1h0m0s")
	if _, err := a.Register(ctx, &meridianpb.RegisterRequest{ClientId: first.GetClientId(), Token: first.GetToken()}); err != nil {
		t.Fatalf("registering a registered id again: %v", err)
	}
	if _, err := b.Register(ctx, &meridianpb.RegisterRequest{}); err != nil {
		t.Fatalf("registration over another connection: %v", err)
	}
	_, err = c.Register(ctx, &meridianpb.RegisterRequest{})
	wantCode(t, "a fourth registration", err, codes.ResourceExhausted, "the node is at its limit of 3 registered clients")
}

// TestIdleClientsMakeRoom: at a bound, the registrations of clients idle for the idle timeout
// are reclaimed; such a client's Conn registers again by itself when it next calls.
func TestIdleClientsMakeRoom(t *testing.T) {
	const idle = 50 * time.Millisecond
	addr := startServer(t, rpctest.NewMemBackend(), Limits{MaxClients: 1, ClientIdleTimeout: idle})
	c1, id1 := dial(t, addr)
	_, err := registerOn(t, addr, 0, nil)
	wantCode(t, "registering while the only client is active", err, codes.ResourceExhausted, "limit of 1 registered clients")
	time.Sleep(2 * idle)
	c2, _ := dial(t, addr) // reclaims c1
	time.Sleep(2 * idle)
	r := await(t, func(done func(protocol.Reply)) { c1.Call(protocol.Request{Seq: 1, Kind: protocol.Get, Key: "k"}, done) })
	if r.Err != "" || r.Client != id1 {
		t.Fatalf("call of a reclaimed client: %+v", r)
	}
	time.Sleep(2 * idle)
	r = await(t, func(done func(protocol.Reply)) { c2.Call(protocol.Request{Seq: 1, Kind: protocol.Get, Key: "k"}, done) })
	if r.Err != "" {
		t.Fatalf("call of the client reclaimed in turn: %+v", r)
	}
}

// TestConnRegistersAgain: a restarted node forgot the Conn's client; the Conn registers the same
// id again with its token and resends the refused request, so its Session goes on. A node that
// does not take the id back (not the node that issued the token) fails the request with
// Unavailable, and a commit's outcome is then unknown.
func TestConnRegistersAgain(t *testing.T) {
	node := &restartable{t: t, b: rpctest.NewMemBackend()}
	node.start()
	t.Cleanup(func() { node.s.Stop() })
	conn, id := dial(t, node.addr)
	s := client.NewSession(conn, id, "", "c", nil)
	commit := func(value string) client.Result {
		tx := s.Begin()
		tx.Put("k", []byte(value))
		return await(t, tx.Commit)
	}
	if res := commit("before"); res.Status != txn.Committed {
		t.Fatalf("commit before the restart: %+v", res)
	}
	node.s.Stop()
	node.start()
	res := commit("after")
	for i := 0; i < 10 && res.Err != nil && !strings.Contains(res.Err.Error(), "unknown client"); i++ {
		time.Sleep(20 * time.Millisecond) // the first call may find the old connection broken
		res = commit("after")
	}
	if res.Status != txn.Committed {
		t.Fatalf("commit after the restart: %+v", res)
	}

	node.s.Stop()
	node.b = rpctest.NewMemBackend() // another node: its key did not issue the token
	node.start()
	res = commit("elsewhere")
	for i := 0; i < 10 && res.Err != nil && !strings.Contains(res.Err.Error(), "forgot"); i++ {
		time.Sleep(20 * time.Millisecond)
		res = commit("elsewhere")
	}
	if res.Status != txn.Unknown || res.Err == nil || !strings.Contains(res.Err.Error(), "the node forgot client "+itoa(uint32(id))+" and did not take it back") {
		t.Fatalf("commit at a node that does not take the id back: %+v", res)
	}
}

// refuseBackend refuses every request with err, as a node refuses a reused transaction id.
type refuseBackend struct {
	*rpctest.MemBackend
	err error
}

func (b refuseBackend) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	reply(protocol.Reply{}, b.err)
}

// TestBackendRefusals: a refusal of the backend that is a gRPC status error reaches the caller
// with its code, any other with Unavailable; a commit refused as a reused transaction id has an
// unknown outcome (its first submission may commit).
func TestBackendRefusals(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{status.Error(codes.AlreadyExists, "transaction id submitted before"), codes.AlreadyExists},
		{errors.New("disk on fire"), codes.Unavailable},
	} {
		c := dialClient(t, startServer(t, refuseBackend{rpctest.NewMemBackend(), tc.err}, Limits{}))
		tx := c.Begin()
		tx.Put("k", []byte("v"))
		res, err := tx.Commit(ctxT(t))
		if st := status.Convert(err); st.Code() != tc.code || st.Message() != status.Convert(tc.err).Message() || res.Status != 0 {
			t.Errorf("refused with %v: %+v, %v; want %s and an unknown outcome", tc.err, res, err, tc.code)
		}
	}
}
