package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/topology"
)

// Limits of the replica transport.
const (
	maxFrameBytes   = 64 << 20 // a larger frame closes the connection
	maxHelloBytes   = 4 << 10  // a larger hello closes the connection; a hello takes at most ~530 bytes
	maxQueuedFrames = 100_000  // per peer; beyond it new messages are dropped (the log repairs)
	helloTimeout    = 5 * time.Second
	dialBackoffMin  = 50 * time.Millisecond
	dialBackoffMax  = 2 * time.Second
	// acceptBackoffMin and acceptBackoffMax bound the pause after a failed Accept (too many
	// open files, say), doubling from the one to the other as net/http's server does.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// inboundPerPeer sets the cap on concurrent inbound peer connections: inboundPerPeer times
	// the number of peers. Every peer holds one connection to us, and a peer that reconnects
	// opens its new connection before we notice that its old one died, so a few per peer leave
	// room for reconnections; the cap bounds what connections that never send a valid hello
	// (unauthenticated ones, until helloTimeout) can hold: a bufio.Reader and at most a hello
	// each.
	inboundPerPeer = 4
)

// transport carries replica messages between nodes: one outgoing TCP connection per peer
// (reconnecting with backoff) and the incoming connections peers open. With WAN emulation
// every outgoing message waits for its link's one-way delay (RTT/2 plus jitter) before it is
// written, keeping per-link FIFO order, so a multi-datacenter cluster runs on one machine with
// realistic latencies.
type transport struct {
	n       *Node
	ln      net.Listener
	peers   []*peer // indexed by NodeID; nil for this node
	tlsConf *tls.Config
	inbound chan struct{} // a token per inbound connection; its capacity is the cap
	// acceptStopped is set when the accept loop has ended: the node takes no peer connections.
	acceptStopped atomic.Bool

	randMu sync.Mutex
	rand   *rand.Rand
}

// peer is the outgoing side of one link.
type peer struct {
	id      protocol.NodeID
	name    string
	addr    string
	delayUs func() int64 // emulated one-way delay; nil without WAN emulation
	mu      sync.Mutex
	queue   []outFrame
	wake    chan struct{}
	// redial cuts the sender's wait between dial attempts short: the peer has just connected to
	// us, so it is listening again (it restarted), and the link to it should not stay down for
	// the rest of a backoff that grew while it was gone (up to dialBackoffMax).
	redial   chan struct{}
	lastDue  time.Time // FIFO under emulated delay
	up       atomic.Bool
	lastRecv atomic.Int64 // unix µs of the last message received from this peer
	dropped  atomic.Uint64
	// cut drops every message to and from this peer (the nemesis's link cut, /admin/cut).
	cut      atomic.Bool
	counters peerCounters // meridian_peer_*_sent_total of this peer
}

type outFrame struct {
	kind    byte // wire.KindMessage or wire.KindReply
	payload []byte
	due     time.Time
}

func newTransport(n *Node, ln net.Listener, tlsConf *tls.Config) *transport {
	t := &transport{n: n, ln: ln, tlsConf: tlsConf, rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(n.self)))}
	cfg := n.cfg
	selfDC := cfg.Nodes[n.self].DCIndex
	t.peers = make([]*peer, len(cfg.Nodes))
	t.inbound = make(chan struct{}, inboundPerPeer*(len(cfg.Nodes)-1))
	for i, nd := range cfg.Nodes {
		if protocol.NodeID(i) == n.self {
			continue
		}
		p := &peer{id: protocol.NodeID(i), name: nd.Name, addr: nd.PeerAddr, wake: make(chan struct{}, 1),
			redial: make(chan struct{}, 1), counters: n.metrics.peerCounters(nd.Name)}
		if cfg.WANEmulation && nd.DCIndex != selfDC {
			a, b := selfDC, nd.DCIndex
			jitter := topology.JitterProcess{CorrelationUs: cfg.JitterCorrelationUs}
			p.delayUs = func() int64 {
				t.randMu.Lock()
				defer t.randMu.Unlock()
				if jitter.CorrelationUs == 0 {
					return cfg.Topology.OneWayDelayUs(a, b, cfg.Jitter, t.rand)
				}
				return cfg.Topology.DelayUs(a, b, cfg.Jitter, jitter.Sample(time.Now().UnixMicro(), t.rand))
			}
		}
		t.peers[i] = p
	}
	return t
}

