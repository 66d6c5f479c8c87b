package rpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Conn is a client.Transport to one Meridian node over gRPC, registered there as one client
// id. Its callbacks run one at a time, in completion order, on a goroutine the Conn owns, so a
// client.Session driven from callbacks is never used concurrently. Back at most one Session by
// a Conn: two Sessions with the same client id would issue the same transaction ids, and the
// node refuses a transaction id submitted for commit before (AlreadyExists).
//
// A node that restarted, or reclaimed the registration of a client idle for long, has forgotten
// the client: it refuses its requests (FailedPrecondition) before they reach the replica. The
// Conn then registers its id again, with the token the node issued for it, and sends the
// refused request once more, so that the Session goes on as the same client; if the node
// refuses the id, the request fails with Unavailable (a commit's outcome is then unknown to
// the Session). That resend is the only one: a request the node took is never sent twice, so a
// Conn never trips the node's refusal of a reused transaction id.
//
// Call and CallContext may be called from any goroutine, including from a callback.
type Conn struct {
	cc      *grpc.ClientConn
	ownsCC  bool // Close closes cc (Dial); a Conn of NewConn leaves it to its owner
	closing context.Context
	stop    context.CancelFunc // ends closing: Close cancels the calls over a shared cc
	api     meridianpb.MeridianClient
	id      txn.ClientID
	token   []byte    // proves id to the node (RegisterResponse.token)
	start   time.Time // carries the monotonic clock reading NowUs counts from
	startUs int64     // start as Unix microseconds
	timeout atomic.Int64
	cb      *serial     // runs the callbacks
	calls   *callStream // carries Get and Commit; shared by the Conns of a Channel
	ownsCS  bool        // Close closes calls (a Conn of Dial or NewConn)
}

var _ client.Transport = (*Conn)(nil)

// ErrClosed is the failure of a call made after Close (its Reply.Err is its message).
var ErrClosed = errors.New("rpc: connection closed")

// Dial connects to the node at target (a gRPC target such as "host:port") and registers a
// client there. opts must name the transport security, for instance
// grpc.WithTransportCredentials(insecure.NewCredentials()) for plaintext. ctx bounds the
// registration; the connection itself lives until Close.
func Dial(ctx context.Context, target string, opts ...grpc.DialOption) (*Conn, txn.ClientID, error) {
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, 0, fmt.Errorf("rpc: dial %s: %w", target, err)
	}
	c, id, err := newConn(ctx, cc, true, nil)
	if err != nil {
		cc.Close()
		return nil, 0, fmt.Errorf("rpc: register with %s: %w", target, err)
	}
	return c, id, nil
}

// NewConn registers a client with the node at the other end of cc and returns its Conn over cc,
// which any number of Conns may share: their RPCs are multiplexed over one HTTP/2 connection,
// so that the requests and replies of many clients share system calls and the node's
// connection goroutines (a process running many clients of one node, as bench does). Closing
// the Conn cancels its outstanding calls and leaves cc open; the caller closes cc after every
// Conn over it.
func NewConn(ctx context.Context, cc *grpc.ClientConn) (*Conn, txn.ClientID, error) {
	c, id, err := newConn(ctx, cc, false, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("rpc: register with %s: %w", cc.Target(), err)
	}
	return c, id, nil
}

// newConn registers a client over cc and returns its Conn, whose Get and Commit calls travel on
// calls (a Channel's), or on a Calls stream of its own if calls is nil.
func newConn(ctx context.Context, cc *grpc.ClientConn, ownsCC bool, calls *callStream) (*Conn, txn.ClientID, error) {
	api := meridianpb.NewMeridianClient(cc)
	id, token, err := register(ctx, api, 0, nil)
	if err != nil {
		return nil, 0, err
	}
	now := time.Now()
	closing, stop := context.WithCancel(context.Background())
	c := &Conn{cc: cc, ownsCC: ownsCC, closing: closing, stop: stop, api: api, id: id, token: token,
		start: now, startUs: now.UnixMicro(), cb: newSerial(), calls: calls}
	if calls == nil {
		c.calls, c.ownsCS = newCallStream(cc), true
	}
	return c, c.id, nil
}

