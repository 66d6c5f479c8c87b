package bench

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// Run runs one protocol with opts in the simulator and checks the history: the simulator
// driver of the run path. The protocol's family decides the deployment: one replica per
// datacenter, or opts.Partitions partition servers per datacenter.
func Run(opts Options, protocolName string) (*Result, error) {
	entry, err := registry.Lookup(protocolName)
	if err != nil {
		return nil, err
	}
	if opts.Topology == nil {
		opts.Topology = singleDC()
	}
	opts.Protocols = []string{protocolName}
	if entry.Family == registry.PartitionedReadWrite {
		return runPlaced(opts, entry)
	}
	partitioned := entry.Family.Partitioned()
	var nodes []protocol.Node // nil: one replica per datacenter
	switch {
	case partitioned:
		nodes = tcc.PartitionedNodes(opts.Topology.N(), opts.Partitions)
	case entry.Nodes != nil:
		opts.Partitions = 1
		if nodes, err = entry.Nodes(opts.Params, opts.Topology.N()); err != nil {
			return nil, fmt.Errorf("%s: %w", protocolName, err)
		}
	default:
		opts.Partitions = 1
	}
	s, err := newSim(&opts, entry, nodes)
	if err != nil {
		return nil, err
	}
	layout, err := tcc.NewLayout(s.Nodes(), opts.Topology.N())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", protocolName, err)
	}
	run, err := newRun(&opts, entry, layout, nil)
	if err != nil {
		return nil, err
	}
	home := func(dc, i int) protocol.NodeID { return layout.Node[dc][i%layout.Partitions()] }
	if !partitioned {
		home = readOnlyNodes(layout, opts.ClientsPerDC)
	}
	return simulate(&opts, s, run, home, func(nd protocol.Node) string {
		return replicaName(opts.Topology.DCs, nd, partitioned || nd.Partition > 0)
	})
}

// readOnlyNodes is where the clients of a ReadWrite protocol connect: the read-write clients
// (the first clientsPerDC of a datacenter) to its replica (partition 0), the read-only ones to
// the datacenter's nodes of higher partitions, round robin, if the protocol places any
// (registry.Entry.Nodes), else to the replica too.
func readOnlyNodes(layout *tcc.Layout, clientsPerDC int) func(dc, i int) protocol.NodeID {
	return func(dc, i int) protocol.NodeID {
		if p := layout.Partitions(); i >= clientsPerDC && p > 1 {
			return layout.Node[dc][1+(i-clientsPerDC)%(p-1)]
		}
		return layout.Node[dc][0]
	}
}

// newSim validates opts and builds the simulator of protocol entry on nodes (nil: one replica
// per datacenter).
func newSim(opts *Options, entry registry.Entry, nodes []protocol.Node) (*sim.Sim, error) {
	cfg := sim.Config{Topology: opts.Topology, Nodes: nodes, Factory: entry.New, Params: opts.Params, Seed: opts.Seed,
		Jitter: opts.Jitter, JitterCorrelationUs: opts.JitterCorrelationUs, ClockOffsetUs: opts.ClockOffsetUs,
		ClockDriftPPM: opts.ClockDriftPPM, ClientHopUs: opts.ClientHopUs, IntraDCUs: opts.IntraDCUs, LAN: opts.LAN,
		Faults: opts.Faults, Service: opts.Service, Chaos: opts.Chaos, AlignedTimers: opts.AlignedTimers}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", entry.Name, err)
	}
	return s, nil
}

// runPlaced runs a PartitionedReadWrite protocol: opts.Partitions partitions of opts.Replicas
// replicas placed over the topology (partitioned.PlacementFor). Clients run only in the
// datacenters that host a preferred server (spec sdur.md B13: clients in the partitions' home
// regions), each connected there; the history's replicas are the r-th replicas of every
// partition merged (their keys are disjoint), so that the checker compares whole stores.
func runPlaced(opts Options, entry registry.Entry) (*Result, error) {
	if opts.Replicas == 0 {
		opts.Replicas = 3
	}
	placement, err := partitioned.PlacementFor(opts.Topology, opts.Partitions, opts.Replicas)
	if err != nil {
		return nil, err
	}
	s, err := newSim(&opts, entry, placement.Nodes())
	if err != nil {
		return nil, err
	}
	run, err := newRun(&opts, entry, nil, placement)
	if err != nil {
		return nil, err
	}
	home := preferredIn(placement, opts.Topology.N())
	res, err := simulate(&opts, s, run, func(dc, _ int) protocol.NodeID { return home[dc] }, placedReplicaName(placement))
	if err != nil {
		return nil, err
	}
	res.Replay += fmt.Sprintf(" replicas=%d", opts.Replicas)
	return res, nil
}

// preferredIn returns, for each of dcs datacenters, the preferred server of the lowest partition
// whose preferred server runs there, or -1: where a partitioned read-write run's clients connect.
func preferredIn(placement *partitioned.Placement, dcs int) []protocol.NodeID {
	home := make([]protocol.NodeID, dcs)
	for dc := range home {
		home[dc] = -1
	}
	for p := range placement.Partitions() {
		if n := placement.Preferred(p); home[placement.DC[n]] < 0 {
			home[placement.DC[n]] = n
		}
	}
	return home
}