// start runs the accept loop and one sender per peer until ctx ends.
func (t *transport) start(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.accept(ctx)
	}()
	for _, p := range t.peers {
		if p != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.sendLoop(ctx, p)
			}()
		}
	}
}

// send encodes m for peer to and queues it. It never blocks the event loop.
func (t *transport) send(to protocol.NodeID, m protocol.Message) {
	p := t.peers[to]
	if p == nil || p.cut.Load() {
		return
	}
	payload, err := t.n.codec.Append(nil, m)
	if err != nil {
		t.n.logger.Error("cannot encode message", "peer", p.name, "err", err)
		return
	}
	t.queue(to, wire.KindMessage, payload)
}

// queue queues a frame of kind for peer to, due after the link's emulated delay, in FIFO order.
func (t *transport) queue(to protocol.NodeID, kind byte, payload []byte) {
	p := t.peers[to]
	if p == nil || p.cut.Load() {
		return
	}
	due := time.Now()
	if p.delayUs != nil {
		due = due.Add(time.Duration(p.delayUs()) * time.Microsecond)
	}
	p.mu.Lock()
	if due.Before(p.lastDue) {
		due = p.lastDue
	}
	p.lastDue = due
	if len(p.queue) >= maxQueuedFrames {
		p.mu.Unlock()
		p.dropped.Add(1)
		return
	}
	wasEmpty := len(p.queue) == 0
	p.queue = append(p.queue, outFrame{kind: kind, payload: payload, due: due})
	p.mu.Unlock()
	p.counters.sent(len(payload))
	if !wasEmpty {
		return // the writer is busy, or sleeps until a frame due no later than this one
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// sendLoop keeps a connection to p and writes its queued frames when they are due. A failed dial
// is retried after a backoff doubling from dialBackoffMin to dialBackoffMax, cut short when p
// connects to us (receive): a restarted peer is reached again at once, not up to dialBackoffMax
// later, during which it would miss every message of this node (a second outage, in effect).
func (t *transport) sendLoop(ctx context.Context, p *peer) {
	backoff := dialBackoffMin
	for ctx.Err() == nil {
		conn, err := t.dial(ctx, p)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
				backoff = min(2*backoff, dialBackoffMax)
			case <-p.redial:
				backoff = dialBackoffMin
			}
			continue
		}
		backoff = dialBackoffMin
		select {
		case <-p.redial: // connected already: a token left from before is stale
		default:
		}
		p.up.Store(true)
		err = t.writeFrames(ctx, p, conn)
		p.up.Store(false)
		conn.Close()
		if err != nil && ctx.Err() == nil {
			t.n.logger.Warn("peer connection lost", "peer", p.name, "err", err)
		}
	}
}

