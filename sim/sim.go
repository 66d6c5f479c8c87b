// Package sim is Meridian's deterministic discrete-event WAN simulator. It drives unmodified
// protocol replicas (package protocol) and clients (package client) in virtual time on one
// goroutine: events run in (time, sequence) order, all randomness comes from one seeded PRNG,
// and so the same Config always produces the same run, byte for byte.
//
// The network model (spec §6.2): a message between datacenters A and B takes RTT(A,B)/2 plus
// jitter drawn from Normal(0, σ²/2) truncated at ±3σ/√2, where σ is the pair's RTT standard
// deviation; every directed link is FIFO. By default each message draws its jitter independently;
// with Config.JitterCorrelationUs = τ > 0 the jitter of each directed datacenter link is instead
// a stationary Ornstein–Uhlenbeck process with the same distribution, sampled at each message's
// send time, so that messages sent close together see nearly the same delay. Each datacenter's
// clock reads virtual time plus a fixed offset plus a drift. Faults follow a schedule: a
// datacenter outage, a partition between two datacenters, extra delay on a link, a node crash, or
// a cut between two nodes. An optional service-time model charges CPU time per handled input,
// so a busy replica queues its inputs as a real server does.
//
// Inside a datacenter a message takes IntraDCUs and a client request or reply ClientHopUs. The
// optional LAN model (Config.LAN; the partitioned-store spec's WL7, after PeerSim) spreads both
// uniformly by ±JitterUs and gives every node and every client a network interface of
// BandwidthBitsPerSec: a message occupies its sender's outgoing side for size·8/bandwidth,
// behind the sender's earlier messages, and its receiver's incoming side likewise, behind what
// reached the receiver first. Every link stays FIFO: node to node, and client to node and back
// (a client keeps state only for the nodes it has messages in flight with, so thousands of
// clients and nodes cost no client×node table).
//
// A datacenter outage freezes the datacenter: its replicas and clients stop, peer messages sent
// to it are lost, its own requests, replies and timers wait, and when the outage ends everything
// resumes where it stopped. This models a fail-stop crash whose replicas recover all their state
// from durable storage (the real servers' concern); in-flight work at the crashed datacenter is
// delayed, never lost. A node crash (one partition server) freezes that node alone, the same
// way: peer messages sent to it, or due while it is down (including those waiting for its
// interface), are lost; its timers, its service backlog and the client requests sent to it wait
// and run at recovery; messages it sent before the crash are delivered. Its datacenter, the other
// nodes and the clients run on. A cut between two nodes drops the messages either sends the
// other while the cut lasts, as a partition does between datacenters.
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// Service is the optional CPU cost model: a replica handles one input at a time, each costing
// the given microseconds, and inputs that arrive while it is busy wait in FIFO order. The zero
// value means free, instantaneous compute.
type Service struct {
	PerMessageUs int64 // per peer message received
	PerKBUs      int64 // per KiB of received message (SizeBytes)
	PerRequestUs int64 // per client request of any kind
	PerCommitUs  int64 // extra per commit request
	// PerInput, if set, adds the CPU time of one input at a node: m is the peer message, or
	// the client request's Op (nil for requests without one). It lets a deployment whose nodes
	// play different roles (the log family's stages) charge each role its own cost. It is
	// called once per input, in event order, so it may keep state (a fractional carry).
	PerInput func(node protocol.NodeID, m protocol.Message) int64
	// Control, if set, marks the control-plane peer messages: small messages that carry no
	// application data (a log maintainer's head-of-log gossip). They are handled ahead of the
	// data inputs waiting at a busy replica (after the input under way, in their own arrival
	// order), and with the LAN bandwidth model they take no place in the network interfaces'
	// queues: they are modelled as sent in a priority band, as a deployment whose control traffic
	// has its own connection and priority class (its bytes are negligible beside the data's). They
	// stay FIFO per directed link among themselves, not with the data messages on the link.
	Control func(m protocol.Message) bool
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
	// JitterCorrelationUs is the correlation time τ of each directed datacenter link's jitter.
	// 0 draws every message's jitter independently (spec §6.2 read literally). τ > 0 makes each
	// link's jitter a stationary Ornstein–Uhlenbeck process (topology.JitterProcess) with the
	// same distribution of delays, sampled at each message's send time: messages sent Δt apart
	// have jitters correlated exp(−Δt/τ), as on a real WAN path, whose delay drifts slowly.
	JitterCorrelationUs int64
	// ClockOffsetUs and ClockDriftPPM give each datacenter's clock error (nil: none).
	ClockOffsetUs []int64
	ClockDriftPPM []float64
	// ClientHopUs is the one-way delay between a client and a replica in its datacenter;
	// IntraDCUs between two replicas in one datacenter.
	ClientHopUs int64
	IntraDCUs   int64
	// LAN adds jitter to the delays inside a datacenter and a bandwidth to every network
	// interface (spec WL7); the zero value keeps the fixed ClientHopUs and IntraDCUs delays.
	LAN     LAN
	Faults  []Fault
	Service Service
	Chaos   Chaos
	// AlignedTimers makes every timer a replica arms in its Start fire after exactly the delay
	// it asked for, so that every node's periodic timers run in phase from time 0. By default
	// such a timer first fires after a delay drawn uniformly from [1, delay] µs (a seeded random
	// phase), as real nodes, which start whenever they start, are never in phase; later timers
	// are never changed. Tests of analytic zero-load latencies that assume phase 0 set it.
	AlignedTimers bool
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

// LAN is the optional model of the network inside a datacenter and of every endpoint's network
// interface, for the partitioned protocols whose nodes share one datacenter (spec §4.2: PeerSim's
// FIFO channels with a 0.5 ms mean delay and 1 Gb/s per node). Spec WL7's setting is
// IntraDCUs = ClientHopUs = 500 with LAN{JitterUs: 500, BandwidthBitsPerSec: 1_000_000_000}: a
// uniform [0, 1] ms delay plus size / 1 Gb/s. The zero value is the plain model: fixed delays,
// infinite bandwidth.
type LAN struct {
	// JitterUs spreads the delays inside a datacenter uniformly: a message between two nodes of
	// one datacenter takes IntraDCUs ± JitterUs, a client request or reply ClientHopUs ± JitterUs
	// (every integer microsecond in the range equally likely). It may not exceed either base
	// delay. Links between datacenters keep the topology's jitter (Config.Jitter).
	JitterUs int64
	// BandwidthBitsPerSec is the speed of every node's and every client's network interface, in
	// each direction; 0 means infinite. A message occupies its sender's outgoing side for
	// size·8/bandwidth, queued behind the sender's earlier messages, then travels its link's
	// delay, then occupies its receiver's incoming side for the same time, queued behind what
	// arrived there before it (incast: many senders to one receiver). The size is
	// Message.SizeBytes for peer messages, and for client requests and replies a header plus the
	// Op's SizeBytes, or the keys and values they carry.
	BandwidthBitsPerSec int64
}

// clientHeaderBytes is the LAN model's size of a client request's or reply's own fields (frame,
// client id, sequence number, kind or status, version), added to its payload.
const clientHeaderBytes = 24

type eventKind uint8

const (
	evMessage eventKind = iota + 1
	evRequest
	evTimer
	evReply // a reply reaching a client
	evWake  // a busy replica becomes free (service model)
	evCall  // a callback: client code, a fault transition
	evStart // a replica's Start
)

// event is one scheduled happening. Requests and replies hang off pointers: most events are
// peer messages and timers, and a small event keeps a million of them in flight affordable.
type event struct {
	at    int64
	seq   uint64
	dc    int // the datacenter whose outage freezes this event; -1 for none
	msg   protocol.Message
	req   *protocol.Request
	reply *protocol.Reply
	conn  *Conn // evReply
	fn    func()
	tmr   protocol.TimerID
	node  protocol.NodeID
	from  protocol.NodeID
	kind  eventKind
	// LAN bandwidth model (evMessage, evRequest, evReply): whether the message already waited for
	// its receiver's incoming side, and the time it occupies a network interface.
	received bool
	txNs     int64
	// control marks a control-plane message (Service.Control).
	control bool
}

// Sim is one simulated run.
type Sim struct {
	cfg   Config
	nowUs int64
	seq   uint64
	queue eventQueue
	free  []*event // dispatched events, reused to spare the garbage collector
	// freeReqs and freeReplies are the request and reply structs of dispatched events, reused
	// apart from the events: a recycled event that became a timer would otherwise keep them
	// (a TCC run has about a hundred thousand timeouts pending).
	freeReqs    []*protocol.Request
	freeReplies []*protocol.Reply
	netRand     *rand.Rand
	nodes       []*node
	linkLast    [][]int64 // last delivery time per directed node pair (FIFO)
	ctlLast     [][]int64 // the same for control-plane messages (Service.Control)
	// jitter holds each directed datacenter link's jitter process (JitterCorrelationUs > 0).
	jitter [][]topology.JitterProcess

	down       []bool               // datacenter frozen
	deferred   []*event             // events waiting for their datacenter or node to return
	cutLinks   [][]int              // active partitions per datacenter pair
	extraDelay [][]int64            // active extra one-way delay per datacenter pair
	nodeFaults bool                 // some NodeCrash or NodeCut is scheduled: check the two below
	nodeDown   []int                // active crashes per node
	cutNodes   [][2]protocol.NodeID // active cuts between two nodes, lower id first; few
	clients    map[txn.ClientID]*Conn
	stats      Stats
	// phaseRand draws the phase of the timers armed in Start (Config.AlignedTimers).
	phaseRand *rand.Rand
}

// Stats counts what a run did.
type Stats struct {
	Events             uint64 // dispatched; a message that waits for its receiver's interface (LAN) counts twice
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
	if cfg.Jitter < 0 || cfg.JitterCorrelationUs < 0 || cfg.ClientHopUs < 0 || cfg.IntraDCUs < 0 {
		return nil, errors.New("sim: jitter, its correlation time and delays must not be negative")
	}
	if l := cfg.LAN; l.JitterUs < 0 || l.BandwidthBitsPerSec < 0 {
		return nil, fmt.Errorf("sim: LAN jitter and bandwidth must not be negative, got %+v", l)
	} else if l.JitterUs > min(cfg.IntraDCUs, cfg.ClientHopUs) {
		return nil, fmt.Errorf("sim: LAN jitter %d µs exceeds the intra-datacenter delay (%d µs) or the client hop (%d µs): delays would go negative",
			l.JitterUs, cfg.IntraDCUs, cfg.ClientHopUs)
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
		nodeDown:   make([]int, len(cfg.Nodes)),
	}
	if cfg.Service.Control != nil {
		s.ctlLast = square[int64](len(cfg.Nodes))
	}
	if tau := cfg.JitterCorrelationUs; tau > 0 {
		s.jitter = square[topology.JitterProcess](n)
		for a := range n {
			for b := range n {
				s.jitter[a][b].CorrelationUs = tau
			}
		}
	}
	for _, f := range cfg.Faults {
		if err := s.schedule(f); err != nil {
			return nil, err
		}
	}
	keys := map[int]*store.Keys{} // one key table per partition, shared by its replicas
	for i, nd := range cfg.Nodes {
		if nd.ID != protocol.NodeID(i) || nd.DC < 0 || nd.DC >= n {
			return nil, fmt.Errorf("sim: node %d is malformed (id %d, datacenter %d)", i, nd.ID, nd.DC)
		}
		if keys[nd.Partition] == nil {
			keys[nd.Partition] = store.NewKeys()
		}
		env := &node{sim: s, id: nd.ID, dc: nd.DC, store: store.NewShared(keys[nd.Partition]),
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
	// Drawn after every other stream, so that those stay as they were before timers had phases.
	s.phaseRand = rand.New(rand.NewPCG(master.Uint64(), master.Uint64()))
	// Start runs as each replica's first event, after any fault beginning at 0: a datacenter or
	// node whose outage starts at 0 starts only when the outage ends.
	for _, nd := range s.nodes {
		e := s.newEvent()
		e.kind, e.dc, e.node = evStart, nd.dc, nd.id
		s.push(e)
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

// NodeDown reports whether node id is crashed (a NodeCrash fault; its datacenter's outages are
// Down's).
func (s *Sim) NodeDown(id protocol.NodeID) bool { return s.nodeDown[id] > 0 }

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

// recycle zeroes e and frees it, and its request and reply structs apart.
func (s *Sim) recycle(e *event) {
	if e.req != nil {
		*e.req = protocol.Request{}
		s.freeReqs = append(s.freeReqs, e.req)
	}
	if e.reply != nil {
		*e.reply = protocol.Reply{}
		s.freeReplies = append(s.freeReplies, e.reply)
	}
	*e = event{}
	s.free = append(s.free, e)
}

// setRequest stores a copy of req in e, in a recycled request struct when there is one.
// Handlers get copies, so nothing outlives the event.
func (s *Sim) setRequest(e *event, req *protocol.Request) {
	if n := len(s.freeReqs); n > 0 {
		e.req = s.freeReqs[n-1]
		s.freeReqs = s.freeReqs[:n-1]
	} else {
		e.req = new(protocol.Request)
	}
	*e.req = *req
}

// setReply stores a copy of r in e as setRequest does.
func (s *Sim) setReply(e *event, r *protocol.Reply) {
	if n := len(s.freeReplies); n > 0 {
		e.reply = s.freeReplies[n-1]
		s.freeReplies = s.freeReplies[:n-1]
	} else {
		e.reply = new(protocol.Reply)
	}
	*e.reply = *r
}

func (s *Sim) push(e *event) {
	s.seq++
	e.seq = s.seq
	s.queue.push(e)
}

// pushHop schedules e, a client request or reply: most take the same client hop, so they come
// in time order and the queue keeps them in order cheaply.
func (s *Sim) pushHop(e *event) {
	s.seq++
	e.seq = s.seq
	s.queue.pushInOrder(e)
}

// RunUntil processes every event due at or before virtual time tUs and leaves the clock at tUs.
func (s *Sim) RunUntil(tUs int64) {
	for s.queue.len() > 0 && s.queue.nextAt() <= tUs {
		e := s.queue.pop()
		s.nowUs = e.at
		s.stats.Events++
		if !s.dispatch(e) {
			s.recycle(e)
		}
	}
	s.nowUs = max(s.nowUs, tUs)
}

// dispatch runs e and reports whether e was kept (deferred or requeued) rather than done.
func (s *Sim) dispatch(e *event) (kept bool) {
	if s.frozen(e) {
		if e.kind == evMessage {
			s.stats.MessagesDropped++ // the datacenter or node is unreachable
			if e.received {
				s.nodes[e.node].nic.waiting--
			}
			return false
		}
		s.deferred = append(s.deferred, e)
		return true
	}
	switch e.kind {
	case evCall:
		e.fn()
	case evStart:
		nd := s.nodes[e.node]
		nd.outAt = s.nowUs
		nd.starting = true
		nd.replica.Start()
		nd.starting = false
	case evReply:
		if s.cfg.LAN.BandwidthBitsPerSec > 0 && s.receive(&e.conn.nic, e) {
			return true
		}
		e.conn.deliver(*e.reply)
	case evMessage, evRequest:
		nd := s.nodes[e.node]
		if s.cfg.LAN.BandwidthBitsPerSec > 0 && !e.control && s.receive(&nd.nic, e) {
			return true
		}
		return nd.run(e)
	case evTimer:
		return s.nodes[e.node].run(e)
	case evWake:
		s.nodes[e.node].wake()
	}
	return false
}

// frozen reports whether e must wait (or, for a peer message, is lost) because its datacenter
// or its node is in an outage. A request waits for its client's datacenter and for its node.
func (s *Sim) frozen(e *event) bool {
	if e.dc >= 0 && s.down[e.dc] {
		return true
	}
	switch e.kind {
	case evRequest:
		return s.down[s.nodes[e.node].dc] || s.nodeDown[e.node] > 0
	case evMessage, evTimer, evWake, evStart:
		return s.nodeFaults && s.nodeDown[e.node] > 0
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
		if svc.PerInput != nil {
			c += svc.PerInput(e.node, e.msg)
		}
		return c
	case evRequest:
		c := svc.PerRequestUs
		if e.req.Kind == protocol.Commit {
			c += svc.PerCommitUs
		}
		if svc.PerInput != nil {
			c += svc.PerInput(e.node, e.req.Op)
		}
		return c
	}
	return 0
}

// sendMessage puts m on the link from → to, leaving the sender at atUs.
func (s *Sim) sendMessage(from, to protocol.NodeID, m protocol.Message, atUs int64) {
	s.stats.Messages++
	a, b := s.cfg.Nodes[from].DC, s.cfg.Nodes[to].DC
	chaos := s.cfg.Chaos
	if s.cutLinks[a][b] > 0 || s.down[b] || (s.nodeFaults && s.nodeUnreachable(from, to)) ||
		(chaos.LossProb > 0 && s.netRand.Float64() < chaos.LossProb) {
		s.stats.MessagesDropped++
		return
	}
	copies := 1
	if chaos.DuplicateProb > 0 && s.netRand.Float64() < chaos.DuplicateProb {
		copies = 2
		s.stats.MessagesDuplicated++
	}
	var txNs int64
	control := s.isControl(m)
	if s.cfg.LAN.BandwidthBitsPerSec > 0 && !control { // SizeBytes walks the message: only when it matters
		txNs = s.txNs(m.SizeBytes())
		atUs = s.nodes[from].nic.transmit(atUs, txNs)
	}
	last := s.linkLast
	if control {
		last = s.ctlLast
	}
	for range copies {
		deliver := atUs + s.oneWayUs(a, b, atUs)
		if chaos.Reorder {
			deliver += s.netRand.Int64N(chaos.ExtraDelayMaxUs + 1)
		} else {
			deliver = max(deliver, last[from][to]) // FIFO per directed link
			last[from][to] = deliver
		}
		e := s.newEvent()
		e.at, e.kind, e.dc, e.node, e.from, e.msg, e.txNs, e.control = deliver, evMessage, b, to, from, m, txNs, control
		s.push(e)
	}
}

// isControl reports whether m is a control-plane message (Service.Control).
func (s *Sim) isControl(m protocol.Message) bool {
	return s.cfg.Service.Control != nil && s.cfg.Service.Control(m)
}

// nodeUnreachable reports whether a node fault loses a message from → to: to has crashed, or
// the two are cut apart.
func (s *Sim) nodeUnreachable(from, to protocol.NodeID) bool {
	if s.nodeDown[to] > 0 {
		return true
	}
	pair := [2]protocol.NodeID{min(from, to), max(from, to)}
	for _, c := range s.cutNodes {
		if c == pair {
			return true
		}
	}
	return false
}

// oneWayUs draws the delay of one message between datacenters a and b, sent at atUs.
func (s *Sim) oneWayUs(a, b int, atUs int64) int64 {
	if a == b {
		return s.lanHopUs(s.cfg.IntraDCUs)
	}
	topo := s.cfg.Topology
	if s.jitter != nil && topo.StdDevMs[a][b]*s.cfg.Jitter > 0 {
		z := s.jitter[a][b].Sample(atUs, s.netRand)
		return topo.DelayUs(a, b, s.cfg.Jitter, z) + s.extraDelay[a][b]
	}
	return topo.OneWayDelayUs(a, b, s.cfg.Jitter, s.netRand) + s.extraDelay[a][b]
}

// lanHopUs draws one delay inside a datacenter: baseUs, spread by the LAN jitter.
func (s *Sim) lanHopUs(baseUs int64) int64 {
	if j := s.cfg.LAN.JitterUs; j > 0 {
		return baseUs - j + s.netRand.Int64N(2*j+1)
	}
	return baseUs
}

// lanClientHop returns when a client request or reply occupying a network interface for txNs,
// handed to the sending interface out at atUs, reaches the other end under the LAN model, and
// keeps its client link FIFO through *lastUs, the link's last delivery.
func (s *Sim) lanClientHop(out *nic, atUs, txNs int64, lastUs *int64) int64 {
	if s.cfg.LAN.BandwidthBitsPerSec > 0 {
		atUs = out.transmit(atUs, txNs)
	}
	at := max(atUs+s.lanHopUs(s.cfg.ClientHopUs), *lastUs)
	*lastUs = at
	return at
}

// requestBytes estimates req's size on the wire for the LAN model: the header plus the
// protocol's operation, or the keys, transaction and values it carries.
func requestBytes(req *protocol.Request) int {
	size := clientHeaderBytes + len(req.Key) + req.Txn.SizeBytes()
	for _, k := range req.Keys {
		size += len(k) + 2
	}
	if req.Op != nil {
		size += req.Op.SizeBytes()
	}
	return size
}

// replyBytes estimates r's size on the wire for the LAN model, as requestBytes does.
func replyBytes(r *protocol.Reply) int {
	size := clientHeaderBytes + len(r.Value) + len(r.Reason) + len(r.Err)
	for _, sr := range r.Snapshot {
		size += len(sr.Key) + len(sr.Value) + 12 // length prefixes and version
	}
	if r.Op != nil {
		size += r.Op.SizeBytes()
	}
	return size
}

// txNs is the time a message of size bytes occupies a network interface under the LAN model.
// Sizes are far below the 1 GB at which the product would overflow.
func (s *Sim) txNs(size int) int64 {
	return int64(size) * 8 * 1_000_000_000 / s.cfg.LAN.BandwidthBitsPerSec
}

// nic is one endpoint's network interface under the LAN bandwidth model. Times are kept in
// virtual nanoseconds, so that many small messages add up exactly.
type nic struct {
	sendFreeNs int64 // when the outgoing side finishes its queued messages
	recvFreeNs int64 // when the incoming side finishes its queued messages
	waiting    int   // received messages requeued to wait for the incoming side
}

// transmit queues a message of txNs on n's outgoing side at atUs and returns when its last bit
// has left, rounded up to the microsecond.
func (n *nic) transmit(atUs, txNs int64) (doneUs int64) {
	n.sendFreeNs = max(n.sendFreeNs, atUs*1000) + txNs
	return (n.sendFreeNs + 999) / 1000
}

// receive passes e, due now, through the incoming side of its receiver's interface n. Without
// contention the incoming side took e's bits as they arrived, over the txNs before now; if it was
// still busy then, or other messages wait for it, e is requeued to finish behind them, and
// receive reports that it kept e. Waiting messages keep their arrival order, so every link stays
// FIFO.
func (s *Sim) receive(n *nic, e *event) (requeued bool) {
	if e.received {
		n.waiting--
		return false
	}
	nowNs := s.nowUs * 1000
	if n.waiting == 0 && n.recvFreeNs+e.txNs <= nowNs {
		n.recvFreeNs = nowNs
		return false
	}
	n.recvFreeNs = max(n.recvFreeNs, nowNs-e.txNs) + e.txNs
	n.waiting++
	e.at, e.received = (n.recvFreeNs+999)/1000, true
	s.push(e)
	return true
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
	ctlWait   []*event // service model: control-plane messages waiting, served before backlog
	outAt     int64    // when the current handler's effects leave the node
	nic       nic      // LAN bandwidth model
	starting  bool     // in Start: timers armed now get a random phase (Config.AlignedTimers)
}

// run hands input e to the replica now, or, while the replica is busy or others wait (service
// model), queues it behind them in arrival order and reports that it kept e.
func (nd *node) run(e *event) (queued bool) {
	s := nd.sim
	if nd.busyUntil > s.nowUs || nd.waiting() > 0 {
		if nd.waiting() == 0 {
			nd.scheduleWake()
		}
		if e.control {
			nd.ctlWait = append(nd.ctlWait, e)
		} else {
			nd.backlog = append(nd.backlog, e)
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
		nd.replica.HandleRequest(*e.req)
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

// waiting counts the inputs waiting for the replica (service model).
func (nd *node) waiting() int { return len(nd.backlog) + len(nd.ctlWait) }

// wake runs the oldest waiting control-plane message, or else the oldest waiting input, now
// that the replica is free.
func (nd *node) wake() {
	var e *event
	if len(nd.ctlWait) > 0 {
		e, nd.ctlWait = nd.ctlWait[0], nd.ctlWait[1:]
	} else {
		e, nd.backlog = nd.backlog[0], nd.backlog[1:]
	}
	nd.handle(e)
	nd.sim.recycle(e)
	if nd.waiting() > 0 {
		nd.scheduleWake()
	}
}

// NowUs is the datacenter's local clock: virtual time plus offset plus drift.
func (nd *node) NowUs() int64 {
	t := nd.sim.nowUs
	if nd.driftPPM == 0 { // the common case, read several times per input: spare the float division
		return t + nd.offsetUs
	}
	return t + nd.offsetUs + int64(float64(t)*nd.driftPPM/1e6)
}

func (nd *node) Rand() *rand.Rand    { return nd.rand }
func (nd *node) Store() *store.Store { return nd.store }

func (nd *node) Send(to protocol.NodeID, m protocol.Message) {
	nd.sim.sendMessage(nd.id, to, m, nd.outAt)
}

func (nd *node) SetTimer(afterUs int64, id protocol.TimerID) {
	if nd.starting && afterUs > 1 && !nd.sim.cfg.AlignedTimers {
		afterUs = 1 + nd.sim.phaseRand.Int64N(afterUs)
	}
	globalUs := int64(float64(afterUs) / (1 + nd.driftPPM/1e6))
	e := nd.sim.newEvent()
	e.at, e.kind, e.dc, e.node, e.tmr = nd.outAt+max(globalUs, 0), evTimer, nd.dc, nd.id, id
	nd.sim.push(e)
}

func (nd *node) Reply(r protocol.Reply) {
	s := nd.sim
	c, ok := s.clients[r.Client]
	if !ok {
		return // no such client: nothing to deliver to
	}
	e := s.newEvent()
	e.at, e.kind, e.dc, e.conn = nd.outAt+s.cfg.ClientHopUs, evReply, c.dc, c
	s.setReply(e, &r)
	if s.cfg.LAN != (LAN{}) {
		if s.cfg.LAN.BandwidthBitsPerSec > 0 {
			e.txNs = s.txNs(replyBytes(e.reply))
		}
		e.at = s.lanClientHop(&nd.nic, nd.outAt, e.txNs, &c.link(nd.id, s.nowUs).replyLastUs)
	}
	s.pushHop(e)
}
