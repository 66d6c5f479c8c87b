// Package logsim runs a Chariots deployment in the discrete-event simulator (package sim): the
// layout's nodes with the WAN between datacenters, closed-loop clients that append (retrying
// an append they have no answer for), read a random record and append after it, faults and
// chaos, and elasticity events (a queue, a maintainer, a batcher or a filter split added
// under load). The run is checked periodically and at its end by chariots.Checker, then,
// once the faults have healed and every append is answered, by chariots.CheckConverged and
// the clients' own checks: every answered append is in every datacenter's log exactly once,
// where its answer said in its host's log, and after every record its client read before it.
package logsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// EventKind is an elasticity event (spec 5.12) or a stage machine restarting empty (5.13).
type EventKind uint8

// The events.
const (
	AddQueue EventKind = iota + 1
	AddMaintainer
	AddBatcher
	SplitFilter
	RestartBatcher
	RestartFilter
	RestartSender
	RestartReceiver
	RestartQueue     // the coordinating queue (the first active one)
	RestartLastQueue // the last active queue (the coordinator if it is alone)
)

var eventNames = map[EventKind]string{AddQueue: "add-queue", AddMaintainer: "add-maintainer", AddBatcher: "add-batcher", SplitFilter: "split-filter",
	RestartBatcher: "restart-batcher", RestartFilter: "restart-filter", RestartSender: "restart-sender", RestartReceiver: "restart-receiver",
	RestartQueue: "restart-queue", RestartLastQueue: "restart-last-queue"}

// restarts are the roles the restart events restart.
var restarts = map[EventKind]flstore.Role{RestartBatcher: flstore.Batcher, RestartFilter: flstore.Filter,
	RestartSender: flstore.Sender, RestartReceiver: flstore.Receiver, RestartQueue: flstore.Queue, RestartLastQueue: flstore.Queue}

// adds are the roles the elasticity events add.
var adds = map[EventKind]flstore.Role{AddQueue: flstore.Queue, AddMaintainer: flstore.Maintainer, AddBatcher: flstore.Batcher, SplitFilter: flstore.Filter}

// Event adds the first spare machine of a role to datacenter DC at AtUs (SplitFilter: the
// spare filter takes the even TOIds of host Host from a boundary ahead of the log), or
// restarts the first active machine of a role there with no state (Restart*; RestartLastQueue:
// the last active queue).
type Event struct {
	Kind EventKind
	DC   int
	Host int
	AtUs int64
}

// String renders the event for replay lines.
func (e Event) String() string {
	return fmt.Sprintf("%s:dc%d/host%d@%dus", eventNames[e.Kind], e.DC, e.Host, e.AtUs)
}

// Options describe one run completely.
type Options struct {
	Topology     *topology.Topology
	Params       protocol.Params
	Seed         uint64
	Jitter       float64
	ClientsPerDC int
	// DurationUs is how long clients start new appends; ThinkUs their pause between two.
	DurationUs, ThinkUs int64
	// RetryUs is how long a client waits for an answer before sending its append again.
	RetryUs int64
	// ReadProb is the chance a client reads a random record of its datacenter's log before an
	// append (which must then follow it everywhere).
	ReadProb  float64
	BodyBytes int
	Faults    []sim.Fault
	Chaos     sim.Chaos
	Events    []Event
	// SettleUs bounds the wait, after the appends and faults end, for every append to be
	// answered and the logs to converge.
	SettleUs int64
	// CheckEveryUs is the period of the checker during the run (0: only at the end).
	CheckEveryUs int64
	// RatePerSec, if positive, paces the clients to this many appends per second in all
	// (each client one append in flight, due times spread evenly); 0: closed loop with ThinkUs.
	RatePerSec float64
	// SampleEveryUs, if positive, records every stage machine's records handled per period.
	SampleEveryUs int64
	// Service is the simulator's CPU cost model (the zero value: free compute).
	Service sim.Service
	// Factory builds the stage machines (nil: chariots.Factory); a test may wrap it
	// (checkpointtest.Shadow).
	Factory protocol.Factory
	// Capacity, if set, adds each stage machine's CPU cost by role to Service and gives every
	// machine a network interface (Capacity).
	Capacity *Capacity
	// MachinesPerDC client machines per datacenter, besides the clients, append records of
	// BodyBytes open loop at MachineRatePerSec each, without waiting for answers (the source's
	// record generators, spec 9.3): machine i of a datacenter sends every record to its
	// batcher i mod batchers, so that a client's appends reach the filter in order.
	MachinesPerDC     int
	MachineRatePerSec float64
	// Hyksos, if set, makes the clients Hyksos clients (puts, gets and GET_TXNs, CH-I9
	// checked at the end) instead of appenders.
	Hyksos *HyksosWorkload
	// SampleUntilDrained keeps sampling the stages after DurationUs until every append is
	// answered (the tail of the source's Fig. 7.10).
	SampleUntilDrained bool
}

