// Package rpc carries Meridian's client protocol over gRPC (api/meridian/v1/meridian.proto).
//
// The server side is Register: it serves the Meridian service on a grpc.Server, validates every
// request, and hands it to a Backend, the node's event loop. The client side is Conn, a
// client.Transport that drives a client.Session against a remote node, Client, a synchronous
// wrapper over a Session for programs and the meridian CLI, and DCConn, whose TCCTransports
// carry the client library of a partitioned protocol (tcc.Transport) to every node of a
// datacenter.
package rpc

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Backend is the node behind the service. The node runtime implements it.
type Backend interface {
	// NewClientID allocates a client id that no other client of the cluster holds.
	NewClientID() (txn.ClientID, error)
	// ClientKey returns the secret key the service derives client tokens from: known to no
	// one else, and the same after the node restarts, so that a client proves there the id it
	// registered before.
	ClientKey() []byte
	// AdoptClientID reports why id, which a client asks to register with a token this node did
	// not issue (RegisterRequest.client_id), cannot be registered here: nil if another node of
	// the cluster may have allocated it and its client may use it here too.
	AdoptClientID(id txn.ClientID) error
	// Submit hands req to the node's event loop. reply must be called exactly once, from any
	// goroutine: with the protocol's reply to req; with a nil reply and an error if the node
	// refused req before it reached the replica (a gRPC status error keeps its code, any other
	// error fails the call with Unavailable); or, if the node stops before answering, with
	// Reply.Err set. Submit must not block on the reply.
	Submit(req protocol.Request, reply func(protocol.Reply, error))
	// OpCodec returns the codec of the protocol's operations (protocol.Request.Op and
	// protocol.Reply.Op), or nil if the protocol serves no protocol.Operation requests.
	OpCodec() protocol.Codec
}

// Default limits; a zero field of Limits means the default.
const (
	// DefaultMaxKeyBytes is the default limit on a key's length.
	DefaultMaxKeyBytes = 1 << 10
	// DefaultMaxValueBytes is the default limit on a value's length.
	DefaultMaxValueBytes = 1 << 20
	// DefaultMaxTxnKeys is the default limit on the keys of one transaction or snapshot read.
	DefaultMaxTxnKeys = 10_000
	// DefaultMaxOpBytes is the default limit on an encoded operation (OperateRequest.op): gRPC's
	// default message size limit, which applies anyway unless raised.
	DefaultMaxOpBytes = 4 << 20
	// DefaultMaxClients is the default limit on the clients registered with a node at once.
	DefaultMaxClients = 1 << 16
	// DefaultMaxClientsPerConn is the default limit on the clients registered over one gRPC
	// connection at once (a process running many clients over one connection per node, as
	// NodeConns does, registers them all over it).
	DefaultMaxClientsPerConn = 4096
	// DefaultClientIdleTimeout is how long, by default, a client must have had no request
	// outstanding before its registration may be reclaimed.
	DefaultClientIdleTimeout = 10 * time.Minute
)

// Limits bounds what one request may carry and how many clients may be registered. Zero fields
// take the defaults above. gRPC's own message size limit (grpc.MaxRecvMsgSize, 4 MiB unless set)
// applies first: a server that accepts large transactions raises it too.
//
// Registrations are bounded so that no caller can exhaust the node's memory or client ids: once
// a bound is reached, the service reclaims the registrations of the clients that have had no
// request outstanding for ClientIdleTimeout (such a client registers again when it next calls,
// as Conn and TCCTransport do by themselves), and if that frees no room Register fails with
// ResourceExhausted.
type Limits struct {
	MaxKeyBytes   int // longest key
	MaxValueBytes int // longest value
	MaxTxnKeys    int // most keys in one transaction (reads plus writes) or one snapshot read
	MaxOpBytes    int // longest encoded operation (Operate); wire.MaxOpLen bounds it too
	// MaxClients bounds the clients registered at once (allocated or registered again).
	MaxClients int
	// MaxClientsPerConn bounds the clients registered over one gRPC connection at once.
	MaxClientsPerConn int
	// ClientIdleTimeout is how long a client must have had no request outstanding before its
	// registration may be reclaimed to make room for another.
	ClientIdleTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxKeyBytes <= 0 {
		l.MaxKeyBytes = DefaultMaxKeyBytes
	}
	if l.MaxValueBytes <= 0 {
		l.MaxValueBytes = DefaultMaxValueBytes
	}
	if l.MaxTxnKeys <= 0 {
		l.MaxTxnKeys = DefaultMaxTxnKeys
	}
	if l.MaxOpBytes <= 0 {
		l.MaxOpBytes = DefaultMaxOpBytes
	}
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultMaxClients
	}
	if l.MaxClientsPerConn <= 0 {
		l.MaxClientsPerConn = DefaultMaxClientsPerConn
	}
	if l.ClientIdleTimeout <= 0 {
		l.ClientIdleTimeout = DefaultClientIdleTimeout
	}
	return l
}

