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
	"context"
	"fmt"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Backend is the node behind the service. The node runtime implements it.
type Backend interface {
	// NewClientID allocates a client id that no other client of the cluster holds.
	NewClientID() (txn.ClientID, error)
	// AdoptClientID reports why id, which a client asks to use here although another node may
	// have allocated it (RegisterRequest.client_id), cannot be: nil if some node of the cluster
	// may have allocated it and this node will never allocate it to another client.
	AdoptClientID(id txn.ClientID) error
	// Submit hands req to the node's event loop. reply must be called exactly once, from any
	// goroutine, with the protocol's reply to req; if the node stops before answering it still
	// calls reply, with Reply.Err set. Submit must not block on the reply.
	Submit(req protocol.Request, reply func(protocol.Reply))
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
)

// Limits bounds what one request may carry. Zero fields take the defaults above. gRPC's own
// message size limit (grpc.MaxRecvMsgSize, 4 MiB unless set) applies first: a server that
// accepts large transactions raises it too.
type Limits struct {
	MaxKeyBytes   int // longest key
	MaxValueBytes int // longest value
	MaxTxnKeys    int // most keys in one transaction (reads plus writes) or one snapshot read
	MaxOpBytes    int // longest encoded operation (Operate); wire.MaxOpLen bounds it too
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
	return l
}

// Register registers the Meridian service on s, serving requests with b.
//
// Requests are validated before they reach b; a malformed one fails with InvalidArgument, and
// one naming a client id that this service never registered (for instance before a node
// restart) with FailedPrecondition. Operate fails with Unimplemented if b.OpCodec() is nil. If the caller cancels a request or its deadline passes
// while the node works on it, the call returns Canceled or DeadlineExceeded at once, but the
// node still finishes the request: a cancelled Commit may commit, and its outcome is then
// unknown to that caller. A reply with Reply.Err set (the node could not serve the request,
// e.g. because it is stopping) fails with Unavailable.
func Register(s *grpc.Server, b Backend, limits Limits) {
	meridianpb.RegisterMeridianServer(s, newService(b, limits))
}

// service implements meridianpb.MeridianServer.
type service struct {
	meridianpb.UnimplementedMeridianServer
	b       Backend
	lim     Limits
	clients sync.Map // txn.ClientID -> *clientState, for every id this service allocated
}

func newService(b Backend, limits Limits) *service {
	return &service{b: b, lim: limits.withDefaults()}
}

// clientState tracks a registered client's requests that the node has not answered yet, so that
// two outstanding requests never share a (client, seq) pair: the node routes replies by it.
type clientState struct {
	mu       sync.Mutex
	inflight map[uint64]struct{}
}

func (c *clientState) begin(seq uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.inflight[seq]; dup {
		return false
	}
	c.inflight[seq] = struct{}{}
	return true
}

func (c *clientState) end(seq uint64) {
	c.mu.Lock()
	delete(c.inflight, seq)
	c.mu.Unlock()
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// Register allocates a client id, or adopts the one the request names, and remembers it.
// Adopting an id registered here already keeps its outstanding requests.
func (s *service) Register(ctx context.Context, in *meridianpb.RegisterRequest) (*meridianpb.RegisterResponse, error) {
	id := txn.ClientID(in.GetClientId())
	if id != 0 {
		if err := s.b.AdoptClientID(id); err != nil {
			return nil, invalid("cannot adopt client id %d: %v", id, err)
		}
		s.clients.LoadOrStore(id, &clientState{inflight: map[uint64]struct{}{}})
		return &meridianpb.RegisterResponse{ClientId: uint32(id)}, nil
	}
	id, err := s.b.NewClientID()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "cannot allocate a client id: %v", err)
	}
	if id == 0 {
		return nil, status.Error(codes.Internal, "node allocated the invalid client id 0")
	}
	s.clients.Store(id, &clientState{inflight: map[uint64]struct{}{}})
	return &meridianpb.RegisterResponse{ClientId: uint32(id)}, nil
}

