// Package sim is Meridian's deterministic discrete-event WAN simulator. It drives unmodified
// protocol replicas (package protocol) and clients (package client) in virtual time on one
// goroutine: events run in (time, sequence) order, all randomness comes from one seeded PRNG,
// and so the same Config always produces the same run, byte for byte.
//
// The network model (spec §6.2): a message between datacenters A and B takes RTT(A,B)/2 plus
// jitter drawn from Normal(0, σ²/2) truncated at ±3σ/√2, where σ is the pair's RTT standard
// deviation; every directed link is FIFO. Each datacenter's clock reads virtual time plus a fixed
// offset plus a drift. Faults follow a schedule: a datacenter outage, a partition between two
// datacenters, or extra delay on a link. An optional service-time model charges CPU time per
// handled input, so a busy replica queues its inputs as a real server does.
//
// A datacenter outage freezes the datacenter: its replicas and clients stop, peer messages sent
// to it are lost, its own requests, replies and timers wait, and when the outage ends everything
// resumes where it stopped. This models a fail-stop crash whose replicas recover all their state
// from durable storage (the real servers' concern); in-flight work at the crashed datacenter is
// delayed, never lost.
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/store"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/txn"
)

// Service is the optional CPU cost model: a replica handles one input at a time, each costing
// the given microseconds, and inputs that arrive while it is busy wait in FIFO order. The zero
// value means free, instantaneous compute.
type Service struct {
	PerMessageUs int64 // per peer message received
	PerKBUs      int64 // per KiB of received message (SizeBytes)
	PerRequestUs int64 // per client request of any kind
	PerCommitUs  int64 // extra per commit request
}

// Config describes one simulated run completely: replaying it needs nothing else.
type Config struct {
	Topology *topology.Topology
	// Nodes places replicas; nil means one replica per datacenter.
	Nodes   []protocol.Node
	Factory protocol.Factory
	Params  protocol.Params
	Seed    uint64
	// Jitter scales each link's standard deviation (0: exact RTT/2 delays; 1: the topology's).
	Jitter float64
	// ClockOffsetUs and ClockDriftPPM give each datacenter's clock error (nil: none).
	ClockOffsetUs []int64
	ClockDriftPPM []float64
	// ClientHopUs is the one-way delay between a client and a replica in its datacenter;
	// IntraDCUs between two replicas in one datacenter.
	ClientHopUs int64
	IntraDCUs   int64
	Faults      []Fault
	Service     Service
	Chaos       Chaos
}

// Chaos perturbs the network beyond the topology, for safety tests (spec §7.3): messages are
// lost or duplicated at random, and with Reorder links stop being FIFO and every message gets up
// to ExtraDelayMaxUs of extra random delay. The zero value is a well-behaved network.
type Chaos struct {
	LossProb        float64
	DuplicateProb   float64
	Reorder         bool
	ExtraDelayMaxUs int64
}

// DefaultClientHopUs is the client-to-local-replica one-way delay (spec §6.2: 0.5 ms).
const DefaultClientHopUs = 500

type eventKind uint8

const (
	evMessage eventKind = iota + 1
	evRequest
	evTimer
	evReply // a reply reaching a client
	evWake  // a busy replica becomes free (service model)
	evCall  // a callback: client code, a fault transition
)

type event struct {
	at    int64
	seq   uint64
	kind  eventKind
	dc    int // the datacenter whose outage freezes this event; -1 for none
	node  protocol.NodeID
	from  protocol.NodeID
	msg   protocol.Message
	req   protocol.Request
	tmr   protocol.TimerID
	fn    func()
	conn  *Conn // evReply
	reply protocol.Reply
}

// Sim is one simulated run.
type Sim struct {
	cfg      Config
	nowUs    int64
	seq      uint64
	queue    eventQueue
	free     []*event // dispatched events, reused to spare the garbage collector
	netRand  *rand.Rand
	nodes    []*node
	linkLast [][]int64 // last delivery time per directed node pair (FIFO)

	down       []bool    // datacenter frozen
	deferred   []*event  // events waiting for their datacenter to return
	cutLinks   [][]int   // active partitions per datacenter pair
	extraDelay [][]int64 // active extra one-way delay per datacenter pair
	clients    map[txn.ClientID]*Conn
	stats      Stats
}

