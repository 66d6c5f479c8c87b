package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Channel is one gRPC connection to a node shared by many Conns (a process running many
// clients of the node, as bench does): their Get and Commit calls travel on one Calls stream,
// in batches, so that a call costs a message on an open stream instead of an HTTP/2 stream of
// its own, and the calls and results of all the clients share system calls and goroutines.
type Channel struct {
	cc    *grpc.ClientConn
	calls *callStream
}

// NewChannel shares cc among the Conns NewConn makes. Close the Channel, then cc, after every
// Conn over it.
func NewChannel(cc *grpc.ClientConn) *Channel {
	return &Channel{cc: cc, calls: newCallStream(cc)}
}

// NewConn registers a client with the node and returns its Conn over the Channel. Closing the
// Conn cancels its outstanding calls and leaves the Channel open.
func (ch *Channel) NewConn(ctx context.Context) (*Conn, txn.ClientID, error) {
	c, id, err := newConn(ctx, ch.cc, false, ch.calls)
	if err != nil {
		return nil, 0, fmt.Errorf("rpc: register with %s: %w", ch.cc.Target(), err)
	}
	return c, id, nil
}

// Close ends the Channel's stream; the calls still outstanding on it fail with Canceled.
func (ch *Channel) Close() { ch.calls.close() }

// callStream carries calls on a Calls stream of one gRPC connection, opened at the first call
// and again at the first call after it broke: a sender goroutine sends every call waiting at
// once in one CallBatch, a receiver goroutine hands each result to its call.
type callStream struct {
	api  meridianpb.MeridianClient
	ctx  context.Context // ends with close
	stop context.CancelFunc

	mu      sync.Mutex
	pending map[uint64]*streamCall // sent or queued, not answered
	queue   []*meridianpb.Call     // waiting for the sender
	nextID  uint64
	running bool // a sender goroutine owns the stream
	wake    chan struct{}
}

// streamCall is one call on a callStream. finish is called once, with the result or, if the
// stream broke or the call was abandoned, with the gRPC status error the call fails with.
type streamCall struct {
	conn   *Conn
	id     uint64 // its call id on the stream (callStream.mu)
	finish func(*meridianpb.CallResult, error)

	mu        sync.Mutex
	completed bool        // finished for good (no resend follows)
	stop      func() bool // ends the watch on the caller's context (context.AfterFunc)
}

func newCallStream(cc *grpc.ClientConn) *callStream {
	ctx, stop := context.WithCancel(context.Background())
	return &callStream{api: meridianpb.NewMeridianClient(cc), ctx: ctx, stop: stop,
		pending: map[uint64]*streamCall{}, wake: make(chan struct{}, 1)}
}

// submit queues call for sc, starting the sender if none runs.
func (m *callStream) submit(sc *streamCall, call *meridianpb.Call) {
	m.mu.Lock()
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		sc.finish(nil, status.Error(codes.Canceled, ErrClosed.Error()))
		return
	}
	m.nextID++
	sc.id, call.CallId = m.nextID, m.nextID
	m.pending[sc.id] = sc
	m.queue = append(m.queue, call)
	start := !m.running
	m.running = true
	first := len(m.queue) == 1
	m.mu.Unlock()
	switch {
	case start:
		go m.run()
	case first:
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// abandon removes sc's call, reporting whether it was still outstanding (the caller then
// finishes it); its result, if it comes, is dropped.
func (m *callStream) abandon(sc *streamCall) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending[sc.id] != sc {
		return false
	}
	delete(m.pending, sc.id)
	return true
}

// abandonConn finishes every outstanding call of c with err.
func (m *callStream) abandonConn(c *Conn, err error) {
	var gone []*streamCall
	m.mu.Lock()
	for id, sc := range m.pending {
		if sc.conn == c {
			delete(m.pending, id)
			gone = append(gone, sc)
		}
	}
	m.mu.Unlock()
	for _, sc := range gone {
		sc.finish(nil, err)
	}
}

// close ends the stream; the outstanding calls fail with Canceled.
func (m *callStream) close() { m.stop() }

// run opens a stream and sends the queued calls until the stream breaks; then it fails every
// outstanding call with the stream's error and ends (the next call opens a new stream).
func (m *callStream) run() {
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	st, err := m.api.Calls(ctx)
	if err != nil {
		m.fail(err)
		return
	}
	received := make(chan error, 1)
	go func() { received <- m.receive(st) }()
	var batch []*meridianpb.Call
	for {
		batch = m.take(batch[:0])
		if len(batch) > 0 {
			if err := st.Send(&meridianpb.CallBatch{Calls: batch}); err != nil {
				cancel()
				m.fail(<-received) // Send's error is io.EOF; Recv's says why the stream ended
				return
			}
			clear(batch)
		}
		select {
		case err := <-received:
			m.fail(err)
			return
		case <-m.wake:
			// The calls of a batch of results come from as many callback goroutines, each
			// woken by its result: let those that are runnable queue their next calls first,
			// so that one message carries them (about 1.06 calls per message without this).
			runtime.Gosched()
		}
	}
}

// take removes and returns the queued calls, at most maxBatchBytes of them (at least one),
// leaving a wake-up for the rest.
func (m *callStream) take(dst []*meridianpb.Call) []*meridianpb.Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, bytes := 0, 0
	for n < len(m.queue) {
		bytes += proto.Size(m.queue[n])
		if n > 0 && bytes > maxBatchBytes {
			break
		}
		n++
	}
	dst = append(dst, m.queue[:n]...)
	clear(m.queue[:n])
	m.queue = m.queue[n:]
	if len(m.queue) > 0 {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
	return dst
}

// receive hands every result to its call until the stream ends, and returns why it ended as a
// gRPC status error.
func (m *callStream) receive(st meridianpb.Meridian_CallsClient) error {
	for {
		batch, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return status.Error(codes.Unavailable, "rpc: the node ended the call stream")
			}
			return err
		}
		for _, res := range batch.GetResults() {
			m.mu.Lock()
			sc := m.pending[res.GetCallId()]
			delete(m.pending, res.GetCallId())
			m.mu.Unlock()
			if sc != nil {
				sc.finish(res, nil)
			}
		}
	}
}