func (t *transport) dial(ctx context.Context, p *peer) (net.Conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	var conn net.Conn
	var err error
	if t.tlsConf != nil {
		conf := t.tlsConf.Clone()
		conf.ServerName, _, _ = net.SplitHostPort(p.addr)
		// Beyond the address, the certificate must name the node we mean to reach.
		conf.VerifyConnection = func(cs tls.ConnectionState) error {
			return t.n.cfg.CheckNodeCert(cs.PeerCertificates[0], int(p.id))
		}
		td := tls.Dialer{NetDialer: &d, Config: conf}
		conn, err = td.DialContext(ctx, "tcp", p.addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", p.addr)
	}
	if err != nil {
		return nil, err
	}
	hello, err := wire.AppendHello(nil, wire.Hello{Cluster: t.n.cfg.Name, Protocol: t.n.cfg.Protocol, From: uint32(t.n.self), Version: wire.FormatVersion})
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetWriteDeadline(time.Now().Add(helloTimeout))
	if err := wire.WriteFrame(conn, wire.KindHello, hello); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// writeFrames writes p's queue in order, each frame once it is due: every frame due at once
// goes into one buffered write (one system call per peer per wake-up, not per frame), and the
// writer then sleeps on one reusable timer until the next frame is due, or until queue wakes it
// when the queue was empty. It returns when the connection fails or ctx ends.
func (t *transport) writeFrames(ctx context.Context, p *peer, conn net.Conn) error {
	w := bufio.NewWriterSize(conn, 64<<10)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var due []outFrame
	for {
		now := time.Now()
		var nextDue time.Time
		p.mu.Lock()
		k := 0
		for k < len(p.queue) && !p.queue[k].due.After(now) {
			k++
		}
		due = append(due[:0], p.queue[:k]...)
		clear(p.queue[:k])
		p.queue = p.queue[k:]
		if len(p.queue) > 0 {
			nextDue = p.queue[0].due
		}
		p.mu.Unlock()
		for _, f := range due {
			if err := wire.WriteFrame(w, f.kind, f.payload); err != nil {
				return err
			}
		}
		clear(due)
		if k > 0 {
			continue // more may have come due while writing
		}
		if err := w.Flush(); err != nil {
			return err
		}
		var fire <-chan time.Time
		if !nextDue.IsZero() {
			timer.Reset(nextDue.Sub(now))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-fire:
		}
		timer.Stop()
	}
}

// accept takes peer connections until the listener is closed. A failed Accept (too many open
// files, say) is logged and retried after a pause (acceptBackoffMin doubling to
// acceptBackoffMax); a connection beyond the cap on inbound connections (inbound) is closed at
// once and logged. When the loop ends, acceptStopped is set (and /healthz fails).
func (t *transport) accept(ctx context.Context) {
	defer t.acceptStopped.Store(true)
	var backoff time.Duration
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, net.ErrClosed):
				t.n.logger.Error("peer listener closed: no longer accepting peer connections")
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			t.n.logger.Warn("accepting peer connection failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		select {
		case t.inbound <- struct{}{}:
		default:
			t.n.logger.Warn("refusing peer connection: too many inbound connections",
				"remote", conn.RemoteAddr().String(), "limit", cap(t.inbound))
			conn.Close()
			continue
		}
		if t.tlsConf != nil {
			conn = tls.Server(conn, t.tlsConf)
		}
		go func() {
			defer func() { <-t.inbound }()
			t.receive(ctx, conn)
		}()
	}
}

// receive reads one peer connection: a hello naming the peer, then messages. Anything malformed
// closes the connection and is logged; it never reaches the replica and never stops the node.
func (t *transport) receive(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	from, err := t.handshake(conn, r)
	if err != nil {
		t.n.logger.Warn("refusing peer connection", "remote", conn.RemoteAddr().String(), "err", err)
		return
	}
	p := t.peers[from]
	select {
	case p.redial <- struct{}{}:
	default:
	}
	for {
		kind, payload, err := wire.ReadFrame(r, maxFrameBytes)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				t.n.logger.Info("peer connection closed", "peer", p.name, "err", err)
			}
			return
		}
		if kind == wire.KindReply && t.n.relayReplies {
			r, err := decodeRelayedReply(payload, t.n.codec)
			if err != nil {
				t.n.logger.Warn("closing peer connection: malformed relayed reply", "peer", p.name, "err", err)
				return
			}
			if p.cut.Load() {
				continue
			}
			select {
			case t.n.inputs <- input{kind: inCall, call: func() { t.n.deliverRelayed(r) }}:
			case <-ctx.Done():
				return
			}
			continue
		}
		if kind != wire.KindMessage {
			t.n.logger.Warn("closing peer connection: unexpected frame kind", "peer", p.name, "kind", kind)
			return
		}
		msg, err := t.n.codec.Decode(payload)
		if err != nil {
			t.n.logger.Warn("closing peer connection: malformed message", "peer", p.name, "err", err)
			return
		}
		if p.cut.Load() {
			continue
		}
		p.lastRecv.Store(time.Now().UnixMicro())
		select {
		case t.n.inputs <- input{kind: inMessage, from: from, raw: payload, msg: msg}:
		case <-ctx.Done():
			return
		}
	}
}

