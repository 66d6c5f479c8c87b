package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/server"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// Limits of a run against a real cluster.
const (
	clusterDrainTimeout    = 60 * time.Second // for outstanding transactions after the duration
	clusterConvergeTimeout = 60 * time.Second // for the replicas to install the same versions
	// clusterCallTimeout bounds one client-to-partition call of a partitioned protocol; the
	// protocols' own transaction timeouts (default 5 s) retry long before.
	clusterCallTimeout = 30 * time.Second
)

// RunCluster runs the workload of opts against the running cluster cfg, in real time: the
// cluster driver of the run path, with the same clients, measurements and checks as Run.
// ClientsPerDC clients run in every datacenter (of opts.ClientDCs), each over its own
// connection: for the ReadWrite family a gRPC connection to the datacenter's node, for a
// partitioned family a client library that calls every partition of its datacenter (client i
// registers with partition i mod N). Afterwards it waits for the clients to finish and the
// replicas to converge, lets the workload run its final checks, reads every node's version
// order (its /versions endpoint) and checks the history.
//
// The protocol, the topology, the partitions and the protocol's parameters come from cfg;
// opts.Protocols, opts.Params and the simulator's options (faults, skew, jitter, delays) must
// be unset. On a cluster with mutual TLS, clientCert is the client certificate (signed by the
// cluster CA) the bench presents to the client API and to the nodes' /versions endpoints; nil
// otherwise. Cancelling ctx stops the run.
func RunCluster(ctx context.Context, opts Options, cfg *cluster.Config, clientCert *tls.Certificate) (*Result, error) {
	entry, err := registry.Lookup(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	switch {
	case len(opts.Faults) > 0 || opts.ClockOffsetUs != nil || opts.ClockDriftPPM != nil || opts.Chaos != (sim.Chaos{}):
		return nil, fmt.Errorf("bench: faults, clock skew and chaos apply to the simulator, not to cluster %s", cfg.Path)
	case len(opts.Params) > 0:
		return nil, fmt.Errorf("bench: the parameters of %s configure its nodes and clients; protocol parameters do not apply", cfg.Path)
	}
	var layout *tcc.Layout
	var placement *partitioned.Placement
	homeOf := func(dc, i int) protocol.NodeID { return layout.Node[dc][i%layout.Partitions()] }
	if entry.Family == registry.PartitionedReadWrite {
		if placement, err = partitioned.NewPlacement(cfg.Placements(), cfg.Topology.N()); err != nil {
			return nil, fmt.Errorf("bench: cluster %s: %w", cfg.Path, err)
		}
		opts.Partitions, opts.Replicas = placement.Partitions(), len(placement.Node[0])
		home := preferredIn(placement, cfg.Topology.N())
		homeOf = func(dc, _ int) protocol.NodeID { return home[dc] }
	} else {
		if layout, err = tcc.NewLayout(cfg.Placements(), cfg.Topology.N()); err != nil {
			return nil, fmt.Errorf("bench: cluster %s: %w", cfg.Path, err)
		}
		opts.Partitions = layout.Partitions()
		if !entry.Family.Partitioned() { // a replica per datacenter, and maybe read-only nodes
			homeOf, opts.Partitions = readOnlyNodes(layout, opts.ClientsPerDC), 1
		}
	}
	opts.Topology, opts.Protocols, opts.Params = cfg.Topology, []string{cfg.Protocol}, cfg.Params
	dialOpt, err := clientCredentials(cfg, clientCert)
	if err != nil {
		return nil, err
	}
	probe, err := cluster.NewProber(cfg, clientCert)
	if err != nil {
		return nil, err
	}
	run, err := newRun(&opts, entry, layout, placement)
	if err != nil {
		return nil, err
	}
	before, err := fetchVersionOrders(ctx, cfg, probe)
	if err != nil {
		return nil, fmt.Errorf("bench: reading the cluster's state before the run: %w", err)
	}
	for _, t := range preexisting(mergeOrders(before)) {
		run.record(t)
	}
	d, err := newClusterDriver(ctx, cfg, entry, []grpc.DialOption{dialOpt})
	if err != nil {
		return nil, err
	}
	defer d.close()
	for dc := range cfg.Topology.N() {
		if !run.hasClients(dc) || homeOf(dc, 0) < 0 {
			continue
		}
		for i := range opts.ClientsPerDC + opts.Workload.ExtraClientsPerDC() {
			ci, err := d.Connect(dc, homeOf(dc, i), run.clientName(dc, i))
			if err != nil {
				return nil, err
			}
			ci.Index = i
			if err := run.addWorker(ci); err != nil {
				return nil, err
			}
		}
	}
	wallStart := time.Now()
	d.clock.originUs = d.rawNowUs()
	run.start()
	for elapsed := time.Duration(0); elapsed < time.Duration(opts.DurationUs)*time.Microsecond; {
		step := min(time.Second, time.Duration(opts.DurationUs)*time.Microsecond-elapsed)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(step):
		}
		elapsed += step
		if opts.Progress != nil {
			opts.Progress(cfg.Protocol, elapsed.Microseconds(), opts.DurationUs)
		}
		d.tick(run, probe)
	}
	waitUntil(ctx, clusterDrainTimeout, run.idle)
	if _, err := convergedVersionOrders(ctx, cfg, probe); err != nil {
		return nil, err
	}
	time.Sleep(time.Duration(settleUs) * time.Microsecond)
	d.tick(run, probe)
	res := &Result{Unfinished: run.abandonBusy(d.clock.nowUs(), onLoop)}
	final, err := run.wl.Final(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Protocol, err)
	}
	replicas, err := convergedVersionOrders(ctx, cfg, probe)
	if err != nil {
		return nil, err
	}
	if placement != nil {
		replicas = mergeReplicas(replicas, cfg.Placements(), placedReplicaName(placement))
	}
	run.finish(res, replicas, final)
	res.WallTime, res.OriginUnixUs = time.Since(wallStart), d.clock.originUs
	res.VirtualUs = res.WallTime.Microseconds()
	res.Replay = fmt.Sprintf("cluster=%s %s", cfg.Path, describe(&opts, cfg.Protocol))
	return res, nil
}