// Get serves one read.
func (s *service) Get(ctx context.Context, in *meridianpb.GetRequest) (*meridianpb.GetResponse, error) {
	cs, err := s.client(in.GetClientId())
	if err != nil {
		return nil, err
	}
	if err := s.checkKey(in.GetKey(), ""); err != nil {
		return nil, err
	}
	req := protocol.Request{Client: txn.ClientID(in.GetClientId()), Seq: in.GetSeq(), Kind: protocol.Get, Key: string(in.GetKey()), TxnID: txn.ID(in.GetTxnId())}
	r, err := s.submit(ctx, cs, req)
	if err != nil {
		return nil, err
	}
	return &meridianpb.GetResponse{Value: r.Value, Version: uint64(r.Version)}, nil
}

// Commit submits a transaction and waits for its decision.
func (s *service) Commit(ctx context.Context, in *meridianpb.CommitRequest) (*meridianpb.CommitResponse, error) {
	cs, err := s.client(in.GetClientId())
	if err != nil {
		return nil, err
	}
	t, err := s.toTxn(txn.ClientID(in.GetClientId()), in.GetTxn())
	if err != nil {
		return nil, err
	}
	req := protocol.Request{Client: txn.ClientID(in.GetClientId()), Seq: in.GetSeq(), Kind: protocol.Commit, Txn: t}
	r, err := s.submit(ctx, cs, req)
	if err != nil {
		return nil, err
	}
	var st meridianpb.CommitStatus
	switch r.Status {
	case txn.Committed:
		st = meridianpb.CommitStatus_COMMIT_STATUS_COMMITTED
	case txn.Aborted:
		st = meridianpb.CommitStatus_COMMIT_STATUS_ABORTED
	default:
		return nil, status.Errorf(codes.Internal, "node answered commit of %s with status %d", t.ID, r.Status)
	}
	return &meridianpb.CommitResponse{Status: st, Reason: string(r.Reason)}, nil
}

// ReadSnapshot reads keys from one snapshot of the node.
func (s *service) ReadSnapshot(ctx context.Context, in *meridianpb.ReadSnapshotRequest) (*meridianpb.ReadSnapshotResponse, error) {
	cs, err := s.client(in.GetClientId())
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
	cs, err := s.client(in.GetClientId())
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
	req := protocol.Request{Client: txn.ClientID(in.GetClientId()), Seq: in.GetSeq(), Kind: protocol.Operation, Op: op}
	r, err := s.submit(ctx, cs, req)
	if err != nil {
		return nil, err
	}
	if r.Op == nil {
		return nil, status.Errorf(codes.Internal, "node answered operation %T without one", op)
	}
	out, err := codec.Append(nil, r.Op)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "cannot encode the node's answer %T: %v", r.Op, err)
	}
	return &meridianpb.OperateResponse{Op: out}, nil
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

// client returns the state of a registered client.
func (s *service) client(id uint32) (*clientState, error) {
	if cs, ok := s.clients.Load(txn.ClientID(id)); ok {
		return cs.(*clientState), nil
	}
	return nil, status.Errorf(codes.FailedPrecondition, "unknown client id %d (call Register first)", id)
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
	if id.Client() != client {
		return nil, invalid("transaction id %s does not belong to client %d", id, client)
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
	if !cs.begin(req.Seq) {
		return protocol.Reply{}, invalid("request seq %d of client %d is already outstanding", req.Seq, req.Client)
	}
	ch := make(chan protocol.Reply, 1)
	s.b.Submit(req, func(r protocol.Reply) {
		cs.end(req.Seq)
		select {
		case ch <- r:
		default: // a second reply breaks the Backend contract; never block the node on it
		}
	})
	select {
	case r := <-ch:
		if r.Err != "" {
			return protocol.Reply{}, status.Error(codes.Unavailable, r.Err)
		}
		return r, nil
	case <-ctx.Done():
		// The node still owns the request; for a commit, the caller will not learn the outcome.
		return protocol.Reply{}, status.FromContextError(ctx.Err()).Err()
	}
}

// quoteKey quotes a key for an error message, shortening long ones.
func quoteKey(k string) string {
	const shown = 48
	if len(k) <= shown {
		return strconv.Quote(k)
	}
	return strconv.Quote(k[:shown]) + "..."
}
