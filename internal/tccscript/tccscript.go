// Package tccscript drives a partitioned protocol's replicas and client libraries by hand, for
// the step-by-step scenario tests of the transactional-causal family (spec fastccs-tcc.md §5):
// nothing moves until the test says so. Messages, client requests and replies wait in flight
// until Deliver picks them (FIFO per link), and time moves only with Advance, which fires the
// timers that fall due. The random-interleaving tests draw the same steps at random
// (Interleaving, DeliverRandom, DropRandom, Heal) and judge them with WholeGroup and CheckTCC.
package tccscript

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/history"
)

// Endpoint is one end of a link: a node, or a client when Client is not zero.
type Endpoint struct {
	Node   protocol.NodeID
	Client txn.ClientID
}

// String renders a node as "p<partition>" (one datacenter) and a client as "c<id>".
func (e Endpoint) String() string {
	if e.Client != 0 {
		return fmt.Sprintf("c%d", e.Client)
	}
	return fmt.Sprintf("p%d", e.Node)
}

// Kind says what an Envelope carries.
type Kind uint8

const (
	// PeerMessage is a replica-to-replica message.
	PeerMessage Kind = iota + 1
	// Request is a client library's request to a node.
	Request
	// Reply is a node's answer to a client.
	Reply
)

// Envelope is one item in flight.
type Envelope struct {
	Kind     Kind
	From, To Endpoint
	// Msg is the peer message, the request's Op or the reply's Op.
	Msg   any
	req   protocol.Request
	reply protocol.Reply
	seq   uint64
}

// String renders e as "from→to Type".
func (e Envelope) String() string { return fmt.Sprintf("%s→%s %T", e.From, e.To, e.Msg) }

// Between reports whether e travels from → to (endpoints as String renders them, e.g. "c1",
// "p0").
func (e Envelope) Between(from, to string) bool {
	return e.From.String() == from && e.To.String() == to
}

type timer struct {
	atUs int64
	seq  uint64
	node protocol.NodeID // when fn is nil
	id   protocol.TimerID
	fn   func() // a client's After
}

// World is one datacenter of partitions and any number of clients.
type World struct {
	t        testing.TB
	layout   *tcc.Layout
	nodes    []protocol.Node
	envs     []*env
	replicas []protocol.Replica
	clients  map[txn.ClientID]*Client
	newCli   tcc.ClientFactory
	params   protocol.Params
	inFlight []Envelope
	timers   []timer
	nowUs    int64
	seq      uint64
	txns     []history.Txn
}