// String renders every parameter, for failure messages and replays.
func (o Options) String() string {
	keys := make([]string, 0, len(o.Params))
	for k := range o.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ps []string
	for _, k := range keys {
		ps = append(ps, k+"="+o.Params[k])
	}
	var fs []string
	for _, f := range o.Faults {
		fs = append(fs, f.String())
	}
	var es []string
	for _, e := range o.Events {
		es = append(es, e.String())
	}
	out := fmt.Sprintf("seed=%d topology=%s jitter=%.2f clients/dc=%d duration=%dus think=%dus retry=%dus read=%.2f params=[%s] faults=[%s] chaos=%+v events=[%s]",
		o.Seed, strings.Join(o.Topology.DCs, ","), o.Jitter, o.ClientsPerDC, o.DurationUs, o.ThinkUs, o.RetryUs, o.ReadProb,
		strings.Join(ps, " "), strings.Join(fs, " "), o.Chaos, strings.Join(es, " "))
	if o.MachinesPerDC > 0 {
		out += fmt.Sprintf(" machines/dc=%d machine-rate=%.0f/s", o.MachinesPerDC, o.MachineRatePerSec)
	}
	if o.Capacity != nil {
		out += fmt.Sprintf(" capacity=%+v", *o.Capacity)
	}
	if o.Hyksos != nil {
		out += fmt.Sprintf(" hyksos=%+v", *o.Hyksos)
	}
	return out
}

// Result is what a run did.
type Result struct {
	Appends  int // appends answered
	Retries  int // appends sent again
	Reads    int // records read before an append (Hyksos: gets and GET_TXNs)
	Restarts int // stage machines restarted empty
	// TokenRebuilds counts the token rebuilds the queues started since their last start
	// (chariots.Queue.Rebuilds): one per datacenter at start, then one per queue restart.
	TokenRebuilds int
	Records       []int
	EndUs         int64
	Sim           sim.Stats
	Snapshot      chariots.Snapshot
	// LatencyUs lists every answered append's latency (first send to answer), in answer order.
	LatencyUs []int64
	// Stages are the per-stage throughput series (SampleEveryUs > 0).
	Stages []StageSeries
	// HyksosRestarts counts GET_TXNs that took a newer snapshot because a put they needed was
	// collected.
	HyksosRestarts int
}

// StageSeries is one stage machine's records handled per sampling period (flstore.Counted),
// or a client machine's appends answered per period (Role "client", Node −1 − its index in
// the run).
type StageSeries struct {
	DC      int             `json:"dc"`
	Role    string          `json:"role"`
	Node    protocol.NodeID `json:"node"`
	Spare   bool            `json:"spare"`
	Records []uint64        `json:"records"`
}

// ack is one answered append.
type ack struct {
	dc          int
	client      txn.ClientID
	seq         uint64
	toid, lid   uint64
	readBefore  []flstore.Key
	readRecords []*flstore.Record
	// readLIds are positions in dc's log read before the append (Hyksos), resolved to
	// records at the end.
	readLIds []uint64
	// minLId asks for a position above it (explicit order; 0: none).
	minLId uint64
}

