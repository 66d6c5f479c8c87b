// Package logtest drives the log family's stage machines by hand for scenario tests: every
// node of a layout runs in one World with a virtual clock, its sends, timers and replies
// queued as events that the test delivers in time order (or injects, drops and holds), and a
// hook runs after every event so that invariants are checked after each one. It is the log
// family's counterpart of internal/scripted, whose worlds have one replica per datacenter.
package logtest

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// World runs the nodes of one deployment by hand.
type World struct {
	Topo  *topology.Topology
	Nodes []protocol.Node
	Reps  []protocol.Replica
	// factory and params build the replicas (Restart builds them again); gen counts each
	// node's restarts, so that a restarted node's old timers do not reach its new replica.
	factory protocol.Factory
	params  protocol.Params
	gen     []int
	nowUs   int64
	seq     uint64
	queue   []*event
	// IntraDCUs is the delay between two nodes of a datacenter, and of a client's request or
	// reply; between datacenters a message takes RTT/2.
	IntraDCUs int64
	// Drop, if set, loses message m from → to when it returns true.
	Drop func(from, to protocol.NodeID, m protocol.Message) bool
	// Replies collects every reply to a client, in delivery order.
	Replies []protocol.Reply
	// AfterEvent, if set, runs after every event a node handles.
	AfterEvent func()
	// Events counts the events handled.
	Events int
}

type event struct {
	atUs     int64
	seq      uint64
	from, to protocol.NodeID
	msg      protocol.Message
	req      *protocol.Request
	timer    protocol.TimerID
	isTimer  bool
	gen      int // the node's restarts when the timer was armed
	reply    *protocol.Reply
}

// New builds every node with factory and params, and starts them at time 0.
func New(topo *topology.Topology, nodes []protocol.Node, factory protocol.Factory, params protocol.Params) (*World, error) {
	w := &World{Topo: topo, Nodes: nodes, IntraDCUs: 100, factory: factory, params: params, gen: make([]int, len(nodes))}
	for _, n := range nodes {
		r, err := w.build(n.ID)
		if err != nil {
			return nil, err
		}
		w.Reps = append(w.Reps, r)
	}
	for _, r := range w.Reps {
		r.Start()
	}
	return w, nil
}

func (w *World) build(id protocol.NodeID) (protocol.Replica, error) {
	e := &env{w: w, self: id, rand: rand.New(rand.NewPCG(7, uint64(id)+uint64(w.gen[id])<<32)), store: store.New()}
	return w.factory(protocol.Config{Self: id, Nodes: w.Nodes, Topology: w.Topo, Params: w.params}, e)
}

// Restart replaces node id by a fresh replica that has lost all state (a machine restarted
// empty, spec 5.13) and starts it now; the old replica's timers are dropped, messages in flight
// to the node reach the new one.
func (w *World) Restart(id protocol.NodeID) error {
	w.gen[id]++
	r, err := w.build(id)
	if err != nil {
		return err
	}
	w.Reps[id] = r
	r.Start()
	return nil
}

// NowUs is the world's clock.
func (w *World) NowUs() int64 { return w.nowUs }

func (w *World) push(e *event) {
	w.seq++
	e.seq = w.seq
	i := sort.Search(len(w.queue), func(i int) bool { return w.queue[i].atUs > e.atUs }) // (time, order)
	w.queue = append(w.queue, nil)
	copy(w.queue[i+1:], w.queue[i:])
	w.queue[i] = e
}

func (w *World) delayUs(from, to protocol.NodeID) int64 {
	a, b := w.Nodes[from].DC, w.Nodes[to].DC
	if a == b {
		return w.IntraDCUs
	}
	return int64(w.Topo.RTTMs[a][b] * 500)
}

// Inject delivers m from → to at time atUs, outside any link's order.
func (w *World) Inject(from, to protocol.NodeID, m protocol.Message, atUs int64) {
	w.push(&event{atUs: atUs, from: from, to: to, msg: m})
}

// Request sends op from client to node now; the reply lands in Replies.
func (w *World) Request(client txn.ClientID, seq uint64, to protocol.NodeID, op protocol.Message) {
	w.push(&event{atUs: w.nowUs + w.IntraDCUs, to: to, req: &protocol.Request{Client: client, Seq: seq, Kind: protocol.Operation, Op: op}})
}

// RunUntil handles every event due at or before tUs, in (time, order) order.
func (w *World) RunUntil(tUs int64) {
	for {
		if len(w.queue) == 0 || w.queue[0].atUs > tUs {
			break
		}
		e := w.queue[0]
		w.queue = w.queue[1:]
		w.nowUs = e.atUs
		switch {
		case e.reply != nil:
			w.Replies = append(w.Replies, *e.reply)
			continue
		case e.isTimer:
			if e.gen != w.gen[e.to] {
				continue // armed by a replica that has since restarted
			}
			w.Reps[e.to].HandleTimer(e.timer)
		case e.req != nil:
			w.Reps[e.to].HandleRequest(*e.req)
		default:
			w.Reps[e.to].HandleMessage(e.from, e.msg)
		}
		w.Events++
		if w.AfterEvent != nil {
			w.AfterEvent()
		}
	}
	w.nowUs = max(w.nowUs, tUs)
}

// Pending describes the messages in flight, for failure messages.
func (w *World) Pending() string {
	s := ""
	for _, e := range w.queue {
		if !e.isTimer && e.reply == nil {
			s += fmt.Sprintf("%d→%d %T @%d\n", e.from, e.to, e.msg, e.atUs)
		}
	}
	return s
}

type env struct {
	w     *World
	self  protocol.NodeID
	rand  *rand.Rand
	store *store.Store
}

func (e *env) NowUs() int64        { return e.w.nowUs }
func (e *env) Rand() *rand.Rand    { return e.rand }
func (e *env) Store() *store.Store { return e.store }

func (e *env) Send(to protocol.NodeID, m protocol.Message) {
	w := e.w
	if int(to) < 0 || int(to) >= len(w.Reps) || (w.Drop != nil && w.Drop(e.self, to, m)) {
		return
	}
	w.push(&event{atUs: w.nowUs + w.delayUs(e.self, to), from: e.self, to: to, msg: m})
}

func (e *env) SetTimer(afterUs int64, id protocol.TimerID) {
	e.w.push(&event{atUs: e.w.nowUs + afterUs, to: e.self, timer: id, isTimer: true, gen: e.w.gen[e.self]})
}

func (e *env) Reply(r protocol.Reply) {
	e.w.push(&event{atUs: e.w.nowUs + e.w.IntraDCUs, reply: &r})
}