// clusterDriver is a real cluster's side of a run: client connections on the run's clock
// (workload.Settler too).
type clusterDriver struct {
	ctx      context.Context
	cfg      *cluster.Config
	dialOpts []grpc.DialOption
	// silent is set once the nodes answered /visibility with 404: their protocol reports no
	// visibility events, and tick stops asking.
	silent bool
	clock  *runClock
	// nodes serves the partitioned families: one connection per node, shared by every client
	// library, whose callbacks all run on its one callback goroutine.
	nodes *rpc.NodeConns
	// conns are the ReadWrite family's clients, each with its own callback goroutine, over
	// ccs, one gRPC connection per node shared by the node's clients as one rpc.Channel
	// (their gets and commits travel in batches on one stream: fewer system calls and
	// goroutine wake-ups per call, on the node and here).
	conns []*rpc.Conn
	ccs   map[protocol.NodeID]*grpc.ClientConn
	chans map[protocol.NodeID]*rpc.Channel
}

func newClusterDriver(ctx context.Context, cfg *cluster.Config, e registry.Entry, dialOpts []grpc.DialOption) (*clusterDriver, error) {
	d := &clusterDriver{ctx: ctx, cfg: cfg, dialOpts: dialOpts, clock: &runClock{},
		ccs: map[protocol.NodeID]*grpc.ClientConn{}, chans: map[protocol.NodeID]*rpc.Channel{}}
	if e.Family.Partitioned() || e.Family == registry.PartitionedReadWrite {
		addrs := make(map[protocol.NodeID]string, len(cfg.Nodes))
		for i, nd := range cfg.Nodes {
			addrs[protocol.NodeID(i)] = nd.ClientAddr
		}
		nodes, err := rpc.DialNodes(addrs, e.Codec, dialOpts...)
		if err != nil {
			return nil, err
		}
		nodes.SetCallTimeout(clusterCallTimeout)
		d.nodes = nodes
	}
	return d, nil
}

// tick hands the workload (Run.Tick) the visibility events every node reported since the
// previous tick, on the run's clock, through stand-ins for the replicas: a real cluster's
// replicas are in other processes, and these events are the replica-side figures a workload
// reads (the visibility lag of the transactional-causal protocols). A node that does not answer
// is skipped until the next tick.
func (d *clusterDriver) tick(run *runState, probe *cluster.Prober) {
	if d.silent {
		return
	}
	standIns := make([]protocol.Replica, 0, len(d.cfg.Nodes))
	for i := range d.cfg.Nodes {
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		code, body, err := probe.Get(ctx, i, "/visibility", 64<<20)
		cancel()
		if code == http.StatusNotFound {
			d.silent = true
			return
		}
		var report server.VisibilityReport
		if err != nil || code != http.StatusOK || json.Unmarshal(body, &report) != nil {
			continue
		}
		origin := d.clock.originUs
		for j := range report.Events {
			ev := &report.Events[j]
			ev.CommitUs -= origin
			ev.VisibleUs -= origin
			if ev.DecidedUs != 0 {
				ev.DecidedUs -= origin
			}
		}
		standIns = append(standIns, &reportedVisibility{report: report})
	}
	run.wl.Tick(standIns, d.clock.nowUs())
}