// register registers a client with the node behind api: a new one if id is 0, otherwise id
// again, proven by token. It returns the id and its token. Errors of the RPC are gRPC status
// errors.
func register(ctx context.Context, api meridianpb.MeridianClient, id txn.ClientID, token []byte) (txn.ClientID, []byte, error) {
	resp, err := api.Register(ctx, &meridianpb.RegisterRequest{ClientId: uint32(id), Token: token})
	switch {
	case err != nil:
		return 0, nil, err
	case resp.GetClientId() == 0:
		return 0, nil, errors.New("node returned the invalid client id 0")
	case id != 0 && txn.ClientID(resp.GetClientId()) != id:
		return 0, nil, fmt.Errorf("node registered client id %d instead of %d", resp.GetClientId(), id)
	case len(resp.GetToken()) == 0:
		return 0, nil, errors.New("node returned no token")
	}
	return txn.ClientID(resp.GetClientId()), resp.GetToken(), nil
}

// forgotten reports whether a call failed because the node does not know the client id (it
// restarted, or reclaimed an idle registration): the request never reached the replica.
func forgotten(err error) bool { return status.Code(err) == codes.FailedPrecondition }

// ClientID returns the client id the node allocated to this Conn.
func (c *Conn) ClientID() txn.ClientID { return c.id }

// SetCallTimeout bounds every later call to d (0, the default: no bound beyond the caller's
// context). A call that runs out of time completes with the deadline error in Reply.Err; for a
// commit, the outcome is then unknown.
func (c *Conn) SetCallTimeout(d time.Duration) { c.timeout.Store(int64(d)) }

// NowUs reads the wall clock in microseconds since the Unix epoch, advancing with the monotonic
// clock from when the Conn was dialled, so it never goes backwards.
func (c *Conn) NowUs() int64 { return c.startUs + time.Since(c.start).Microseconds() }

// Call sends req as the matching RPC (Get, Commit or ReadSnapshot) and calls done with the
// reply on the Conn's callback goroutine. req.Client is ignored: requests carry the Conn's
// client id. A failed RPC yields a Reply with Err set to the gRPC status message.
func (c *Conn) Call(req protocol.Request, done func(protocol.Reply)) {
	c.CallContext(context.Background(), req, done)
}

// CallContext is Call with ctx bounding the RPC. If ctx ends first, done receives a Reply with
// Err set; the node may still carry the request out.
func (c *Conn) CallContext(ctx context.Context, req protocol.Request, done func(protocol.Reply)) {
	c.call(ctx, req, func(r protocol.Reply, _ error) { done(r) })
}

// call issues req asynchronously; done also receives the RPC's error (a gRPC status error) if
// it failed. Gets and commits travel on the Calls stream (callStreamed), other requests by
// their unary RPCs.
func (c *Conn) call(ctx context.Context, req protocol.Request, done func(protocol.Reply, error)) {
	if call := c.streamed(req); call != nil {
		c.callStreamed(ctx, req, call, done)
		return
	}
	c.cb.goRPC(func() func() {
		if !c.ownsCC {
			// Closing the shared connection does not end the call: Close cancels it.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer context.AfterFunc(c.closing, cancel)()
			defer cancel()
		}
		ctx, cancel := withTimeout(ctx, time.Duration(c.timeout.Load()))
		defer cancel()
		r, err := c.do(ctx, req)
		if err != nil {
			err = ownError(ctx, err)
			r = c.errReply(req, err)
		}
		return func() { done(r, err) }
	}, func() { done(c.errReply(req, ErrClosed), ErrClosed) })
}

// withTimeout bounds ctx by d if d is positive.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return ctx, func() {}
}

// ownError reports a failed RPC as the caller's own deadline or cancellation if ctx has ended,
// not as however the stream happened to end (the server may reset it first when the deadline it
// was sent passes).
func ownError(ctx context.Context, err error) error {
	if ctxErr := ctxError(ctx); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	return err
}