// run is one simulated run's driver state.
type run struct {
	o       Options
	cfg     chariots.Config
	s       *sim.Sim
	chk     *chariots.Checker
	rng     *rand.Rand
	acks    []ack
	res     Result
	err     error
	open    int // appends sent and not answered
	ctl     *sim.Conn
	clients [][]*flstore.Client // per datacenter
	// lastCount is every node's records handled at the last sample.
	lastCount []uint64
	// hyk is the Hyksos clients' record (reads and puts).
	hyk hyksosRun
	// machines are the client machines' series, machineAcks their appends answered so far,
	// lastMachine as of the last sample.
	machines    []StageSeries
	machineAcks []uint64
	lastMachine []uint64
}

// Run runs o and returns an error describing the first violation or liveness failure.
func Run(o Options) (Result, error) {
	cfg, err := chariots.ParseConfig(o.Topology.N(), o.Params, maxRTT(o.Topology))
	if err != nil {
		return Result{}, err
	}
	factory := o.Factory
	if factory == nil {
		factory = chariots.Factory
	}
	r := &run{o: o, cfg: cfg, chk: chariots.NewChecker(), rng: rand.New(rand.NewPCG(o.Seed, 0x6c6f67))}
	for _, e := range o.Events {
		if _, ok := restarts[e.Kind]; ok {
			factory = restartableFactory(factory, func(id protocol.NodeID, old protocol.Replica) {
				r.res.Restarts++
				r.chk.Restarted(id, old)
			})
			break
		}
	}
	svc, lan := o.Service, sim.LAN{}
	if o.Capacity != nil {
		lan = o.Capacity.apply(&svc, cfg.Layout.Role, false)
	}
	s, err := sim.New(sim.Config{Topology: o.Topology, Nodes: cfg.Layout.Nodes, Factory: factory, Params: o.Params,
		Seed: o.Seed, Jitter: o.Jitter, ClientHopUs: sim.DefaultClientHopUs, IntraDCUs: 250, Faults: o.Faults, Chaos: o.Chaos,
		Service: svc, LAN: lan})
	if err != nil {
		return Result{}, err
	}
	r.s = s
	r.clients = make([][]*flstore.Client, o.Topology.N())
	if r.ctl, err = s.Connect(^txn.ClientID(0), 0); err != nil {
		return Result{}, err
	}
	id := txn.ClientID(1)
	for dc := range o.Topology.N() {
		for range o.ClientsPerDC {
			c, err := s.Connect(id, cfg.Layout.Active(dc, flstore.Batcher)[0])
			if err != nil {
				return Result{}, err
			}
			r.startClient(c, id, dc)
			id++
		}
	}
	body := make([]byte, o.BodyBytes) // shared by the machines' records: bodies are never modified
	for dc := range o.Topology.N() {
		bs := cfg.Layout.Active(dc, flstore.Batcher)
		for i := range o.MachinesPerDC {
			c, err := s.Connect(id, bs[i%len(bs)])
			if err != nil {
				return Result{}, err
			}
			r.startMachine(c, id, dc, bs[i%len(bs)], body)
			id++
		}
	}
	for _, e := range o.Events {
		s.After(-1, e.AtUs, func() { r.elastic(e) })
	}
	if o.SampleEveryUs > 0 {
		r.sample()
	}
	if o.CheckEveryUs > 0 {
		var tick func()
		tick = func() {
			r.check()
			if r.err == nil {
				s.After(-1, o.CheckEveryUs, tick)
			}
		}
		s.After(-1, o.CheckEveryUs, tick)
	}
	end := o.DurationUs
	for _, f := range o.Faults {
		end = max(end, f.EndUs)
	}
	deadline := end + o.SettleUs
	for t := end; ; t += 10_000 {
		s.RunUntil(t)
		if r.err != nil {
			return r.res, r.err
		}
		if r.open == 0 && t >= end {
			snap := r.snapshot()
			if chariots.CheckConverged(snap) == nil {
				break
			}
		}
		if t >= deadline {
			snap := r.snapshot()
			r.res.Snapshot = snap
			return r.res, fmt.Errorf("no convergence %d µs after the appends and faults ended: %d appends unanswered; %v",
				o.SettleUs, r.open, chariots.CheckConverged(snap))
		}
	}
	r.check()
	if r.err != nil {
		return r.res, r.err
	}
	if err := r.readBack(); err != nil {
		r.res.Snapshot = r.snapshot()
		return r.res, err
	}
	snap := r.snapshot()
	if r.o.Hyksos != nil {
		r.res.HyksosRestarts = r.hyk.restarts
		if err := checkHyksos(snap, r.hyk); err != nil {
			r.res.Snapshot = snap
			return r.res, err
		}
	}
	r.res.Snapshot, r.res.EndUs, r.res.Sim = snap, s.NowUs(), s.Stats()
	r.res.Stages = append(r.res.Stages, r.machines...)
	for _, cs := range r.clients {
		for _, cl := range cs {
			r.res.Retries += cl.Retries()
		}
	}
	for dc := range snap.Logs {
		r.res.Records = append(r.res.Records, len(snap.Logs[dc]))
	}
	for id := range r.cfg.Layout.Nodes {
		if q, ok := r.replica(protocol.NodeID(id)).(*chariots.Queue); ok {
			r.res.TokenRebuilds += int(q.Rebuilds())
		}
	}
	return r.res, r.checkClients(snap)
}