// reportedVisibility stands in for a real node's replica in Run.Tick: it drains, once, the
// events the node reported (tcc.VisibilityReporter) and ignores every protocol input.
type reportedVisibility struct {
	report server.VisibilityReport
}

func (r *reportedVisibility) Start()                                          {}
func (r *reportedVisibility) HandleMessage(protocol.NodeID, protocol.Message) {}
func (r *reportedVisibility) HandleRequest(protocol.Request)                  {}
func (r *reportedVisibility) HandleTimer(protocol.TimerID)                    {}

// DrainVisibility implements tcc.VisibilityReporter.
func (r *reportedVisibility) DrainVisibility(dst []tcc.Visibility) ([]tcc.Visibility, int) {
	dst = append(dst, r.report.Events...)
	dropped := r.report.Dropped
	r.report = server.VisibilityReport{}
	return dst, dropped
}

// rawNowUs reads the clients' clock, before the run's origin is subtracted.
func (d *clusterDriver) rawNowUs() int64 {
	if d.nodes != nil {
		return d.nodes.NowUs()
	}
	return time.Now().UnixMicro()
}

// Connect implements workload.Settler: a new client of datacenter dc whose home is node home.
func (d *clusterDriver) Connect(dc int, home protocol.NodeID, name string) (workload.ClientInfo, error) {
	nd := d.cfg.Nodes[home]
	if d.nodes != nil {
		tr, err := d.nodes.NewTransport(d.ctx, home)
		if err != nil {
			return workload.ClientInfo{}, fmt.Errorf("bench: connecting to node %s: %w", nd.Name, err)
		}
		return workload.ClientInfo{ID: tr.ClientID(), DC: dc, Name: name, Conn: tccOnRunClock{tr, d.clock}}, nil
	}
	cc, ok := d.ccs[home]
	if !ok {
		var err error
		if cc, err = grpc.NewClient(nd.ClientAddr, d.dialOpts...); err != nil {
			return workload.ClientInfo{}, fmt.Errorf("bench: connecting to node %s at %s: %w", nd.Name, nd.ClientAddr, err)
		}
		d.ccs[home] = cc
		d.chans[home] = rpc.NewChannel(cc)
	}
	conn, id, err := d.chans[home].NewConn(d.ctx)
	if err != nil {
		return workload.ClientInfo{}, fmt.Errorf("bench: connecting to node %s at %s: %w", nd.Name, nd.ClientAddr, err)
	}
	d.conns = append(d.conns, conn)
	return workload.ClientInfo{ID: id, DC: dc, Name: name, Conn: rwOnRunClock{conn, d.clock}}, nil
}

// Await implements workload.Settler: it starts the transaction on the client's loop and waits
// for it.
func (d *clusterDriver) Await(ci workload.ClientInfo, start func(done func(error))) error {
	finished := make(chan error, 1)
	onLoop(ci.Conn, func() { start(func(err error) { finished <- err }) })
	select {
	case err := <-finished:
		return err
	case <-d.ctx.Done():
		return d.ctx.Err()
	case <-time.After(clusterDrainTimeout):
		return fmt.Errorf("not finished within %s", clusterDrainTimeout)
	}
}

func (d *clusterDriver) close() {
	if d.nodes != nil {
		d.nodes.Close()
	}
	for _, c := range d.conns {
		c.Close()
	}
	for _, ch := range d.chans {
		ch.Close()
	}
	for _, cc := range d.ccs {
		cc.Close()
	}
}

// runClock puts clients' connections on the run's clock: NowUs counts from the start of the
// run (originUs on the real clock, in Unix µs), as the simulator's does, so that the measurement window and
// the history's times mean the same as in the simulator.
type runClock struct{ originUs int64 }

func (c *runClock) nowUs() int64 { return time.Now().UnixMicro() - c.originUs }

// rwOnRunClock is a ReadWrite client's connection on a runClock.
type rwOnRunClock struct {
	*rpc.Conn
	clock *runClock
}

func (c rwOnRunClock) NowUs() int64 { return c.Conn.NowUs() - c.clock.originUs }

// tccOnRunClock is a partitioned client library's transport on a runClock.
type tccOnRunClock struct {
	tcc.Transport
	clock *runClock
}

func (t tccOnRunClock) NowUs() int64 { return t.Transport.NowUs() - t.clock.originUs }

// onLoop runs f on conn's callback loop and waits until it returns.
func onLoop(conn workload.Conn, f func()) {
	ch := make(chan struct{})
	conn.After(0, func() { f(); close(ch) })
	<-ch
}

