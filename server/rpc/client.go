package rpc

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Client is a synchronous Meridian client: a client.Session over its own Conn. Its methods
// may be called from several goroutines (the Session itself only ever runs on the Conn's
// callback goroutine); a Txn is used by one goroutine at a time.
//
// Errors that come from the node or the network are gRPC status errors (status.Code tells them
// apart: InvalidArgument, FailedPrecondition and Unauthenticated mean the node rejected the
// request before acting on it; AlreadyExists and OutOfRange that it refused a transaction id
// submitted for commit before, or too old to tell). If a method's context ends first, it
// returns ctx.Err().
//
// A Client's transactions may be open at once and commit in any order, but the node refuses a
// commit more than 64 transactions older than the newest its client submitted (OutOfRange).
type Client struct {
	conn *Conn
	tr   *loopTransport
	s    *client.Session
}

// DialClient dials target and registers a new client there (see Dial for opts).
func DialClient(ctx context.Context, target string, opts ...grpc.DialOption) (*Client, error) {
	conn, id, err := Dial(ctx, target, opts...)
	if err != nil {
		return nil, err
	}
	tr := &loopTransport{c: conn}
	name := "rpc/" + strconv.FormatUint(uint64(id), 10)
	return &Client{conn: conn, tr: tr, s: client.NewSession(tr, id, "", name, nil)}, nil
}

// ID returns the client id the node allocated.
func (c *Client) ID() txn.ClientID { return c.conn.ClientID() }

// Close closes the connection; outstanding calls fail.
func (c *Client) Close() error { return c.conn.Close() }

// loopTransport adapts Conn for the Client's Session. Its fields are used only on the Conn's
// callback goroutine: ctx is the context of the Client method being run; reply and err are
// the reply being delivered to the Session and the RPC's error (nil unless the RPC failed), so
// that the Client's callbacks can see what the Session does not pass on.
type loopTransport struct {
	c     *Conn
	ctx   context.Context
	reply protocol.Reply
	err   error
}

func (t *loopTransport) Call(req protocol.Request, done func(protocol.Reply)) {
	ctx := t.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	t.c.call(ctx, req, func(r protocol.Reply, err error) {
		t.reply, t.err = r, err
		done(r)
		t.reply, t.err = protocol.Reply{}, nil
	})
}

func (t *loopTransport) NowUs() int64 { return t.c.NowUs() }

// run runs f on the callback goroutine with ctx bounding the RPCs f issues.
func (c *Client) run(ctx context.Context, f func()) {
	c.conn.run(func() {
		c.tr.ctx, c.tr.reply, c.tr.err = ctx, protocol.Reply{}, nil
		f()
		c.tr.ctx = nil
	})
}

// rpcErr prefers the RPC's own (status) error over err, the Session's rendering of it.
func (c *Client) rpcErr(err error) error {
	if err != nil && c.tr.err != nil {
		return c.tr.err
	}
	return err
}

// wait waits for a result on ch or the end of ctx.
func wait[T any](ctx context.Context, ch <-chan T) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// ctxErr reports an RPC that failed because ctx ended as ctx's error, whichever of the two
// the caller saw first.
func ctxErr(ctx context.Context, err error) error {
	if c := status.Code(err); c == codes.Canceled || c == codes.DeadlineExceeded {
		if e := ctxError(ctx); e != nil {
			return e
		}
	}
	return err
}

// Begin starts a read-write transaction.
func (c *Client) Begin() *Txn {
	ch := make(chan *client.Tx, 1)
	c.run(context.Background(), func() { ch <- c.s.Begin() })
	return &Txn{c: c, tx: <-ch, versions: map[string]txn.ID{}}
}

// ReadSnapshot reads keys from one consistent snapshot of the node: consistent within its
// datacenter, not serializable across datacenters (use a Txn for that).
func (c *Client) ReadSnapshot(ctx context.Context, keys []string) ([]protocol.SnapshotRead, error) {
	type result struct {
		reads []protocol.SnapshotRead
		err   error
	}
	ch := make(chan result, 1)
	c.run(ctx, func() {
		c.s.ReadSnapshot(keys, func(reads []protocol.SnapshotRead, err error) { ch <- result{reads, c.rpcErr(err)} })
	})
	r, err := wait(ctx, ch)
	if err != nil {
		return nil, err
	}
	return r.reads, ctxErr(ctx, r.err)
}

