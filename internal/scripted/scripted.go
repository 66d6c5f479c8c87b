// Package scripted runs protocol replicas by hand for scenario tests taken from the papers'
// figures: the test decides when each replica sends its periodic log, when each client request
// arrives, and how long each message takes, in whole milliseconds ("ticks"). Within one tick the
// test's calls run in the order it makes them; by convention message deliveries first, then
// requests, then sends (spec §7.2).
package scripted

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// PropagateTimer is the timer id MF and Helios use for their periodic send.
const PropagateTimer protocol.TimerID = 1

// Outcome is a transaction's decision as its client saw it.
type Outcome struct {
	Status txn.Status
	Reason txn.AbortReason
	AtMs   int64
}

// World is a set of replicas, one per datacenter, driven by a script.
type World struct {
	Topo     *topology.Topology
	Replicas []protocol.Replica
	envs     []*env
	nowMs    int64
	seq      uint64
	inflight []delivery
	linkLast map[[2]int]int64
	// DelayMs gives the one-way delay of a message sent from → to at sendMs; by default RTT/2.
	DelayMs func(from, to int, sendMs int64) int64
	// Hold, if set, may hold message m from → to sent at sendMs until the time it returns (0:
	// not held). A held message stands outside its link's FIFO order, like a message of a
	// separate channel (the seed's client-to-replica messages, which Meridian's coordinators
	// send over the replica link): later messages on the link do not wait for it.
	Hold     func(from, to int, sendMs int64, m protocol.Message) int64
	Outcomes map[txn.ID]Outcome
	// AfterEvent, if set, runs after every input a replica handles (a message, a request, a
	// periodic send), so that a test can check invariants after every event.
	AfterEvent func()
	names      map[string]txn.ID
	Log        []string // every event, for failure messages
}

type delivery struct {
	atMs     int64
	seq      uint64
	from, to int
	msg      protocol.Message
}

// New builds one replica per datacenter of topo with the protocol factory and params.
// clockOffsetMs (nil: none) skews each datacenter's clock.
func New(topo *topology.Topology, factory protocol.Factory, params protocol.Params, clockOffsetMs []int64) (*World, error) {
	w := &World{Topo: topo, linkLast: map[[2]int]int64{}, Outcomes: map[txn.ID]Outcome{}, names: map[string]txn.ID{}}
	w.DelayMs = func(from, to int, _ int64) int64 { return int64(topo.RTTMs[from][to] / 2) }
	var nodes []protocol.Node
	for dc := range topo.N() {
		nodes = append(nodes, protocol.Node{ID: protocol.NodeID(dc), DC: dc})
	}
	for dc := range topo.N() {
		e := &env{w: w, dc: dc, store: store.New(), rand: rand.New(rand.NewPCG(1, uint64(dc)))}
		if clockOffsetMs != nil {
			e.offsetMs = clockOffsetMs[dc]
		}
		r, err := factory(protocol.Config{Self: protocol.NodeID(dc), Nodes: nodes, Topology: topo, Params: params}, e)
		if err != nil {
			return nil, err
		}
		w.envs = append(w.envs, e)
		w.Replicas = append(w.Replicas, r)
	}
	return w, nil
}

// Store returns datacenter dc's store.
func (w *World) Store(dc int) *store.Store { return w.envs[dc].store }

// NowMs returns the script's current time.
func (w *World) NowMs() int64 { return w.nowMs }

func (w *World) logf(format string, args ...any) {
	w.Log = append(w.Log, fmt.Sprintf("%4d  ", w.nowMs)+fmt.Sprintf(format, args...))
}

// Start starts every replica at the current time (their start-up sends go out now).
func (w *World) Start() {
	for dc, r := range w.Replicas {
		w.logf("%s starts", w.Topo.DCs[dc])
		r.Start()
	}
}