// Register registers the Meridian service on s, serving requests with b.
//
// Requests are validated before they reach b; a malformed one fails with InvalidArgument, one
// naming a client id that this service does not know (never registered, or forgotten: the node
// restarted or reclaimed an idle registration) with FailedPrecondition, and one whose token is
// not its client id's with Unauthenticated. Operate fails with Unimplemented if b.OpCodec() is
// nil. If the caller cancels a request or its deadline passes while the node works on it, the
// call returns Canceled or DeadlineExceeded at once, but the node still finishes the request: a
// cancelled Commit may commit, and its outcome is then unknown to that caller. A reply with
// Reply.Err set (the node could not serve the request, e.g. because it is stopping) fails with
// Unavailable, and so does a refusal of b that is not a gRPC status error.
//
// Client ids are bound to tokens: Register returns with each id it allocates a token, a MAC of
// the id under b.ClientKey(), and every later request must carry it. Registering an id again
// takes its token: the one this node issued (verified by recomputing it, so it works after a
// restart), or, for an id that another node allocated and b.AdoptClientID accepts, the token
// the id was first registered here with. Registrations are bounded per connection and in total
// (Limits).
func Register(s *grpc.Server, b Backend, limits Limits) {
	meridianpb.RegisterMeridianServer(s, newService(b, limits))
}

// service implements meridianpb.MeridianServer.
type service struct {
	meridianpb.UnimplementedMeridianServer
	b   Backend
	lim Limits
	key []byte // b.ClientKey()

	mu      sync.RWMutex
	clients map[txn.ClientID]*clientState // every registered client
	perConn map[string]int                // how many of them registered over each connection
}

func newService(b Backend, limits Limits) *service {
	return &service{b: b, lim: limits.withDefaults(), key: b.ClientKey(),
		clients: map[txn.ClientID]*clientState{}, perConn: map[string]int{}}
}

// clientState is a registered client: its token, the connection it registered over, and the
// requests the node has not answered yet, so that two outstanding requests never share a
// (client, seq) pair (the node routes replies by it).
type clientState struct {
	token []byte
	conn  string

	mu        sync.Mutex
	inflight  map[uint64]struct{}
	idleSince time.Time // when it registered or its last request ended
	reclaimed bool      // forgotten to make room: its requests fail as an unknown client's
}

func newClientState(token []byte, conn string) *clientState {
	return &clientState{token: token, conn: conn, inflight: map[uint64]struct{}{}, idleSince: time.Now()}
}

func (c *clientState) begin(id txn.ClientID, seq uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reclaimed {
		return unknownClient(id)
	}
	if _, dup := c.inflight[seq]; dup {
		return invalid("request seq %d of client %d is already outstanding", seq, id)
	}
	c.inflight[seq] = struct{}{}
	return nil
}

func (c *clientState) end(seq uint64) {
	c.mu.Lock()
	delete(c.inflight, seq)
	c.idleSince = time.Now()
	c.mu.Unlock()
}

// touch records activity of the client other than a request (it registered again).
func (c *clientState) touch() {
	c.mu.Lock()
	c.idleSince = time.Now()
	c.mu.Unlock()
}