// Txn is one read-write transaction of a Client: reads go to the node, writes are buffered
// until Commit. A Txn is used by one goroutine at a time.
type Txn struct {
	c       *Client
	tx      *client.Tx
	aborted bool
	// versions holds the version of every key the transaction read or wrote (its own id for a
	// write), mirroring the Session's cache. Used only on the callback goroutine.
	versions map[string]txn.ID
}

// ErrAborted is returned when a transaction is used after Abort.
var ErrAborted = errors.New("rpc: transaction aborted by the client")

// ID returns the transaction's id.
func (t *Txn) ID() txn.ID { return t.tx.ID() }

// Get reads key: from the transaction's own earlier read or write if there is one, otherwise
// from the node, recording the version read.
func (t *Txn) Get(ctx context.Context, key string) ([]byte, error) {
	v, _, err := t.GetVersion(ctx, key)
	return v, err
}

// GetVersion is Get that also returns the version read: the writer of the value, txn.None for
// a key's initial empty value, and the transaction's own id for a value it wrote itself.
func (t *Txn) GetVersion(ctx context.Context, key string) ([]byte, txn.ID, error) {
	if t.aborted {
		return nil, txn.None, ErrAborted
	}
	type result struct {
		v   []byte
		ver txn.ID
		err error
	}
	ch := make(chan result, 1)
	t.c.run(ctx, func() {
		t.tx.Get(key, func(v []byte, err error) {
			if err != nil {
				ch <- result{err: t.c.rpcErr(err)}
				return
			}
			ver, ok := t.versions[key]
			if !ok { // first read of key: the reply being delivered is the node's
				ver = t.c.tr.reply.Version
				t.versions[key] = ver
			}
			ch <- result{v, ver, nil}
		})
	})
	r, err := wait(ctx, ch)
	if err != nil {
		return nil, txn.None, err
	}
	return r.v, r.ver, ctxErr(ctx, r.err)
}

// Put buffers a write of key.
func (t *Txn) Put(key string, value []byte) error {
	if t.aborted {
		return ErrAborted
	}
	ch := make(chan error, 1)
	t.c.run(context.Background(), func() {
		err := t.tx.Put(key, value)
		if err == nil {
			t.versions[key] = t.tx.ID()
		}
		ch <- err
	})
	return <-ch
}

// Commit submits the transaction and waits for the decision. A nil error means the node decided:
// the Result says whether the transaction committed, and why it aborted if it did. With an
// error, the outcome is unknown (the transaction may still commit) and Result.Status is 0,
// unless the error says the request never took effect: a gRPC status error with code
// InvalidArgument, FailedPrecondition or Unauthenticated (the node refused it), or a local error
// such as client.ErrFinished or ErrClosed; then Result.Status is txn.Aborted.
func (t *Txn) Commit(ctx context.Context) (client.Result, error) {
	if t.aborted {
		return client.Result{Status: txn.Aborted, Err: ErrAborted}, ErrAborted
	}
	ch := make(chan client.Result, 1)
	t.c.run(ctx, func() {
		t.tx.Commit(func(res client.Result) {
			res.Err = t.c.rpcErr(res.Err)
			ch <- res
		})
	})
	res, err := wait(ctx, ch)
	if err != nil {
		return client.Result{}, err
	}
	if res.Err != nil {
		res.Err = ctxErr(ctx, res.Err)
		if outcomeUnknown(res.Err) {
			res.Status = 0 // whatever the Session assumed
		}
	}
	return res, res.Err
}

// outcomeUnknown reports whether a commit that failed with err may still commit: the request
// may have reached the node, which did not refuse it, or the node refused the transaction id
// as submitted before, and its first submission may commit.
func outcomeUnknown(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.Unauthenticated:
		return false
	}
	return true
}

// Abort abandons the transaction. Nothing was sent for its writes, so this is local.
func (t *Txn) Abort() { t.aborted = true }