// sample records every stage's records handled since the last sample, every SampleEveryUs
// while clients append.
func (r *run) sample() {
	l := r.cfg.Layout
	if r.res.Stages == nil {
		for id, n := range l.Nodes {
			r.res.Stages = append(r.res.Stages, StageSeries{DC: n.DC, Role: l.Role[id].String(), Node: n.ID, Spare: l.Spare[id]})
		}
		r.lastCount = make([]uint64, len(l.Nodes))
		r.lastMachine = make([]uint64, len(r.machines))
	} else {
		for id := range l.Nodes {
			n := r.replica(protocol.NodeID(id)).(flstore.Counted).Handled()
			r.res.Stages[id].Records = append(r.res.Stages[id].Records, n-r.lastCount[id])
			r.lastCount[id] = n
		}
		for i := range r.machines {
			r.machines[i].Records = append(r.machines[i].Records, r.machineAcks[i]-r.lastMachine[i])
			r.lastMachine[i] = r.machineAcks[i]
		}
	}
	if r.s.NowUs()+r.o.SampleEveryUs <= r.o.DurationUs || (r.o.SampleUntilDrained && r.open > 0) {
		r.s.After(-1, r.o.SampleEveryUs, r.sample)
	}
}

// startMachine runs client machine id (connection c) of datacenter dc: open-loop appends to
// batcher to at the machine rate, each answered append checked like a client's.
func (r *run) startMachine(c *sim.Conn, id txn.ClientID, dc int, to protocol.NodeID, body []byte) {
	idx := len(r.machines)
	r.machines = append(r.machines, StageSeries{DC: dc, Role: "client", Node: protocol.NodeID(-1 - idx)})
	r.machineAcks = append(r.machineAcks, 0)
	openLoop(c, to, r.o.MachineRatePerSec, r.o.DurationUs, body, func(seq uint64, sentUs int64) {
		r.open++
	}, func(seq uint64, sentUs int64, rep protocol.Reply) {
		res, ok := rep.Op.(*flstore.AppendResult)
		if rep.Err != "" || !ok {
			r.fail(fmt.Errorf("client machine %d's append %d: %q", id, seq, rep.Err))
			return
		}
		r.open--
		r.machineAcks[idx]++
		r.acks = append(r.acks, ack{dc: dc, client: id, seq: seq, toid: res.TOId, lid: res.LId})
		r.res.Appends++
		r.res.LatencyUs = append(r.res.LatencyUs, c.NowUs()-sentUs)
	})
}

// machineTickUs is how often an open-loop client machine sends the appends that fell due.
const machineTickUs = 100