// handshake authenticates a peer connection within helloTimeout: the TLS handshake (with mutual
// TLS), then the peer's hello, whose node the peer's certificate must name. It returns the peer.
func (t *transport) handshake(conn net.Conn, r *bufio.Reader) (protocol.NodeID, error) {
	conn.SetDeadline(time.Now().Add(helloTimeout))
	defer conn.SetDeadline(time.Time{})
	tc, isTLS := conn.(*tls.Conn)
	if isTLS {
		if err := tc.Handshake(); err != nil {
			return 0, err
		}
	}
	from, err := t.readHello(r)
	if err != nil || !isTLS {
		return from, err
	}
	// The handshake verified the chain (tls.RequireAndVerifyClientCert): PeerCertificates[0]
	// is the peer's own certificate.
	if err := t.n.cfg.CheckNodeCert(tc.ConnectionState().PeerCertificates[0], int(from)); err != nil {
		return 0, fmt.Errorf("peer claims to be node %s, but its %w", t.peers[from].name, err)
	}
	return from, nil
}

// readHello reads and checks the peer's hello, refusing one above maxHelloBytes before reading
// it, and returns the node the peer claims to be.
func (t *transport) readHello(r *bufio.Reader) (protocol.NodeID, error) {
	kind, payload, err := wire.ReadFrame(r, maxHelloBytes)
	if err != nil {
		return 0, err
	}
	if kind != wire.KindHello {
		return 0, fmt.Errorf("first frame is kind %d, not a hello", kind)
	}
	h, err := wire.DecodeHello(payload)
	switch {
	case err != nil:
		return 0, err
	case h.Version != wire.FormatVersion:
		return 0, fmt.Errorf("peer speaks wire version %d, we speak %d", h.Version, wire.FormatVersion)
	case h.Cluster != t.n.cfg.Name || h.Protocol != t.n.cfg.Protocol:
		return 0, fmt.Errorf("peer belongs to cluster %q running %s, we are %q running %s", h.Cluster, h.Protocol, t.n.cfg.Name, t.n.cfg.Protocol)
	case int(h.From) >= len(t.peers) || t.peers[h.From] == nil:
		return 0, fmt.Errorf("peer claims to be node %d, not another node of this cluster", h.From)
	}
	return protocol.NodeID(h.From), nil
}

// peerStatus is one line of /status.
type peerStatus struct {
	Peer            string  `json:"peer"`
	Connected       bool    `json:"connected"`
	LastReceiveAgeS float64 `json:"last_receive_age_s"` // -1: never
	QueuedFrames    int     `json:"queued_frames"`
	DroppedFrames   uint64  `json:"dropped_frames"`
	Cut             bool    `json:"cut,omitempty"` // the nemesis cut the link (/admin/cut)
}

func (t *transport) status() []peerStatus {
	var out []peerStatus
	now := time.Now().UnixMicro()
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		p.mu.Lock()
		queued := len(p.queue)
		p.mu.Unlock()
		age := -1.0
		if last := p.lastRecv.Load(); last > 0 {
			age = float64(now-last) / 1e6
		}
		out = append(out, peerStatus{Peer: p.name, Connected: p.up.Load(), LastReceiveAgeS: age, QueuedFrames: queued,
			DroppedFrames: p.dropped.Load(), Cut: p.cut.Load()})
	}
	return out
}