// RunTo delivers, in (time, send order), every message due at or before tMs, and advances the
// clock to tMs.
func (w *World) RunTo(tMs int64) {
	for {
		sort.Slice(w.inflight, func(i, j int) bool {
			a, b := w.inflight[i], w.inflight[j]
			return a.atMs < b.atMs || (a.atMs == b.atMs && a.seq < b.seq)
		})
		if len(w.inflight) == 0 || w.inflight[0].atMs > tMs {
			break
		}
		d := w.inflight[0]
		w.inflight = w.inflight[1:]
		w.nowMs = d.atMs
		w.logf("%s receives from %s", w.Topo.DCs[d.to], w.Topo.DCs[d.from])
		w.Replicas[d.to].HandleMessage(protocol.NodeID(d.from), d.msg)
		w.afterEvent()
	}
	w.nowMs = tMs
}

// Send makes datacenter dc run its periodic send now.
func (w *World) Send(dc int) {
	w.logf("%s sends", w.Topo.DCs[dc])
	w.Replicas[dc].HandleTimer(PropagateTimer)
	w.afterEvent()
}

func (w *World) afterEvent() {
	if w.AfterEvent != nil {
		w.AfterEvent()
	}
}

// Request submits transaction name at datacenter dc: it read each key of reads (at the version
// the store holds now, unless a version is forced with "key=txnName") and writes each key of
// writes.
func (w *World) Request(dc int, name string, reads, writes []string) {
	id := txn.NewID(txn.ClientID(len(w.names)+1), 1)
	w.names[name] = id
	t := &txn.Txn{ID: id}
	for _, k := range reads {
		key, ver, forced := strings.Cut(k, "=")
		v := w.envs[dc].store.Get(key).Writer
		if forced {
			v = w.names[ver]
		}
		t.Reads = append(t.Reads, txn.Read{Key: key, Version: v})
	}
	for _, k := range writes {
		t.Writes = append(t.Writes, txn.Write{Key: k, Value: []byte(name)})
	}
	w.logf("%s: %s requests commit", w.Topo.DCs[dc], name)
	w.Replicas[dc].HandleRequest(protocol.Request{Client: id.Client(), Seq: 1, Kind: protocol.Commit, Txn: t})
	w.afterEvent()
}

// ID returns the id of the transaction the script called name.
func (w *World) ID(name string) txn.ID { return w.names[name] }

// Outcome returns the decision for transaction name, if any.
func (w *World) Outcome(name string) (Outcome, bool) {
	o, ok := w.Outcomes[w.names[name]]
	return o, ok
}

// Trace returns the script's event log, one event per line.
func (w *World) Trace() string { return strings.Join(w.Log, "\n") }

type env struct {
	w        *World
	dc       int
	offsetMs int64
	store    *store.Store
	rand     *rand.Rand
}

func (e *env) NowUs() int64        { return (e.w.nowMs + e.offsetMs) * 1000 }
func (e *env) Rand() *rand.Rand    { return e.rand }
func (e *env) Store() *store.Store { return e.store }

// SetTimer is ignored: the script decides when replicas send.
func (e *env) SetTimer(int64, protocol.TimerID) {}

func (e *env) Send(to protocol.NodeID, m protocol.Message) {
	w := e.w
	if w.Hold != nil {
		if atMs := w.Hold(e.dc, int(to), w.nowMs, m); atMs > 0 {
			w.seq++
			w.inflight = append(w.inflight, delivery{atMs: atMs, seq: w.seq, from: e.dc, to: int(to), msg: m})
			return
		}
	}
	link := [2]int{e.dc, int(to)}
	at := max(w.nowMs+w.DelayMs(e.dc, int(to), w.nowMs), w.linkLast[link]) // FIFO links
	w.linkLast[link] = at
	w.seq++
	w.inflight = append(w.inflight, delivery{atMs: at, seq: w.seq, from: e.dc, to: int(to), msg: m})
}

func (e *env) Reply(r protocol.Reply) {
	w := e.w
	for name, id := range w.names {
		if id.Client() == r.Client {
			w.Outcomes[id] = Outcome{Status: r.Status, Reason: r.Reason, AtMs: w.nowMs}
			w.logf("%s: %s %s %s", w.Topo.DCs[e.dc], name, r.Status, r.Reason)
		}
	}
}