// ctxError returns the error ctx ends with if it has ended or its deadline has passed (a
// deadline may pass shortly before ctx reports it), nil otherwise.
func ctxError(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// errReply is the reply to req that reports err.
func (c *Conn) errReply(req protocol.Request, err error) protocol.Reply {
	return protocol.Reply{Client: c.id, Seq: req.Seq, Err: status.Convert(err).Message()}
}

// do runs the RPC for req, registering the client again and resending req once if the node
// has forgotten the client.
func (c *Conn) do(ctx context.Context, req protocol.Request) (protocol.Reply, error) {
	r, err := c.send(ctx, req)
	if !forgotten(err) {
		return r, err
	}
	if _, _, err := register(ctx, c.api, c.id, c.token); err != nil {
		return r, status.Errorf(codes.Unavailable, "rpc: the node forgot client %d and did not take it back: %s", c.id, status.Convert(err).Message())
	}
	return c.send(ctx, req)
}

// send runs the RPC for req.
func (c *Conn) send(ctx context.Context, req protocol.Request) (protocol.Reply, error) {
	reply := protocol.Reply{Client: c.id, Seq: req.Seq}
	id, seq, token := uint32(c.id), req.Seq, c.token
	switch req.Kind {
	case protocol.Get:
		resp, err := c.api.Get(ctx, &meridianpb.GetRequest{ClientId: id, Seq: seq, Key: []byte(req.Key), TxnId: uint64(req.TxnID), Token: token})
		if err != nil {
			return reply, err
		}
		reply.Value, reply.Version = resp.GetValue(), txn.ID(resp.GetVersion())
	case protocol.Commit:
		if req.Txn == nil {
			return reply, errors.New("rpc: commit request without a transaction")
		}
		resp, err := c.api.Commit(ctx, &meridianpb.CommitRequest{ClientId: id, Seq: seq, Txn: txnProto(req.Txn), Token: token})
		if err != nil {
			return reply, err
		}
		if err := commitReply(&reply, req.Txn.ID, resp); err != nil {
			return reply, err
		}
	case protocol.ReadSnapshot:
		keys := make([][]byte, len(req.Keys))
		for i, k := range req.Keys {
			keys[i] = []byte(k)
		}
		resp, err := c.api.ReadSnapshot(ctx, &meridianpb.ReadSnapshotRequest{ClientId: id, Seq: seq, Keys: keys, Token: token})
		if err != nil {
			return reply, err
		}
		if len(resp.GetReads()) != len(req.Keys) {
			return reply, fmt.Errorf("rpc: node answered a snapshot read of %d keys with %d", len(req.Keys), len(resp.GetReads()))
		}
		reply.Snapshot = make([]protocol.SnapshotRead, len(resp.GetReads()))
		for i, sr := range resp.GetReads() {
			reply.Snapshot[i] = protocol.SnapshotRead{Key: string(sr.GetKey()), Value: sr.GetValue(), Version: txn.ID(sr.GetVersion())}
		}
	default:
		return reply, errors.New("rpc: unknown request kind " + strconv.Itoa(int(req.Kind)))
	}
	return reply, nil
}

// txnProto is t in the API's form.
func txnProto(t *txn.Txn) *meridianpb.Txn {
	out := &meridianpb.Txn{Id: uint64(t.ID),
		Reads:  make([]*meridianpb.Read, len(t.Reads)),
		Writes: make([]*meridianpb.Write, len(t.Writes))}
	for i, r := range t.Reads {
		out.Reads[i] = &meridianpb.Read{Key: []byte(r.Key), Version: uint64(r.Version)}
	}
	for i, w := range t.Writes {
		out.Writes[i] = &meridianpb.Write{Key: []byte(w.Key), Value: w.Value}
	}
	return out
}

// commitReply sets reply's outcome from the node's answer resp to the commit of transaction id.
func commitReply(reply *protocol.Reply, id txn.ID, resp *meridianpb.CommitResponse) error {
	switch resp.GetStatus() {
	case meridianpb.CommitStatus_COMMIT_STATUS_COMMITTED:
		reply.Status = txn.Committed
	case meridianpb.CommitStatus_COMMIT_STATUS_ABORTED:
		reply.Status, reply.Reason = txn.Aborted, txn.AbortReason(resp.GetReason())
	default:
		return fmt.Errorf("rpc: node answered commit of %s with unknown status %v", id, resp.GetStatus())
	}
	return nil
}

// Close cancels the outstanding calls and closes the connection (unless the Conn shares it:
// NewConn). It returns once every outstanding call's callback is queued; those callbacks
// (reporting the cancellation) then run on the callback goroutine, possibly after Close returns.
// Calls made after Close fail with ErrClosed. Close may be called from a callback.
func (c *Conn) Close() error {
	if !c.cb.close() {
		return nil
	}
	c.stop()
	c.calls.abandonConn(c, status.FromContextError(context.Canceled).Err())
	if c.ownsCS {
		c.calls.close()
	}
	var err error
	if c.ownsCC {
		err = c.cc.Close()
	}
	c.cb.rpcs.Wait()
	return err
}

// run queues f on the callback goroutine (used by Client to drive its Session there).
func (c *Conn) run(f func()) { c.cb.enqueue(f) }

// After runs fn on the callback goroutine after delayUs microseconds, so that code driven by
// callbacks (a benchmark client pacing itself) stays on one goroutine.
func (c *Conn) After(delayUs int64, fn func()) {
	time.AfterFunc(time.Duration(max(delayUs, 0))*time.Microsecond, func() { c.run(fn) })
}