// fail ends the stream's run: every outstanding call fails with err.
func (m *callStream) fail(err error) {
	if m.ctx.Err() != nil {
		err = status.Error(codes.Canceled, ErrClosed.Error())
	}
	m.mu.Lock()
	gone := m.pending
	m.pending = map[uint64]*streamCall{}
	clear(m.queue)
	m.queue = m.queue[:0]
	m.running = false
	m.mu.Unlock()
	for _, sc := range gone {
		sc.finish(nil, err)
	}
}

// streamed returns req as a call of the Calls stream, or nil if it goes by its unary RPC: a
// snapshot read, an operation, a malformed request (the unary path reports it), or a call too
// large to share a batch.
func (c *Conn) streamed(req protocol.Request) *meridianpb.Call {
	id, seq, token := uint32(c.id), req.Seq, c.token
	var call *meridianpb.Call
	switch {
	case req.Kind == protocol.Get:
		call = &meridianpb.Call{Request: &meridianpb.Call_Get{Get: &meridianpb.GetRequest{ClientId: id, Seq: seq,
			Key: []byte(req.Key), TxnId: uint64(req.TxnID), Token: token}}}
	case req.Kind == protocol.Commit && req.Txn != nil:
		call = &meridianpb.Call{Request: &meridianpb.Call_Commit{Commit: &meridianpb.CommitRequest{ClientId: id, Seq: seq,
			Txn: txnProto(req.Txn), Token: token}}}
	default:
		return nil
	}
	if proto.Size(call) > maxBatchBytes {
		return nil
	}
	return call
}