// Stats counts what a run did.
type Stats struct {
	Events             uint64
	Messages           uint64 // peer messages sent
	MessagesDropped    uint64 // lost to partitions, outages and chaos
	MessagesDuplicated uint64 // sent twice by chaos
}

// New builds the replicas of cfg and starts them at virtual time 0.
func New(cfg Config) (*Sim, error) {
	topo := cfg.Topology
	if topo == nil || cfg.Factory == nil {
		return nil, errors.New("sim: config needs a topology and a protocol")
	}
	n := topo.N()
	if cfg.Nodes == nil {
		for dc := range n {
			cfg.Nodes = append(cfg.Nodes, protocol.Node{ID: protocol.NodeID(dc), DC: dc})
		}
	}
	if cfg.ClockOffsetUs != nil && len(cfg.ClockOffsetUs) != n {
		return nil, fmt.Errorf("sim: %d clock offsets for %d datacenters", len(cfg.ClockOffsetUs), n)
	}
	if cfg.ClockDriftPPM != nil && len(cfg.ClockDriftPPM) != n {
		return nil, fmt.Errorf("sim: %d clock drifts for %d datacenters", len(cfg.ClockDriftPPM), n)
	}
	if cfg.Jitter < 0 || cfg.ClientHopUs < 0 || cfg.IntraDCUs < 0 {
		return nil, errors.New("sim: jitter and delays must not be negative")
	}
	if c := cfg.Chaos; c.LossProb < 0 || c.LossProb >= 1 || c.DuplicateProb < 0 || c.DuplicateProb > 1 || c.ExtraDelayMaxUs < 0 {
		return nil, fmt.Errorf("sim: chaos needs 0 ≤ loss < 1, 0 ≤ duplication ≤ 1 and a non-negative extra delay, got %+v", c)
	}
	master := rand.New(rand.NewPCG(cfg.Seed, 0x6d6572696469616e))
	s := &Sim{
		cfg:        cfg,
		netRand:    rand.New(rand.NewPCG(master.Uint64(), master.Uint64())),
		down:       make([]bool, n),
		cutLinks:   square[int](n),
		extraDelay: square[int64](n),
		linkLast:   square[int64](len(cfg.Nodes)),
	}
	for _, f := range cfg.Faults {
		if err := s.schedule(f); err != nil {
			return nil, err
		}
	}
	for i, nd := range cfg.Nodes {
		if nd.ID != protocol.NodeID(i) || nd.DC < 0 || nd.DC >= n {
			return nil, fmt.Errorf("sim: node %d is malformed (id %d, datacenter %d)", i, nd.ID, nd.DC)
		}
		env := &node{sim: s, id: nd.ID, dc: nd.DC, store: store.New(),
			rand: rand.New(rand.NewPCG(master.Uint64(), master.Uint64()))}
		if cfg.ClockOffsetUs != nil {
			env.offsetUs = cfg.ClockOffsetUs[nd.DC]
		}
		if cfg.ClockDriftPPM != nil {
			env.driftPPM = cfg.ClockDriftPPM[nd.DC]
		}
		pc := protocol.Config{Self: nd.ID, Nodes: cfg.Nodes, Topology: topo, Params: cfg.Params}
		r, err := cfg.Factory(pc, env)
		if err != nil {
			return nil, err
		}
		env.replica = r
		s.nodes = append(s.nodes, env)
	}
	// Start runs as each replica's first event, after any fault beginning at 0: a datacenter
	// whose outage starts at 0 starts only when the outage ends.
	for _, nd := range s.nodes {
		s.After(nd.dc, 0, func() {
			nd.outAt = s.nowUs
			nd.replica.Start()
		})
	}
	return s, nil
}

func square[T any](n int) [][]T {
	m := make([][]T, n)
	for i := range m {
		m[i] = make([]T, n)
	}
	return m
}

// NowUs returns the current virtual time.
func (s *Sim) NowUs() int64 { return s.nowUs }