// reclaim marks the client reclaimed, and reports so, if it has had no request outstanding
// since before cutoff.
func (c *clientState) reclaim(cutoff time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inflight) > 0 || c.idleSince.After(cutoff) {
		return false
	}
	c.reclaimed = true
	return true
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func unknownClient(id txn.ClientID) error {
	return status.Errorf(codes.FailedPrecondition, "unknown client id %d (call Register first)", id)
}

// tokenLen is the length of a client token.
const tokenLen = 16

// token is the token this node issues for client id: a MAC of the id under the backend's key,
// so that the node recognizes it after a restart without having stored it.
func (s *service) token(id txn.ClientID) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(binary.BigEndian.AppendUint32([]byte("meridian client token "), uint32(id)))
	return m.Sum(nil)[:tokenLen]
}

// connOf names the gRPC connection a call arrived on by its peer's address, which no two open
// connections share.
func connOf(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// Register allocates a client id and its token, or registers the id the request names again
// if its token proves it (see Register). Registering an id registered here already keeps its
// outstanding requests.
func (s *service) Register(ctx context.Context, in *meridianpb.RegisterRequest) (*meridianpb.RegisterResponse, error) {
	id, token := txn.ClientID(in.GetClientId()), in.GetToken()
	conn := connOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != 0 {
		if cs, ok := s.clients[id]; ok {
			if !hmac.Equal(cs.token, token) {
				return nil, status.Errorf(codes.Unauthenticated, "client id %d is registered here with another token", id)
			}
			cs.touch()
			return &meridianpb.RegisterResponse{ClientId: uint32(id), Token: cs.token}, nil
		}
		if !hmac.Equal(token, s.token(id)) {
			if err := s.b.AdoptClientID(id); err != nil {
				return nil, invalid("cannot register client id %d: %v", id, err)
			}
			if len(token) != tokenLen {
				return nil, invalid("registering client id %d takes the %d-byte token its node issued, not %d bytes", id, tokenLen, len(token))
			}
		}
	}
	if err := s.makeRoom(conn); err != nil {
		return nil, err
	}
	if id == 0 {
		var err error
		if id, err = s.b.NewClientID(); err != nil {
			return nil, status.Errorf(codes.Unavailable, "cannot allocate a client id: %v", err)
		}
		if id == 0 {
			return nil, status.Error(codes.Internal, "node allocated the invalid client id 0")
		}
		token = s.token(id)
	}
	s.clients[id] = newClientState(bytes.Clone(token), conn) // the request's buffer is not ours to keep
	s.perConn[conn]++
	return &meridianpb.RegisterResponse{ClientId: uint32(id), Token: token}, nil
}

// makeRoom makes sure one more client may register over conn, reclaiming the idle clients if a
// bound is reached, or says why none may. s.mu is held.
func (s *service) makeRoom(conn string) error {
	if s.perConn[conn] >= s.lim.MaxClientsPerConn || len(s.clients) >= s.lim.MaxClients {
		s.reclaimIdle()
	}
	switch {
	case s.perConn[conn] >= s.lim.MaxClientsPerConn:
		return status.Errorf(codes.ResourceExhausted, "this connection is at the limit of %d registered clients per connection, none idle for %s",
			s.lim.MaxClientsPerConn, s.lim.ClientIdleTimeout)
	case len(s.clients) >= s.lim.MaxClients:
		return status.Errorf(codes.ResourceExhausted, "the node is at its limit of %d registered clients, none idle for %s",
			s.lim.MaxClients, s.lim.ClientIdleTimeout)
	}
	return nil
}

// reclaimIdle forgets every client that has had no request outstanding for the idle timeout.
// s.mu is held.
func (s *service) reclaimIdle() {
	cutoff := time.Now().Add(-s.lim.ClientIdleTimeout)
	for id, cs := range s.clients {
		if !cs.reclaim(cutoff) {
			continue
		}
		delete(s.clients, id)
		if s.perConn[cs.conn]--; s.perConn[cs.conn] == 0 {
			delete(s.perConn, cs.conn)
		}
	}
}

// Get serves one read.
func (s *service) Get(ctx context.Context, in *meridianpb.GetRequest) (*meridianpb.GetResponse, error) {
	cs, req, err := s.getRequest(in)
	if err != nil {
		return nil, err
	}
	r, err := s.submit(ctx, cs, req)
	if err != nil {
		return nil, err
	}
	return getResponse(r), nil
}

// getRequest validates a read and returns its client's state and the request for the node.
func (s *service) getRequest(in *meridianpb.GetRequest) (*clientState, protocol.Request, error) {
	cs, err := s.client(in.GetClientId(), in.GetToken())
	if err != nil {
		return nil, protocol.Request{}, err
	}
	if err := s.checkKey(in.GetKey(), ""); err != nil {
		return nil, protocol.Request{}, err
	}
	client, id := txn.ClientID(in.GetClientId()), txn.ID(in.GetTxnId())
	if id != txn.None {
		if err := checkOwner(id, client); err != nil {
			return nil, protocol.Request{}, err
		}
	}
	return cs, protocol.Request{Client: client, Seq: in.GetSeq(), Kind: protocol.Get, Key: string(in.GetKey()), TxnID: id}, nil
}

// getResponse is the response to a read the node answered with r.
func getResponse(r protocol.Reply) *meridianpb.GetResponse {
	return &meridianpb.GetResponse{Value: r.Value, Version: uint64(r.Version)}
}

// Commit submits a transaction and waits for its decision.
func (s *service) Commit(ctx context.Context, in *meridianpb.CommitRequest) (*meridianpb.CommitResponse, error) {
	cs, req, err := s.commitRequest(in)
	if err != nil {
		return nil, err
	}
	r, err := s.submit(ctx, cs, req)
	if err != nil {
		return nil, err
	}
	return commitResponse(req.Txn.ID, r)
}

// commitRequest validates a commit and returns its client's state and the request for the node.
func (s *service) commitRequest(in *meridianpb.CommitRequest) (*clientState, protocol.Request, error) {
	cs, err := s.client(in.GetClientId(), in.GetToken())
	if err != nil {
		return nil, protocol.Request{}, err
	}
	t, err := s.toTxn(txn.ClientID(in.GetClientId()), in.GetTxn())
	if err != nil {
		return nil, protocol.Request{}, err
	}
	return cs, protocol.Request{Client: txn.ClientID(in.GetClientId()), Seq: in.GetSeq(), Kind: protocol.Commit, Txn: t}, nil
}

// commitResponse is the response to the commit of transaction id the node answered with r.
func commitResponse(id txn.ID, r protocol.Reply) (*meridianpb.CommitResponse, error) {
	var st meridianpb.CommitStatus
	switch r.Status {
	case txn.Committed:
		st = meridianpb.CommitStatus_COMMIT_STATUS_COMMITTED
	case txn.Aborted:
		st = meridianpb.CommitStatus_COMMIT_STATUS_ABORTED
	default:
		return nil, status.Errorf(codes.Internal, "node answered commit of %s with status %d", id, r.Status)
	}
	return &meridianpb.CommitResponse{Status: st, Reason: string(r.Reason)}, nil
}

// ReadSnapshot reads keys from one snapshot of the node.
func (s *service) ReadSnapshot(ctx context.Context, in *meridianpb.ReadSnapshotRequest) (*meridianpb.ReadSnapshotResponse, error) {
	cs, err := s.client(in.GetClientId(), in.GetToken())
	if err != nil {
		return nil, err
	}
	if n := len(in.GetKeys()); n > s.lim.MaxTxnKeys {
		return nil, invalid("snapshot read of %d keys exceeds the limit of %d keys", n, s.lim.MaxTxnKeys)
	}
	keys := make([]string, len(in.GetKeys()))
	for i, k := range in.GetKeys() {
		if err := s.checkKey(k, ""); err != nil {
			return nil, err
		}
		keys[i] = string(k)
	}
	req := protocol.Request{Client: txn.ClientID(in.GetClientId()), Seq: in.GetSeq(), Kind: protocol.ReadSnapshot, Keys: keys}
	r, err := s.submit(ctx, cs, req)
	if err != nil {
		return nil, err
	}
	if len(r.Snapshot) != len(keys) {
		return nil, status.Errorf(codes.Internal, "node answered a snapshot read of %d keys with %d", len(keys), len(r.Snapshot))
	}
	out := &meridianpb.ReadSnapshotResponse{Reads: make([]*meridianpb.SnapshotRead, len(r.Snapshot))}
	for i, sr := range r.Snapshot {
		out.Reads[i] = &meridianpb.SnapshotRead{Key: []byte(sr.Key), Value: sr.Value, Version: uint64(sr.Version)}
	}
	return out, nil
}

// Operate decodes an operation with the protocol's codec, submits it, and encodes the answer.
func (s *service) Operate(ctx context.Context, in *meridianpb.OperateRequest) (*meridianpb.OperateResponse, error) {
	codec := s.b.OpCodec()
	if codec == nil {
		return nil, status.Error(codes.Unimplemented, "this node's protocol serves no operations (Operate is for the partitioned transactional-causal protocols)")
	}
	cs, err := s.client(in.GetClientId(), in.GetToken())
	if err != nil {
		return nil, err
	}
	switch n := len(in.GetOp()); {
	case n == 0:
		return nil, invalid("empty operation")
	case n > s.lim.MaxOpBytes:
		return nil, invalid("operation of %d bytes exceeds the limit of %d bytes", n, s.lim.MaxOpBytes)
	}
	op, err := decodeOp(codec, in.GetOp())
	if err != nil {
		return nil, invalid("operation does not decode: %v", err)
	}
	answer, err := s.operate(ctx, cs, in.GetClientId(), in.GetSeq(), op)
	if err != nil {
		return nil, err
	}
	out, err := codec.Append(nil, answer)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "cannot encode the node's answer %T: %v", answer, err)
	}
	return &meridianpb.OperateResponse{Op: out}, nil
}