// streamReply is the reply to req that its call's result res carries, or the call's error.
func (c *Conn) streamReply(req protocol.Request, res *meridianpb.CallResult) (protocol.Reply, error) {
	reply := protocol.Reply{Client: c.id, Seq: req.Seq}
	if res.GetCode() != uint32(codes.OK) {
		return reply, status.Error(codes.Code(res.GetCode()), res.GetMessage())
	}
	switch req.Kind {
	case protocol.Get:
		g := res.GetGet()
		if g == nil {
			return reply, status.Error(codes.Internal, "rpc: node answered a read without a read's response")
		}
		reply.Value, reply.Version = g.GetValue(), txn.ID(g.GetVersion())
	case protocol.Commit:
		cr := res.GetCommit()
		if cr == nil {
			return reply, status.Error(codes.Internal, "rpc: node answered a commit without a commit's response")
		}
		if err := commitReply(&reply, req.Txn.ID, cr); err != nil {
			return reply, err
		}
	}
	return reply, nil
}

// callStreamed issues call (req on the Calls stream) for Conn.call: done receives the reply on
// the callback goroutine. A call the node refuses because it forgot the client is sent once
// more after registering again, as by the unary path (Conn.do).
func (c *Conn) callStreamed(ctx context.Context, req protocol.Request, call *meridianpb.Call, done func(protocol.Reply, error)) {
	if !c.cb.begin(func() { done(c.errReply(req, ErrClosed), ErrClosed) }) {
		return
	}
	ctx, cancel := withTimeout(ctx, time.Duration(c.timeout.Load()))
	sc := &streamCall{conn: c}
	resent := false
	complete := func(r protocol.Reply, err error) {
		sc.stopWatch()
		cancel()
		if err != nil {
			err = ownError(ctx, err)
			r = c.errReply(req, err)
		}
		c.cb.enqueue(func() { done(r, err) })
		c.cb.rpcs.Done()
	}
	sc.finish = func(res *meridianpb.CallResult, err error) {
		var r protocol.Reply
		if err == nil {
			r, err = c.streamReply(req, res)
		}
		if !forgotten(err) || resent {
			complete(r, err)
			return
		}
		resent = true
		go func() { // rare: the node restarted or reclaimed the client
			rctx, cancelRegister := context.WithCancel(ctx)
			defer cancelRegister()
			defer context.AfterFunc(c.closing, cancelRegister)() // Close does not wait for it
			_, _, err := register(rctx, c.api, c.id, c.token)
			switch {
			case c.cb.isClosed():
				complete(r, status.Error(codes.Canceled, ErrClosed.Error()))
			case err != nil:
				complete(r, status.Errorf(codes.Unavailable, "rpc: the node forgot client %d and did not take it back: %s", c.id, status.Convert(err).Message()))
			default:
				c.calls.submit(sc, call)
			}
		}()
	}
	if err := ctx.Err(); err != nil {
		complete(protocol.Reply{}, status.FromContextError(err).Err()) // not sent
		return
	}
	c.calls.submit(sc, call)
	if ctx.Done() != nil {
		sc.watch(context.AfterFunc(ctx, func() {
			if c.calls.abandon(sc) {
				sc.finish(nil, status.FromContextError(ctx.Err()).Err())
			}
		}))
	}
}

// watch keeps stop, which ends the watch on the caller's context, for stopWatch; if the call is
// complete already, it calls stop at once.
func (sc *streamCall) watch(stop func() bool) {
	sc.mu.Lock()
	if !sc.completed {
		sc.stop = stop
		stop = nil
	}
	sc.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// stopWatch marks the call complete and ends the watch on the caller's context, if any.
func (sc *streamCall) stopWatch() {
	sc.mu.Lock()
	sc.completed = true
	stop := sc.stop
	sc.mu.Unlock()
	if stop != nil {
		stop()
	}
}