// New builds partitions replicas of one datacenter with factory and params and starts them. It
// fails the test on any error.
func New(t testing.TB, factory protocol.Factory, newClient tcc.ClientFactory, partitions int, params protocol.Params) *World {
	t.Helper()
	topo := &topology.Topology{Name: "lan", DCs: []string{"dc0"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	w := &World{t: t, nodes: tcc.PartitionedNodes(1, partitions), clients: map[txn.ClientID]*Client{}, newCli: newClient, params: params}
	layout, err := tcc.NewLayout(w.nodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	w.layout = layout
	for i := range w.nodes {
		e := &env{w: w, id: protocol.NodeID(i), store: store.New(), rand: rand.New(rand.NewPCG(uint64(i), 7))}
		r, err := factory(protocol.Config{Self: e.id, Nodes: w.nodes, Topology: topo, Params: params}, e)
		if err != nil {
			t.Fatal(err)
		}
		w.envs, w.replicas = append(w.envs, e), append(w.replicas, r)
	}
	for _, r := range w.replicas {
		r.Start()
	}
	return w
}

// Replica returns partition p's replica, for white-box assertions.
func (w *World) Replica(p int) protocol.Replica { return w.replicas[w.layout.Node[0][p]] }

// Store returns partition p's store.
func (w *World) Store(p int) *store.Store { return w.envs[w.layout.Node[0][p]].store }

// NowUs is the world's clock, shared by every node and client.
func (w *World) NowUs() int64 { return w.nowUs }

// InFlight lists what is in flight, oldest first.
func (w *World) InFlight() []Envelope { return slices.Clone(w.inFlight) }

func (w *World) push(e Envelope) {
	w.seq++
	e.seq = w.seq
	w.inFlight = append(w.inFlight, e)
}

// Deliver delivers the oldest in-flight item that match accepts and that is the oldest on its
// link (links are FIFO), and reports whether there was one.
func (w *World) Deliver(match func(Envelope) bool) bool {
	for i, e := range w.inFlight {
		if !match(e) || w.blocked(i) {
			continue
		}
		w.inFlight = slices.Delete(w.inFlight, i, i+1)
		w.deliver(e)
		return true
	}
	return false
}

// blocked reports whether an older item travels the same link as item i.
func (w *World) blocked(i int) bool {
	for _, o := range w.inFlight[:i] {
		if o.From == w.inFlight[i].From && o.To == w.inFlight[i].To {
			return true
		}
	}
	return false
}

// DeliverAll delivers everything in flight, oldest first, including what the deliveries send,
// until nothing is left. Timers do not fire.
func (w *World) DeliverAll() {
	for len(w.inFlight) > 0 {
		e := w.inFlight[0]
		w.inFlight = w.inFlight[1:]
		w.deliver(e)
	}
}

// Drop removes, without delivering, every in-flight item that match accepts (a lost message, a
// crashed client's request) and returns how many.
func (w *World) Drop(match func(Envelope) bool) int {
	n := len(w.inFlight)
	w.inFlight = slices.DeleteFunc(w.inFlight, match)
	return n - len(w.inFlight)
}

func (w *World) deliver(e Envelope) {
	switch e.Kind {
	case PeerMessage:
		w.replicas[e.To.Node].HandleMessage(e.From.Node, e.Msg.(protocol.Message))
	case Request:
		w.replicas[e.To.Node].HandleRequest(e.req)
	case Reply:
		if c, ok := w.clients[e.To.Client]; ok {
			c.deliver(e.reply)
		}
	}
}

// Advance moves the clock forward by us, firing every timer that falls due, in due order.
func (w *World) Advance(us int64) {
	end := w.nowUs + us
	for {
		i := -1
		for j, tm := range w.timers {
			if tm.atUs <= end && (i < 0 || tm.atUs < w.timers[i].atUs || tm.atUs == w.timers[i].atUs && tm.seq < w.timers[i].seq) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		tm := w.timers[i]
		w.timers = slices.Delete(w.timers, i, i+1)
		w.nowUs = max(w.nowUs, tm.atUs)
		if tm.fn != nil {
			tm.fn()
		} else {
			w.replicas[tm.node].HandleTimer(tm.id)
		}
	}
	w.nowUs = end
}

func (w *World) addTimer(tm timer) {
	w.seq++
	tm.seq = w.seq
	w.timers = append(w.timers, tm)
}

// History returns every transaction the clients finished, with each node's version order (from
// protocol.VersionOrderer when the replica implements it, else its store).
func (w *World) History() *history.History {
	h := &history.History{Txns: slices.Clone(w.txns)}
	for i := range w.replicas {
		node := protocol.NodeID(i)
		h.Replicas = append(h.Replicas, history.Replica{Name: Endpoint{Node: node}.String(), VersionOrder: w.versionOrder(node)})
	}
	return h
}

// Client is one client session: its protocol library over the world's links.
type Client struct {
	w       *World
	id      txn.ClientID
	lib     tcc.Client
	sess    *tcc.Session
	nextSeq uint64
	started uint32 // transactions started
	pending map[uint64]func(protocol.Reply)
}

// Client adds a client session (ids 1, 2, …, in datacenter 0) and fails the test if the
// protocol's client factory refuses.
func (w *World) Client() *Client {
	w.t.Helper()
	id := txn.ClientID(len(w.clients) + 1)
	c := &Client{w: w, id: id, pending: map[uint64]func(protocol.Reply){}}
	lib, err := w.newCli(tcc.ClientConfig{ID: id, DC: 0, Layout: w.layout, Transport: c,
		Rand: rand.New(rand.NewPCG(uint64(id), 11)), Params: w.params})
	if err != nil {
		w.t.Fatal(err)
	}
	c.lib = lib
	c.sess = tcc.NewSession(lib, c, id, "dc0", fmt.Sprintf("c%d", id), func(t history.Txn) { w.txns = append(w.txns, t) })
	w.clients[id] = c
	return c
}

// ID returns the client's id.
func (c *Client) ID() txn.ClientID { return c.id }

// Lib returns the client's protocol library, for white-box assertions.
func (c *Client) Lib() tcc.Client { return c.lib }

// CallNode implements tcc.Transport: the request waits in flight until delivered.
func (c *Client) CallNode(to protocol.NodeID, req protocol.Request, done func(protocol.Reply)) {
	c.nextSeq++
	req.Client, req.Seq = c.id, c.nextSeq
	c.pending[req.Seq] = done
	c.w.push(Envelope{Kind: Request, From: Endpoint{Client: c.id}, To: Endpoint{Node: to}, Msg: req.Op, req: req})
}

// NowUs implements tcc.Transport.
func (c *Client) NowUs() int64 { return c.w.nowUs }

// After implements tcc.Transport: fn runs when Advance reaches its time.
func (c *Client) After(delayUs int64, fn func()) {
	c.w.addTimer(timer{atUs: c.w.nowUs + max(delayUs, 0), fn: fn})
}

func (c *Client) deliver(r protocol.Reply) {
	if done, ok := c.pending[r.Seq]; ok {
		delete(c.pending, r.Seq)
		done(r)
	}
}

// Handle is one transaction a client started.
type Handle struct {
	id    txn.ID
	done  bool
	read  tcc.ReadResult
	write tcc.WriteResult
}

// ID returns the transaction's id.
func (h *Handle) ID() txn.ID { return h.id }

// Done reports whether the transaction finished.
func (h *Handle) Done() bool { return h.done }

// ReadResult returns a finished ROT's result.
func (h *Handle) ReadResult() tcc.ReadResult { return h.read }

// WriteResult returns a finished WOT's result.
func (h *Handle) WriteResult() tcc.WriteResult { return h.write }

// Values returns a finished ROT's values as strings ("" for the initial version), in request
// order.
func (h *Handle) Values() []string {
	out := make([]string, len(h.read.Reads))
	for i, r := range h.read.Reads {
		out[i] = string(r.Value)
	}
	return out
}

// nextID is the id the session gives its next transaction (tcc.Session numbers them 1, 2, …).
func (c *Client) nextID() txn.ID { return txn.NewID(c.id, c.started+1) }

// Read starts a ROT of keys.
func (c *Client) Read(keys ...string) *Handle {
	h := &Handle{id: c.nextID()}
	c.started++
	c.sess.Read(keys, func(r tcc.ReadResult) { h.done, h.read = true, r })
	return h
}

// Write starts a WOT writing kv, in sorted key order (values are the strings given).
func (c *Client) Write(kv map[string]string) *Handle {
	h := &Handle{id: c.nextID()}
	c.started++
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	writes := make([]txn.Write, len(keys))
	for i, k := range keys {
		writes[i] = txn.Write{Key: k, Value: []byte(kv[k])}
	}
	c.sess.Write(writes, func(r tcc.WriteResult) { h.done, h.write = true, r })
	return h
}

// env is one node's protocol.Env.
type env struct {
	w     *World
	id    protocol.NodeID
	store *store.Store
	rand  *rand.Rand
}

func (e *env) NowUs() int64        { return e.w.nowUs }
func (e *env) Rand() *rand.Rand    { return e.rand }
func (e *env) Store() *store.Store { return e.store }

func (e *env) Send(to protocol.NodeID, m protocol.Message) {
	e.w.push(Envelope{Kind: PeerMessage, From: Endpoint{Node: e.id}, To: Endpoint{Node: to}, Msg: m})
}

func (e *env) SetTimer(afterUs int64, id protocol.TimerID) {
	e.w.addTimer(timer{atUs: e.w.nowUs + max(afterUs, 0), node: e.id, id: id})
}

func (e *env) Reply(r protocol.Reply) {
	e.w.push(Envelope{Kind: Reply, From: Endpoint{Node: e.id}, To: Endpoint{Client: r.Client}, Msg: r.Op, reply: r})
}