// Config returns the run's configuration (with defaults filled in).
func (s *Sim) Config() Config { return s.cfg }

// Stats returns the counters so far.
func (s *Sim) Stats() Stats { return s.stats }

// Nodes returns the replicas' placements.
func (s *Sim) Nodes() []protocol.Node { return s.cfg.Nodes }

// Store returns node id's store, for inspection after (or during) a run.
func (s *Sim) Store(id protocol.NodeID) *store.Store { return s.nodes[id].store }

// Replica returns node id's protocol instance, for scenario tests that inspect its state.
func (s *Sim) Replica(id protocol.NodeID) protocol.Replica { return s.nodes[id].replica }

// Down reports whether datacenter dc is in an outage.
func (s *Sim) Down(dc int) bool { return s.down[dc] }

// After runs fn after delayUs of virtual time. If dc ≥ 0, fn belongs to datacenter dc (client
// code there) and waits out that datacenter's outages.
func (s *Sim) After(dc int, delayUs int64, fn func()) {
	e := s.newEvent()
	e.at, e.kind, e.dc, e.fn = s.nowUs+max(delayUs, 0), evCall, dc, fn
	s.push(e)
}

// newEvent returns a zeroed event, recycled when possible.
func (s *Sim) newEvent() *event {
	if n := len(s.free); n > 0 {
		e := s.free[n-1]
		s.free = s.free[:n-1]
		return e
	}
	return &event{}
}

func (s *Sim) push(e *event) {
	s.seq++
	e.seq = s.seq
	s.queue.push(e)
}

// RunUntil processes every event due at or before virtual time tUs and leaves the clock at tUs.
func (s *Sim) RunUntil(tUs int64) {
	for len(s.queue) > 0 && s.queue[0].at <= tUs {
		e := s.queue.pop()
		s.nowUs = e.at
		s.stats.Events++
		if !s.dispatch(e) {
			*e = event{}
			s.free = append(s.free, e)
		}
	}
	s.nowUs = max(s.nowUs, tUs)
}

// dispatch runs e and reports whether e was kept (deferred or requeued) rather than done.
func (s *Sim) dispatch(e *event) (kept bool) {
	if e.dc >= 0 && s.down[e.dc] {
		if e.kind == evMessage {
			s.stats.MessagesDropped++ // the datacenter is unreachable
			return false
		}
		s.deferred = append(s.deferred, e)
		return true
	}
	switch e.kind {
	case evCall:
		e.fn()
	case evReply:
		e.conn.deliver(e.reply)
	case evMessage, evRequest, evTimer:
		return s.nodes[e.node].run(e)
	case evWake:
		s.nodes[e.node].wake()
	}
	return false
}

// cost returns the CPU time the service model charges for input e.
func (s *Sim) cost(e *event) int64 {
	svc := s.cfg.Service
	switch e.kind {
	case evMessage:
		c := svc.PerMessageUs
		if svc.PerKBUs > 0 { // SizeBytes walks the message: only when it matters
			c += svc.PerKBUs * int64(e.msg.SizeBytes()) / 1024
		}
		return c
	case evRequest:
		if e.req.Kind == protocol.Commit {
			return svc.PerRequestUs + svc.PerCommitUs
		}
		return svc.PerRequestUs
	}
	return 0
}

// sendMessage puts m on the link from → to, leaving the sender at atUs.
func (s *Sim) sendMessage(from, to protocol.NodeID, m protocol.Message, atUs int64) {
	s.stats.Messages++
	a, b := s.cfg.Nodes[from].DC, s.cfg.Nodes[to].DC
	chaos := s.cfg.Chaos
	if s.cutLinks[a][b] > 0 || s.down[b] || (chaos.LossProb > 0 && s.netRand.Float64() < chaos.LossProb) {
		s.stats.MessagesDropped++
		return
	}
	copies := 1
	if chaos.DuplicateProb > 0 && s.netRand.Float64() < chaos.DuplicateProb {
		copies = 2
		s.stats.MessagesDuplicated++
	}
	for range copies {
		deliver := atUs + s.oneWayUs(a, b)
		if chaos.Reorder {
			deliver += s.netRand.Int64N(chaos.ExtraDelayMaxUs + 1)
		} else {
			deliver = max(deliver, s.linkLast[from][to]) // FIFO per directed link
			s.linkLast[from][to] = deliver
		}
		e := s.newEvent()
		e.at, e.kind, e.dc, e.node, e.from, e.msg = deliver, evMessage, b, to, from, m
		s.push(e)
	}
}