// openLoop appends records of body to node to over c at ratePerSec until endUs, whatever the
// answers: sent runs as each append leaves, answered on its reply.
func openLoop(c *sim.Conn, to protocol.NodeID, ratePerSec float64, endUs int64, body []byte,
	sent func(seq uint64, sentUs int64), answered func(seq uint64, sentUs int64, rep protocol.Reply)) {
	startUs := c.NowUs()
	var seq uint64
	var tick func()
	tick = func() {
		now := c.NowUs()
		if now >= endUs {
			return
		}
		due := uint64(float64(now-startUs+machineTickUs) * ratePerSec / 1e6)
		for seq < due {
			seq++
			n := seq
			sent(n, now)
			op := &flstore.AppendOp{Record: &flstore.Record{Body: body, AppendSeq: n}}
			c.CallNode(to, protocol.Request{Kind: protocol.Operation, Op: op}, func(rep protocol.Reply) { answered(n, now, rep) })
		}
		c.After(machineTickUs, tick)
	}
	c.After(0, tick)
}

func maxRTT(t *topology.Topology) float64 {
	m := 0.0
	for dc := range t.N() {
		m = max(m, t.MaxRTTMs(dc))
	}
	return m
}

func (r *run) snapshot() chariots.Snapshot {
	return chariots.Take(r.cfg, r.replica)
}

func (r *run) check() {
	if r.err != nil {
		return
	}
	if err := r.chk.Check(r.snapshot()); err != nil {
		r.err = fmt.Errorf("at %d µs: %w", r.s.NowUs(), err)
	}
}

// startClient runs client id (connection c) of datacenter dc: think, maybe read, append, repeat.
func (r *run) startClient(c *sim.Conn, id txn.ClientID, dc int) {
	l := r.cfg.Layout
	cl := flstore.NewClient(flstore.ClientConfig{AppendTo: r.cfg.Layout.Active(dc, flstore.Batcher),
		Maintainers: l.Active(dc, flstore.Maintainer), Indexers: l.Active(dc, flstore.Indexer), RetryUs: r.o.RetryUs,
		Rand: rand.New(rand.NewPCG(r.o.Seed, uint64(id))), UnsafeIgnoreCoverage: r.o.Hyksos != nil && r.o.Hyksos.UnsafeIgnoreCoverage}, c)
	r.clients[dc] = append(r.clients[dc], cl)
	if r.o.Hyksos != nil {
		r.startHyksosClient(c, cl, id, dc)
		return
	}
	var seq uint64
	var next func()
	var dueUs int64 // paced clients: when the next append is due
	if r.o.RatePerSec > 0 {
		dueUs = r.rng.Int64N(r.paceUs() + 1)
	}
	next = func() {
		if c.NowUs() >= r.o.DurationUs {
			return
		}
		if r.o.RatePerSec > 0 {
			if wait := dueUs - c.NowUs(); wait > 0 {
				c.After(wait, next)
				return
			}
			dueUs += r.paceUs()
		}
		seq++
		a := &ack{dc: dc, client: id, seq: seq}
		if r.rng.Float64() >= r.o.ReadProb {
			r.appendRecord(c, cl, a, nil, nil, next)
			return
		}
		// Read a random record of the log up to the head, then append after it.
		cl.Head(func(h flstore.HLResult, err error) {
			if err != nil || h.HL == 0 {
				r.appendRecord(c, cl, a, nil, nil, next)
				return
			}
			l := 1 + r.rng.Uint64N(h.HL)
			cl.Read(l, l, func(recs []*flstore.Record, err error) {
				if err != nil {
					r.fail(err)
				}
				for _, rec := range recs {
					if rec.LId != l || l > h.HL {
						r.fail(fmt.Errorf("CH-I5: a read of position %d (head of log %d) returned position %d", l, h.HL, rec.LId))
					}
					a.readBefore = append(a.readBefore, rec.Key())
					a.readRecords = append(a.readRecords, rec)
					a.minLId = rec.LId // explicit order too (CH-I8): above what it read
					r.res.Reads++
				}
				r.appendRecord(c, cl, a, nil, nil, next)
			})
		})
	}
	c.After(r.rng.Int64N(r.o.ThinkUs+1), next)
}