// placedReplicaName names a partitioned read-write node's store in the history by its replica
// number, "r<i>": the stores of the i-th replicas of all partitions hold disjoint keys and are
// merged into one history replica.
func placedReplicaName(placement *partitioned.Placement) func(protocol.Node) string {
	return func(nd protocol.Node) string {
		return fmt.Sprintf("r%d", slices.Index(placement.Node[nd.Partition], nd.ID))
	}
}

// mergeReplicas merges the version orders of the nodes that nameOf gives one name (in node
// order): orders[i] is nodes[i]'s.
func mergeReplicas(orders []history.Replica, nodes []protocol.Node, nameOf func(protocol.Node) string) []history.Replica {
	var out []history.Replica
	var merged []bool // out[j]'s map is its own, made for merging (the others may be shared)
	for i, nd := range nodes {
		name := nameOf(nd)
		if j := slices.IndexFunc(out, func(r history.Replica) bool { return r.Name == name }); j >= 0 {
			if !merged[j] {
				out[j].VersionOrder, merged[j] = maps.Clone(out[j].VersionOrder), true
			}
			maps.Copy(out[j].VersionOrder, orders[i].VersionOrder)
			continue
		}
		out = append(out, history.Replica{Name: name, VersionOrder: orders[i].VersionOrder})
		merged = append(merged, false)
	}
	return out
}

// simulate runs the simulation s of run: clients connected to the node homeOf gives for their
// datacenter and number (-1: the datacenter runs none), the history's replicas named by
// replicaOf (replicas of one name are merged).
func simulate(opts *Options, s *sim.Sim, run *runState, homeOf func(dc, i int) protocol.NodeID,
	replicaOf func(protocol.Node) string) (*Result, error) {
	protocolName := run.entry.Name
	d := &simDriver{s: s, run: run, nextID: run.clientID(opts.Topology.N(), 0)}
	wallStart := time.Now()
	d.tick()
	for dc := range opts.Topology.N() {
		if !run.hasClients(dc) || homeOf(dc, 0) < 0 {
			continue
		}
		for i := range opts.ClientsPerDC + opts.Workload.ExtraClientsPerDC() {
			id := run.clientID(dc, i)
			conn, err := s.Connect(id, homeOf(dc, i))
			if err != nil {
				return nil, err
			}
			if err := run.addWorker(workload.ClientInfo{ID: id, DC: dc, Index: i, Name: run.clientName(dc, i), Conn: conn}); err != nil {
				return nil, err
			}
		}
	}
	run.start()
	for t := int64(0); t < opts.DurationUs; {
		t = min(t+1_000_000, opts.DurationUs)
		if opts.Pace != nil {
			opts.Pace()
		}
		s.RunUntil(t)
		d.tick()
		if opts.Progress != nil {
			opts.Progress(protocolName, t, opts.DurationUs)
		}
	}
	d.quiesce()
	res := &Result{Unfinished: run.abandonBusy(s.NowUs(), func(_ workload.Conn, f func()) { f() })}
	final, err := run.wl.Final(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", protocolName, err)
	}
	orders := versionOrders(s)
	res.Ordering = orderingStats(s)
	res.Sim, res.VirtualUs, res.Replay = s.Stats(), s.NowUs(), describe(opts, protocolName)
	run.finish(res, mergeReplicas(orders, s.Nodes(), replicaOf), final) // the last use of s: see finish
	res.WallTime = time.Since(wallStart)
	return res, nil
}

// orderingStats sums the ordering figures of the replicas that report them, or nil if none does.
func orderingStats(s *sim.Sim) *protocol.OrderingStats {
	var sum *protocol.OrderingStats
	for _, nd := range s.Nodes() {
		if rep, ok := protocol.Innermost(s.Replica(nd.ID)).(protocol.OrderingReporter); ok {
			if sum == nil {
				sum = &protocol.OrderingStats{}
			}
			sum.Add(rep.OrderingStats())
		}
	}
	return sum
}

// simDriver is the simulator's side of a run: virtual time, the replicas, and fresh clients at
// quiescence (workload.Settler).
type simDriver struct {
	s      *sim.Sim
	run    *runState
	nextID txn.ClientID // the next client id for Connect, after every worker's
}

// tick hands the replicas to the workload (in node order).
func (d *simDriver) tick() {
	nodes := d.s.Nodes()
	replicas := make([]protocol.Replica, len(nodes))
	for i, nd := range nodes {
		replicas[i] = d.s.Replica(nd.ID)
	}
	d.run.wl.Tick(replicas, d.s.NowUs())
}