// operate submits operation op of client (whose state is cs) and returns the node's answer.
func (s *service) operate(ctx context.Context, cs *clientState, client uint32, seq uint64, op protocol.Message) (protocol.Message, error) {
	req := protocol.Request{Client: txn.ClientID(client), Seq: seq, Kind: protocol.Operation, Op: op}
	r, err := s.submit(ctx, cs, req)
	if err != nil {
		return nil, err
	}
	if r.Op == nil {
		return nil, status.Errorf(codes.Internal, "node answered operation %T without one", op)
	}
	return r.Op, nil
}

// decodeOp decodes an operation from the network. A codec must never panic on malformed input;
// should one do so anyway, the request fails instead of the node.
func decodeOp(codec protocol.Codec, b []byte) (op protocol.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			op, err = nil, fmt.Errorf("the codec panicked: %v", r)
		}
	}()
	return codec.Decode(b)
}

// client returns the state of a registered client, if token is its.
func (s *service) client(id uint32, token []byte) (*clientState, error) {
	s.mu.RLock()
	cs, ok := s.clients[txn.ClientID(id)]
	s.mu.RUnlock()
	switch {
	case !ok:
		return nil, unknownClient(txn.ClientID(id))
	case !hmac.Equal(cs.token, token):
		return nil, status.Errorf(codes.Unauthenticated, "the request does not carry the token client id %d was registered with", id)
	}
	return cs, nil
}

