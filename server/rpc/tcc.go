package rpc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// NodeConns holds one gRPC connection to each of a set of nodes (typically every node of a
// partitioned cluster, or of one datacenter) for the client libraries of a partitioned protocol
// (package tcc) in this process: each library gets a TCCTransport from NewTransport. The
// transports share the connections and one callback goroutine, so every callback of every
// transport of one NodeConns runs one at a time, in completion order: libraries and the code
// that drives them (a benchmark's closed-loop clients) need no locks.
type NodeConns struct {
	codec   protocol.Codec
	nodes   map[protocol.NodeID]*nodeConn
	start   time.Time // carries the monotonic clock reading NowUs counts from
	startUs int64     // start as Unix microseconds
	timeout atomic.Int64
	cb      *serial
}

// nodeConn is the connection to one node.
type nodeConn struct {
	target string
	cc     *grpc.ClientConn
	api    meridianpb.MeridianClient
}

// DialNodes makes a connection to every node of addrs (node id → gRPC target such as
// "host:port"); codec is the protocol's (registry.Entry.Codec), which encodes the operations its
// client library sends and decodes the answers. opts must name the transport security, as for
// Dial. Connections are made lazily, so DialNodes does not wait for the nodes to be up.
func DialNodes(addrs map[protocol.NodeID]string, codec protocol.Codec, opts ...grpc.DialOption) (*NodeConns, error) {
	if codec == nil {
		return nil, fmt.Errorf("rpc: DialNodes needs the protocol's codec")
	}
	now := time.Now()
	c := &NodeConns{codec: codec, nodes: make(map[protocol.NodeID]*nodeConn, len(addrs)), start: now, startUs: now.UnixMicro(), cb: newSerial()}
	for id, target := range addrs {
		cc, err := grpc.NewClient(target, opts...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("rpc: dial node %d at %s: %w", id, target, err)
		}
		c.nodes[id] = &nodeConn{target: target, cc: cc, api: meridianpb.NewMeridianClient(cc)}
	}
	return c, nil
}

// SetCallTimeout bounds every later call to d (0, the default: no bound). A call that runs out
// of time completes with the deadline error in Reply.Err; the operation may still take effect.
// Client libraries have timeouts of their own; this one bounds the goroutines and node state
// held by calls whose answers the library no longer waits for.
func (c *NodeConns) SetCallTimeout(d time.Duration) { c.timeout.Store(int64(d)) }

// NowUs reads the wall clock in microseconds since the Unix epoch, advancing with the monotonic
// clock from when the NodeConns was dialled, so it never goes backwards.
func (c *NodeConns) NowUs() int64 { return c.startUs + time.Since(c.start).Microseconds() }