// quiesce lets outstanding transactions finish and the replicas settle after the clients stop
// starting new transactions: it runs until every client is idle and the replicas of every
// partition have installed the same number of versions, then settleUs more, or gives up after
// maxQuiesceUs (a datacenter that never returns blocks Helios-0 and MF forever).
func (d *simDriver) quiesce() {
	for deadline := d.s.NowUs() + maxQuiesceUs; d.s.NowUs() < deadline; {
		d.s.RunUntil(d.s.NowUs() + 100_000)
		d.tick()
		if d.run.idle() && d.converged() {
			break
		}
	}
	d.s.RunUntil(d.s.NowUs() + settleUs)
	d.tick()
}

// converged reports whether the replicas of each partition hold the same versions in the same
// order and every replica that can tell (protocol.Quiescer) has no work in flight.
func (d *simDriver) converged() bool {
	versions := map[int]int{}
	for _, nd := range d.s.Nodes() {
		if q, ok := protocol.Innermost(d.s.Replica(nd.ID)).(protocol.Quiescer); ok && !q.Quiescent() {
			return false
		}
		n := d.s.Store(nd.ID).Versions()
		if want, ok := versions[nd.Partition]; ok && want != n {
			return false
		}
		versions[nd.Partition] = n
	}
	// Equal counts may still hide two replicas each lacking a different transaction: compare the
	// version orders themselves, which only costs anything once the counts agree. Orders that are
	// the stores' are compared store to store, without building them.
	first := map[int]protocol.NodeID{}      // each partition's first replica
	orders := map[int]map[string][]txn.ID{} // its version order, once needed
	for _, nd := range d.s.Nodes() {
		f, ok := first[nd.Partition]
		switch {
		case !ok:
			first[nd.Partition] = nd.ID
		case !ownsOrder(d.s, f) && !ownsOrder(d.s, nd.ID):
			if !d.s.Store(f).SameOrder(d.s.Store(nd.ID)) {
				return false
			}
		default:
			if orders[nd.Partition] == nil {
				orders[nd.Partition] = versionOrder(d.s, f)
			}
			if !maps.EqualFunc(orders[nd.Partition], versionOrder(d.s, nd.ID), slices.Equal) {
				return false
			}
		}
	}
	return true
}

// ownsOrder reports whether node id's protocol keeps a version order of its own
// (protocol.VersionOrderer) rather than its store's.
func ownsOrder(s *sim.Sim, id protocol.NodeID) bool {
	_, ok := protocol.Innermost(s.Replica(id)).(protocol.VersionOrderer)
	return ok
}

// versionOrders returns every node's version order (versionOrder), in node order. A node whose
// order is its store's and equals, store to store (store.SameOrder), that of the first node of its
// partition shares that node's map instead of building its own: a run ends with its replicas in
// agreement, and building a map of every key costs far more than comparing two stores. The maps
// are only read from here on (mergeReplicas copies before merging), and check sees that shared
// maps are equal without comparing them.
func versionOrders(s *sim.Sim) []history.Replica {
	orders := make([]history.Replica, len(s.Nodes()))
	first := map[int]int{} // partition -> index of its first node
	for i, nd := range s.Nodes() {
		f, ok := first[nd.Partition]
		if !ok {
			first[nd.Partition] = i
		} else if fid := s.Nodes()[f].ID; !ownsOrder(s, fid) && !ownsOrder(s, nd.ID) && s.Store(fid).SameOrder(s.Store(nd.ID)) {
			orders[i].VersionOrder = orders[f].VersionOrder
			continue
		}
		orders[i].VersionOrder = versionOrder(s, nd.ID)
	}
	return orders
}

// versionOrder returns node id's version order: its protocol's (protocol.VersionOrderer) if it
// keeps one, else its store's installation order.
func versionOrder(s *sim.Sim, id protocol.NodeID) map[string][]txn.ID {
	if vo, ok := protocol.Innermost(s.Replica(id)).(protocol.VersionOrderer); ok {
		return vo.VersionOrder()
	}
	return s.Store(id).VersionOrder()
}

// Connect implements workload.Settler: a new simulated client.
func (d *simDriver) Connect(dc int, home protocol.NodeID, name string) (workload.ClientInfo, error) {
	id := d.nextID
	d.nextID++
	conn, err := d.s.Connect(id, home)
	if err != nil {
		return workload.ClientInfo{}, err
	}
	return workload.ClientInfo{ID: id, DC: dc, Name: name, Conn: conn}, nil
}

// errNotFinished is Await's error when a transaction takes longer than maxQuiesceUs.
var errNotFinished = errors.New("not finished within " + (time.Duration(maxQuiesceUs) * time.Microsecond).String())

// Await implements workload.Settler: it starts the transaction and runs virtual time in 10 ms
// steps until it finishes.
func (d *simDriver) Await(_ workload.ClientInfo, start func(done func(error))) error {
	finished := false
	var err error
	start(func(e error) { finished, err = true, e })
	for deadline := d.s.NowUs() + maxQuiesceUs; !finished && d.s.NowUs() < deadline; {
		d.s.RunUntil(d.s.NowUs() + 10_000)
	}
	if !finished {
		return errNotFinished
	}
	return err
}