// oneWayUs draws one message's delay between datacenters a and b.
func (s *Sim) oneWayUs(a, b int) int64 {
	if a == b {
		return s.cfg.IntraDCUs
	}
	return s.cfg.Topology.OneWayDelayUs(a, b, s.cfg.Jitter, s.netRand) + s.extraDelay[a][b]
}

// node is one replica's Env.
type node struct {
	sim       *Sim
	id        protocol.NodeID
	dc        int
	replica   protocol.Replica
	store     *store.Store
	rand      *rand.Rand
	offsetUs  int64
	driftPPM  float64
	busyUntil int64    // service model: when the current input's processing ends
	backlog   []*event // service model: inputs waiting, in arrival order
	outAt     int64    // when the current handler's effects leave the node
}

// run hands input e to the replica now, or, while the replica is busy or others wait (service
// model), queues it behind them in arrival order and reports that it kept e.
func (nd *node) run(e *event) (queued bool) {
	s := nd.sim
	if nd.busyUntil > s.nowUs || len(nd.backlog) > 0 {
		nd.backlog = append(nd.backlog, e)
		if len(nd.backlog) == 1 {
			nd.scheduleWake()
		}
		return true
	}
	nd.handle(e)
	return false
}

// handle runs input e, charging its service time.
func (nd *node) handle(e *event) {
	s := nd.sim
	nd.busyUntil = s.nowUs + s.cost(e)
	nd.outAt = nd.busyUntil
	switch e.kind {
	case evMessage:
		nd.replica.HandleMessage(e.from, e.msg)
	case evRequest:
		nd.replica.HandleRequest(e.req)
	case evTimer:
		nd.replica.HandleTimer(e.tmr)
	}
}

func (nd *node) scheduleWake() {
	s := nd.sim
	e := s.newEvent()
	e.at, e.kind, e.dc, e.node = max(nd.busyUntil, s.nowUs), evWake, nd.dc, nd.id
	s.push(e)
}

// wake runs the oldest waiting input now that the replica is free.
func (nd *node) wake() {
	e := nd.backlog[0]
	nd.backlog = nd.backlog[1:]
	nd.handle(e)
	*e = event{}
	nd.sim.free = append(nd.sim.free, e)
	if len(nd.backlog) > 0 {
		nd.scheduleWake()
	}
}

// NowUs is the datacenter's local clock: virtual time plus offset plus drift.
func (nd *node) NowUs() int64 {
	t := nd.sim.nowUs
	return t + nd.offsetUs + int64(float64(t)*nd.driftPPM/1e6)
}

func (nd *node) Rand() *rand.Rand    { return nd.rand }
func (nd *node) Store() *store.Store { return nd.store }

func (nd *node) Send(to protocol.NodeID, m protocol.Message) {
	nd.sim.sendMessage(nd.id, to, m, nd.outAt)
}

func (nd *node) SetTimer(afterUs int64, id protocol.TimerID) {
	globalUs := int64(float64(afterUs) / (1 + nd.driftPPM/1e6))
	e := nd.sim.newEvent()
	e.at, e.kind, e.dc, e.node, e.tmr = nd.outAt+max(globalUs, 0), evTimer, nd.dc, nd.id, id
	nd.sim.push(e)
}

func (nd *node) Reply(r protocol.Reply) {
	c, ok := nd.sim.clients[r.Client]
	if !ok {
		return // no such client: nothing to deliver to
	}
	e := nd.sim.newEvent()
	e.at, e.kind, e.dc, e.conn, e.reply = nd.outAt+nd.sim.cfg.ClientHopUs, evReply, c.dc, c, r
	nd.sim.push(e)
}