// Close cancels the outstanding calls and closes the connections. It returns once every
// outstanding call's callback is queued; those callbacks (reporting the cancellation) then run
// on the callback goroutine, possibly after Close returns. Calls made after Close fail with
// ErrClosed.
func (c *NodeConns) Close() error {
	if !c.cb.close() {
		return nil
	}
	var first error
	for _, n := range c.nodes {
		if err := n.cc.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.cb.rpcs.Wait()
	return first
}

// NewTransport registers a new client with node home (allocating its id and token) and returns
// its transport. The client registers the same id, with the same token, with the other nodes
// the first time it calls them (nodes of its datacenter, for a partitioned protocol, accept an
// id their datacenter's nodes allocated), and again with a node that forgot it (it restarted,
// or reclaimed the registration of the idle client): the operation the node refused for that
// reason never reached its replica, and is sent again.
func (c *NodeConns) NewTransport(ctx context.Context, home protocol.NodeID) (*TCCTransport, error) {
	n, ok := c.nodes[home]
	if !ok {
		return nil, fmt.Errorf("rpc: no connection to node %d", home)
	}
	id, token, err := register(ctx, n.api, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("rpc: register with node %d at %s: %w", home, n.target, err)
	}
	return &TCCTransport{c: c, id: id, token: token, registered: map[protocol.NodeID]bool{home: true}}, nil
}

// TCCTransport is one client library's tcc.Transport over a NodeConns: it calls any node of the
// set as one client id, with its own request sequence numbers. Its callbacks run on the
// NodeConns's callback goroutine. Back at most one client library by a TCCTransport: two with
// the same client id would issue the same transaction ids.
type TCCTransport struct {
	c     *NodeConns
	id    txn.ClientID
	token []byte // proves id (issued by the home node)
	seq   atomic.Uint64

	mu         sync.Mutex
	registered map[protocol.NodeID]bool // nodes that know the client id (as far as we know)
}

var _ tcc.Transport = (*TCCTransport)(nil)

// ClientID returns the client's id.
func (t *TCCTransport) ClientID() txn.ClientID { return t.id }

// NowUs reads the NodeConns's clock (see NodeConns.NowUs).
func (t *TCCTransport) NowUs() int64 { return t.c.NowUs() }

// After runs fn on the callback goroutine after delayUs microseconds.
func (t *TCCTransport) After(delayUs int64, fn func()) {
	time.AfterFunc(time.Duration(max(delayUs, 0))*time.Microsecond, func() { t.c.cb.enqueue(fn) })
}

// CallNode sends req, which must be a protocol.Operation, to node to as an Operate RPC and calls
// done with the answer on the callback goroutine. req.Client and req.Seq are ignored: requests
// carry the transport's client id and its next sequence number. A failed call (no connection to
// the node, a gRPC error, an answer that does not decode) yields a Reply with Err set.
func (t *TCCTransport) CallNode(to protocol.NodeID, req protocol.Request, done func(protocol.Reply)) {
	seq := t.seq.Add(1)
	fail := func(format string, args ...any) func() {
		r := protocol.Reply{Client: t.id, Seq: seq, Err: fmt.Sprintf(format, args...)}
		return func() { done(r) }
	}
	n, ok := t.c.nodes[to]
	var op []byte
	var err error
	switch {
	case !ok:
		t.c.cb.enqueue(fail("rpc: no connection to node %d", to))
		return
	case req.Kind != protocol.Operation || req.Op == nil:
		t.c.cb.enqueue(fail("rpc: a TCCTransport carries only operations (request kind %d)", req.Kind))
		return
	}
	// Encode now: the library may reuse the message once CallNode returns.
	if op, err = t.c.codec.Append(nil, req.Op); err != nil {
		t.c.cb.enqueue(fail("rpc: cannot encode operation %T: %v", req.Op, err))
		return
	}
	t.c.cb.goRPC(func() func() {
		ctx, cancel := withTimeout(context.Background(), time.Duration(t.c.timeout.Load()))
		defer cancel()
		answer, err := t.operate(ctx, to, n, seq, op)
		if err != nil {
			return fail("%s", status.Convert(ownError(ctx, err)).Message())
		}
		msg, err := t.c.codec.Decode(answer)
		if err != nil {
			return fail("rpc: node %d answered with a malformed operation: %v", to, err)
		}
		r := protocol.Reply{Client: t.id, Seq: seq, Op: msg}
		return func() { done(r) }
	}, fail("%s", ErrClosed.Error()))
}

// operate runs one Operate RPC, registering the client id with the node first if it does not
// know it: the first call to the node, or the first since it forgot the client.
func (t *TCCTransport) operate(ctx context.Context, to protocol.NodeID, n *nodeConn, seq uint64, op []byte) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		if !t.known(to) {
			if _, _, err := register(ctx, n.api, t.id, t.token); err != nil {
				return nil, err
			}
			t.setKnown(to, true)
		}
		resp, err := n.api.Operate(ctx, &meridianpb.OperateRequest{ClientId: uint32(t.id), Seq: seq, Op: op, Token: t.token})
		if forgotten(err) && attempt == 0 {
			t.setKnown(to, false) // register again, then retry once
			continue
		}
		if err != nil {
			return nil, err
		}
		return resp.GetOp(), nil
	}
}

func (t *TCCTransport) known(to protocol.NodeID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.registered[to]
}

func (t *TCCTransport) setKnown(to protocol.NodeID, known bool) {
	t.mu.Lock()
	t.registered[to] = known
	t.mu.Unlock()
}