// waitUntil polls cond every 100 ms until it holds, the timeout passes or ctx ends.
func waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// convergedVersionOrders reads every node's version orders until the nodes that serve one
// partition (every node, for the full-replication protocols; one per datacenter for the
// partitioned ones) hold the same number of versions, and the total is the same twice in a row,
// or the timeout passes: the checker then reports the divergence.
func convergedVersionOrders(ctx context.Context, cfg *cluster.Config, probe *cluster.Prober) ([]history.Replica, error) {
	var replicas []history.Replica
	lastTotal := -1
	waitUntil(ctx, clusterConvergeTimeout, func() bool {
		var err error
		if replicas, err = fetchVersionOrders(ctx, cfg, probe); err != nil {
			return false
		}
		total, same := 0, true
		perPartition := map[int]int{}
		for i, r := range replicas {
			n := 0
			for _, ids := range r.VersionOrder {
				n += len(ids)
			}
			p := cfg.Nodes[i].Partition
			if want, seen := perPartition[p]; seen && want != n {
				same = false
			}
			perPartition[p] = n
			total += n
		}
		stable := same && total == lastTotal
		lastTotal = total
		return stable
	})
	if replicas == nil {
		return nil, fmt.Errorf("bench: could not read the nodes' version orders")
	}
	return replicas, nil
}

// clientCredentials returns the transport security of the bench's client connections:
// plaintext, or TLS verifying the nodes against the cluster CA and presenting clientCert.
func clientCredentials(cfg *cluster.Config, clientCert *tls.Certificate) (grpc.DialOption, error) {
	if cfg.TLS == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
	}
	if clientCert == nil {
		return nil, fmt.Errorf("bench: cluster %s uses mutual TLS: a client certificate signed by %s is required", cfg.Path, cfg.TLS.CA)
	}
	roots, err := cluster.LoadCA(cfg.TLS.CA)
	if err != nil {
		return nil, err
	}
	conf := &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{*clientCert}, MinVersion: tls.VersionTLS13}
	return grpc.WithTransportCredentials(credentials.NewTLS(conf)), nil
}

// maxVersionsBytes bounds a node's /versions answer.
const maxVersionsBytes = 1 << 30

// fetchVersionOrders reads every node's version order from its /versions endpoint.
func fetchVersionOrders(ctx context.Context, cfg *cluster.Config, probe *cluster.Prober) ([]history.Replica, error) {
	out := make([]history.Replica, 0, len(cfg.Nodes))
	for i, nd := range cfg.Nodes {
		reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		code, body, err := probe.Get(reqCtx, i, "/versions", maxVersionsBytes)
		cancel()
		switch {
		case err != nil:
			return nil, fmt.Errorf("bench: node %s /versions: %w", nd.Name, err)
		case code != http.StatusOK:
			return nil, fmt.Errorf("bench: node %s /versions answered %d: %s", nd.Name, code, bytes.TrimSpace(body))
		}
		var raw map[string][]string
		if err := json.Unmarshal(body, &raw); err != nil {
			return nil, fmt.Errorf("bench: node %s /versions: %w", nd.Name, err)
		}
		order := make(map[string][]txn.ID, len(raw))
		for k, ids := range raw {
			parsed := make([]txn.ID, len(ids))
			for i, s := range ids {
				if parsed[i], err = txn.ParseID(s); err != nil {
					return nil, fmt.Errorf("bench: node %s /versions: %w", nd.Name, err)
				}
			}
			order[k] = parsed
		}
		out = append(out, history.Replica{Name: nd.Name, VersionOrder: order})
	}
	return out, nil
}

// preexisting turns the versions a cluster held before the run into committed pseudo
// transactions that precede the run, so that the checker can account for reads of them.
func preexisting(r history.Replica) []history.Txn {
	writes := map[txn.ID][]string{}
	var order []txn.ID
	for k, ids := range r.VersionOrder {
		for _, id := range ids {
			if _, seen := writes[id]; !seen {
				order = append(order, id)
			}
			writes[id] = append(writes[id], k)
		}
	}
	slices.Sort(order)
	out := make([]history.Txn, len(order))
	for i, id := range order {
		keys := writes[id]
		slices.Sort(keys)
		out[i] = history.Txn{ID: id, Client: "before-run", Status: txn.Committed, Writes: keys}
	}
	return out
}

// mergeOrders is every node's versions as one replica (each key lives in its partition's nodes
// only), for preexisting.
func mergeOrders(nodes []history.Replica) history.Replica {
	all := history.Replica{VersionOrder: map[string][]txn.ID{}}
	for _, r := range nodes {
		for _, k := range slices.Sorted(maps.Keys(r.VersionOrder)) {
			if len(r.VersionOrder[k]) > len(all.VersionOrder[k]) {
				all.VersionOrder[k] = r.VersionOrder[k]
			}
		}
	}
	return all
}