// paceUs is each paced client's interval between two appends.
func (r *run) paceUs() int64 {
	return int64(float64(r.o.ClientsPerDC*r.o.Topology.N()) * 1e6 / r.o.RatePerSec)
}

func (r *run) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("at %d µs: %w", r.s.NowUs(), err)
	}
}

// appendRecord appends a's record, then thinks and runs then. A nil body is BodyBytes of zeros,
// tagged with its client and append number.
func (r *run) appendRecord(c *sim.Conn, cl *flstore.Client, a *ack, body []byte, tags []flstore.Tag, then func()) {
	r.open++
	startUs := c.NowUs()
	if body == nil {
		body = make([]byte, r.o.BodyBytes)
		tags = []flstore.Tag{{Name: ClientTag(a.client), Value: binary.BigEndian.AppendUint64(nil, a.seq)}}
	}
	done := func(res flstore.AppendResult, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.open--
		a.toid, a.lid = res.TOId, res.LId
		r.acks = append(r.acks, *a)
		r.res.Appends++
		r.res.LatencyUs = append(r.res.LatencyUs, c.NowUs()-startUs)
		c.After(r.rng.Int64N(r.o.ThinkUs+1), then)
	}
	if a.minLId > 0 {
		cl.AppendAfter(a.minLId, body, tags, done)
		return
	}
	cl.Append(body, tags, nil, done)
}

// ClientTag is the tag every append of client id carries (its value: the append number, 8
// bytes big-endian), for reads by tag.
func ClientTag(id txn.ClientID) string { return fmt.Sprintf("client:%d", id) }

// elastic carries out event e (elasticity, or a restart), through the control client's requests.
func (r *run) elastic(e Event) {
	l := r.cfg.Layout
	spare := func(role flstore.Role) (protocol.NodeID, bool) {
		for _, n := range l.All(e.DC, role) {
			if l.Spare[n] {
				return n, true
			}
		}
		return 0, false
	}
	call := func(to protocol.NodeID, op protocol.Message) {
		r.ctl.CallNode(to, protocol.Request{Kind: protocol.Operation, Op: op}, func(protocol.Reply) {})
	}
	if role, ok := restarts[e.Kind]; ok {
		act := l.Active(e.DC, role)
		if e.Kind == RestartLastQueue {
			act = act[len(act)-1:]
		}
		call(act[0], restartOp{})
		return
	}
	role, ok := adds[e.Kind]
	if !ok {
		return
	}
	n, ok := spare(role)
	if !ok || (e.Kind == SplitFilter && e.Host == e.DC) {
		return
	}
	var from uint64
	if e.Kind == SplitFilter {
		// The boundary: ahead of what the datacenter logged of the host (spec A16).
		from = r.snapshot().Truth[e.DC][e.Host] + 20
	}
	ctls, err := chariots.AddSpare(l, n, e.Host, from)
	if err != nil {
		return
	}
	for _, c := range ctls {
		call(c.To, c.Op)
	}
	if e.Kind == AddBatcher {
		for _, cl := range r.clients[e.DC] {
			cl.AddAppendTarget(n)
		}
	}
}