// checkOwner checks that transaction id is one of client's.
func checkOwner(id txn.ID, client txn.ClientID) error {
	if id.Client() != client {
		return invalid("transaction id %s does not belong to client %d", id, client)
	}
	return nil
}

// checkKey validates one key; where says where it occurs ("" for a lone key).
func (s *service) checkKey(k []byte, where string) error {
	switch {
	case len(k) == 0:
		return invalid("empty key%s", where)
	case len(k) > s.lim.MaxKeyBytes:
		return invalid("key %s%s is %d bytes, over the limit of %d bytes", quoteKey(string(k)), where, len(k), s.lim.MaxKeyBytes)
	}
	return nil
}

// toTxn validates a transaction and converts it.
func (s *service) toTxn(client txn.ClientID, in *meridianpb.Txn) (*txn.Txn, error) {
	if in == nil {
		return nil, invalid("commit request without a transaction")
	}
	id := txn.ID(in.GetId())
	if err := checkOwner(id, client); err != nil {
		return nil, err
	}
	if n := len(in.GetReads()) + len(in.GetWrites()); n > s.lim.MaxTxnKeys {
		return nil, invalid("transaction %s has %d keys (reads plus writes), over the limit of %d keys", id, n, s.lim.MaxTxnKeys)
	}
	t := &txn.Txn{ID: id, Reads: make([]txn.Read, len(in.GetReads())), Writes: make([]txn.Write, len(in.GetWrites()))}
	seen := make(map[string]struct{}, max(len(t.Reads), len(t.Writes)))
	for i, r := range in.GetReads() {
		if err := s.checkKey(r.GetKey(), " in read set"); err != nil {
			return nil, err
		}
		k := string(r.GetKey())
		if _, dup := seen[k]; dup {
			return nil, invalid("repeated key %s in read set", quoteKey(k))
		}
		seen[k] = struct{}{}
		t.Reads[i] = txn.Read{Key: k, Version: txn.ID(r.GetVersion())}
	}
	clear(seen)
	for i, w := range in.GetWrites() {
		if err := s.checkKey(w.GetKey(), " in write set"); err != nil {
			return nil, err
		}
		k := string(w.GetKey())
		if _, dup := seen[k]; dup {
			return nil, invalid("repeated key %s in write set", quoteKey(k))
		}
		seen[k] = struct{}{}
		if n := len(w.GetValue()); n > s.lim.MaxValueBytes {
			return nil, invalid("value of key %s is %d bytes, over the limit of %d bytes", quoteKey(k), n, s.lim.MaxValueBytes)
		}
		t.Writes[i] = txn.Write{Key: k, Value: w.GetValue()}
	}
	return t, nil
}