// readBack reads every datacenter's whole log through a client and compares it with the
// maintainers' state, and reads by tag the last three appends of a client of another
// datacenter (records from elsewhere are indexed too).
func (r *run) readBack() error {
	r.s.RunUntil(r.s.NowUs() + 50_000) // indexers catch up
	snap := r.snapshot()
	byClient := map[txn.ClientID][]ack{}
	for _, a := range r.acks {
		byClient[a.client] = append(byClient[a.client], a)
	}
	var errs []error
	want := 0
	for dc, cs := range r.clients {
		if len(cs) == 0 {
			continue
		}
		want++
		n := uint64(len(snap.Logs[dc]))
		cs[0].Read(1, n, func(recs []*flstore.Record, err error) {
			if err == nil && uint64(len(recs)) != n {
				err = fmt.Errorf("datacenter %d: a read of the whole log returned %d of %d records", dc, len(recs), n)
			}
			for i, rec := range recs {
				if err == nil && snap.Logs[dc][uint64(i+1)].Key() != rec.Key() {
					err = fmt.Errorf("datacenter %d: position %d read as %v", dc, i+1, rec.Key())
				}
			}
			errs = append(errs, err)
		})
		other := r.clients[(dc+1)%len(r.clients)]
		if len(other) == 0 || r.o.Hyksos != nil { // Hyksos puts carry their key's tag only
			continue
		}
		id := txn.ClientID(1 + ((dc+1)%len(r.clients))*r.o.ClientsPerDC)
		acks := byClient[id]
		want++
		cs[0].ReadTag(ClientTag(id), flstore.Any, nil, 3, true, func(recs []*flstore.Record, err error) {
			if err == nil && len(recs) != min(3, len(acks)) {
				err = fmt.Errorf("datacenter %d: by tag, client %d's last appends: %d records, want %d", dc, id, len(recs), min(3, len(acks)))
			}
			for i, rec := range recs {
				if a := acks[len(acks)-1-i]; err == nil && (rec.Client != id || rec.AppendSeq != a.seq) {
					err = fmt.Errorf("datacenter %d: by tag, client %d's append %d read as %d", dc, id, a.seq, rec.AppendSeq)
				}
			}
			errs = append(errs, err)
		})
	}
	// Whole logs take a while through a modelled network interface (Capacity).
	for end := r.s.NowUs() + 10_000_000; len(errs) < want && r.s.NowUs() < end; {
		r.s.RunUntil(r.s.NowUs() + 10_000)
	}
	if len(errs) != want {
		return fmt.Errorf("%d of %d read-backs answered", len(errs), want)
	}
	return errors.Join(errs...)
}

// checkClients checks every answered append against the converged logs: in every datacenter
// exactly once (CH-I3), at the answered position in its host's log, and after every record its
// client read before appending it (CH-I2); records read never changed.
func (r *run) checkClients(s chariots.Snapshot) error {
	where := make([]map[flstore.Key]uint64, len(s.Logs))
	for dc, log := range s.Logs {
		where[dc] = map[flstore.Key]uint64{}
		for l, rec := range log {
			where[dc][rec.Key()] = l
		}
	}
	for _, a := range r.acks {
		for _, l := range a.readLIds {
			if rd := s.Logs[a.dc][l]; rd != nil {
				a.readBefore = append(a.readBefore, rd.Key())
			}
		}
		rec := s.Logs[a.dc][a.lid]
		if rec == nil || rec.Client != a.client || rec.AppendSeq != a.seq || rec.TOId != a.toid || rec.Host != a.dc {
			return fmt.Errorf("client %d's append %d was answered (TOId %d, position %d), which holds %+v", a.client, a.seq, a.toid, a.lid, rec)
		}
		for dc := range s.Logs {
			l, ok := where[dc][rec.Key()]
			if !ok {
				return fmt.Errorf("CH-I3: client %d's append %d (%d,%d) missing at datacenter %d", a.client, a.seq, a.dc, a.toid, dc)
			}
			for _, k := range a.readBefore {
				if rl, ok := where[dc][k]; !ok || rl >= l {
					return fmt.Errorf("CH-I2: at datacenter %d, client %d's append %d (position %d) does not follow %v it read before (position %d)",
						dc, a.client, a.seq, l, k, rl)
				}
			}
		}
		for _, read := range a.readRecords {
			if now := s.Logs[a.dc][read.LId]; now == nil || now.Key() != read.Key() {
				return errors.New("a record read changed position")
			}
		}
	}
	return nil
}

// replica returns the stage machine node id runs, under any wrapper (Options.Factory).
func (r *run) replica(id protocol.NodeID) protocol.Replica {
	return protocol.Innermost(r.s.Replica(id))
}