// submit hands req to the backend and waits for its reply or the end of ctx.
func (s *service) submit(ctx context.Context, cs *clientState, req protocol.Request) (protocol.Reply, error) {
	if err := ctx.Err(); err != nil {
		return protocol.Reply{}, status.FromContextError(err).Err() // not submitted
	}
	type answer struct {
		r   protocol.Reply
		err error
	}
	ch := make(chan answer, 1)
	s.start(cs, req, func(r protocol.Reply, err error) { ch <- answer{r, err} })
	select {
	case a := <-ch:
		return a.r, a.err
	case <-ctx.Done():
		// The node still owns the request; for a commit, the caller will not learn the outcome.
		return protocol.Reply{}, status.FromContextError(ctx.Err()).Err()
	}
}

// start hands req to the backend; done receives, once, the node's reply or the gRPC status error
// the call fails with, possibly before start returns. done must not block.
func (s *service) start(cs *clientState, req protocol.Request, done func(protocol.Reply, error)) {
	if err := cs.begin(req.Client, req.Seq); err != nil {
		done(protocol.Reply{}, err)
		return
	}
	var answered atomic.Bool
	s.b.Submit(req, func(r protocol.Reply, err error) {
		if answered.Swap(true) {
			return // a second reply breaks the Backend contract; never block the node on it
		}
		cs.end(req.Seq)
		switch _, isStatus := status.FromError(err); {
		case err != nil && isStatus:
			done(protocol.Reply{}, err)
		case err != nil:
			done(protocol.Reply{}, status.Error(codes.Unavailable, err.Error()))
		case r.Err != "":
			done(protocol.Reply{}, status.Error(codes.Unavailable, r.Err))
		default:
			done(r, nil)
		}
	})
}

// quoteKey quotes a key for an error message, shortening long ones.
func quoteKey(k string) string {
	const shown = 48
	if len(k) <= shown {
		return strconv.Quote(k)
	}
	return strconv.Quote(k[:shown]) + "..."
}
