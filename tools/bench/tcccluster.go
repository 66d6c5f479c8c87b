package bench

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/grpc"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// Limits of a transactional-causal run against a real cluster.
const (
	// tccCallTimeout bounds one client-to-partition call; the protocols' own transaction
	// timeouts (default 5 s) retry long before.
	tccCallTimeout = 30 * time.Second
	// tccSettle is how long the run lets stabilization work after the last transaction before
	// the final reads, as finalSettleUs in the simulator.
	tccSettle = time.Duration(finalSettleUs) * time.Microsecond
)

// RunTCCCluster runs the closed-loop ROT/WOT workload of opts against the running partitioned
// cluster cfg, in real time: the same workers, values and measurements as RunTCC, ClientsPerDC
// clients in every datacenter, each a client library of the cluster's protocol over its own
// rpc.TCCTransport (client i registers with partition i mod N of its datacenter and calls every
// partition there). Afterwards it waits for the workers to finish, lets stabilization run, reads
// every written key once more from a fresh client per datacenter (oracle C6), reads every node's
// version order (its /versions endpoint) and checks the history with the TCC checker, like
// RunTCC. The topology and the partitions come from cfg; simulator-only options (faults,
// jitter, delays) are ignored, and the cluster's own parameters, not opts.Params, configure the
// replicas (opts.Params configures the client libraries; pass the cluster's). dialOpts must
// name the transport security, as for rpc.Dial.
//
// All clients share one rpc.NodeConns, so every worker callback runs on its one callback
// goroutine, as on the simulator's: the run's state needs no lock.
func RunTCCCluster(ctx context.Context, opts TCCOptions, cfg *cluster.Config, dialOpts ...grpc.DialOption) (*TCCResult, error) {
	entry, err := registry.Lookup(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	if entry.NewClient == nil {
		return nil, fmt.Errorf("bench: %s is not a transactional-causal protocol (use the default workload)", cfg.Protocol)
	}
	dcs := cfg.Topology.N()
	layout, err := tcc.NewLayout(cfg.Placements(), dcs)
	if err != nil {
		return nil, fmt.Errorf("bench: cluster %s: %w", cfg.Path, err)
	}
	opts.Topology, opts.Partitions = cfg.Topology, layout.Partitions()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	gen, err := workload.NewTCCGenerator(opts.Workload, opts.Partitions)
	if err != nil {
		return nil, err
	}
	before, err := fetchVersionOrders(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: reading the cluster's state before the run: %w", err)
	}
	addrs := make(map[protocol.NodeID]string, len(cfg.Nodes))
	for i, nd := range cfg.Nodes {
		addrs[protocol.NodeID(i)] = nd.ClientAddr
	}
	conns, err := rpc.DialNodes(addrs, entry.Codec, dialOpts...)
	if err != nil {
		return nil, err
	}
	defer conns.Close()
	conns.SetCallTimeout(tccCallTimeout)

	run := newTCCRun(&opts, gen)
	for _, t := range preexisting(mergeOrders(before)) {
		run.record(t)
	}
	// newSession connects a client library in datacenter dc, registered with node home, and
	// returns its session, named name, and its transport on the run's clock (the library itself
	// reads the real clock).
	clock := &runClock{}
	newSession := func(dc int, home protocol.NodeID, name string) (*tcc.Session, tcc.Transport, error) {
		tr, err := conns.NewTransport(ctx, home)
		if err != nil {
			return nil, nil, err
		}
		id := tr.ClientID()
		lib, err := entry.NewClient(tcc.ClientConfig{ID: id, DC: dc, Layout: layout, Transport: tr,
			Rand: rand.New(rand.NewPCG(opts.Seed, uint64(id)<<1)), Params: opts.Params})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", cfg.Protocol, err)
		}
		onRunClock := runTime{tr, clock}
		return tcc.NewSession(lib, onRunClock, id, cfg.Topology.DCs[dc], name, run.record), onRunClock, nil
	}
	for dc := range dcs {
		for i := range opts.ClientsPerDC {
			sess, tr, err := newSession(dc, layout.Node[dc][i%opts.Partitions], fmt.Sprintf("%s/%d", cfg.Topology.DCs[dc], i))
			if err != nil {
				return nil, err
			}
			w := &tccWorker{run: run, conn: tr, dc: dc, sess: sess, rng: rand.New(rand.NewPCG(opts.Seed, uint64(len(run.workers))<<1|1))}
			run.workers = append(run.workers, w)
		}
	}
	wallStart := time.Now()
	clock.originUs = conns.NowUs()
	for _, w := range run.workers {
		w.busy = true
		w.conn.After(0, w.next)
	}
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
	}
	loop := run.workers[0].conn
	waitUntil(ctx, clusterDrainTimeout, func() bool { return onLoop(loop, run.idle) })
	time.Sleep(tccSettle)
	res := onLoop(loop, func() *TCCResult { return run.summarise(cfg.Protocol, loop.NowUs()) })

	final, err := clusterFinalReads(ctx, run, layout, newSession)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Protocol, err)
	}
	replicas, err := convergedVersionOrders(ctx, cfg)
	if err != nil {
		return nil, err
	}
	txns := onLoop(loop, func() []history.Txn { return slices.Clone(run.txns) })
	run.check(res, entry, txns, replicas, final)
	res.WallTime = time.Since(wallStart)
	res.VirtualUs = res.WallTime.Microseconds()
	res.Replay = fmt.Sprintf("cluster=%s protocol=%s partitions=%d clients-per-dc=%d seed=%d duration=%s window=[%s,%s) params=%v workload=%+v",
		cfg.Path, cfg.Protocol, opts.Partitions, opts.ClientsPerDC, opts.Seed, time.Duration(opts.DurationUs)*time.Microsecond,
		time.Duration(opts.WarmupUs)*time.Microsecond, time.Duration(opts.DurationUs-opts.CooldownUs)*time.Microsecond,
		opts.Params, opts.Workload)
	return res, nil
}

// runClock puts the clients' transports on the run's clock: NowUs counts from the start of the
// run (originUs on the real clock), as the simulator's does, so that the workers' measurement
// window and the history's times mean the same as in the simulator.
type runClock struct{ originUs int64 }

// runTime is a transport on a runClock.
type runTime struct {
	tcc.Transport
	clock *runClock
}

func (t runTime) NowUs() int64 { return t.Transport.NowUs() - t.clock.originUs }

// onLoop runs f on the callback goroutine of tr (where the workers run) and returns its result.
func onLoop[T any](tr tcc.Transport, f func() T) T {
	ch := make(chan T, 1)
	tr.After(0, func() { ch <- f() })
	return <-ch
}

// clusterFinalReads is the cluster's counterpart of tccRun.finalReads: from a fresh client in
// every datacenter it reads every written key once more, finalReadKeys keys at a time, one ROT
// after the other, and returns their ids (oracle C6).
func clusterFinalReads(ctx context.Context, run *tccRun, layout *tcc.Layout,
	newSession func(dc int, home protocol.NodeID, name string) (*tcc.Session, tcc.Transport, error)) ([]txn.ID, error) {
	keys := onLoop(run.workers[0].conn, run.writtenKeys)
	var ids []txn.ID
	for dc := range layout.Node {
		sess, tr, err := newSession(dc, layout.Node[dc][0], run.opts.Topology.DCs[dc]+"/final")
		if err != nil {
			return nil, err
		}
		for start := 0; start < len(keys); start += finalReadKeys {
			batch := keys[start:min(start+finalReadKeys, len(keys))]
			done := make(chan error, 1)
			id := onLoop(tr, func() txn.ID {
				id := sess.NextID()
				sess.Read(batch, func(res tcc.ReadResult) { done <- res.Err })
				return id
			})
			select {
			case err := <-done:
				if err != nil {
					return nil, fmt.Errorf("bench: a final read of %d keys failed: %w", len(batch), err)
				}
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(clusterDrainTimeout):
				return nil, fmt.Errorf("bench: a final read of %d keys did not finish within %s at quiescence", len(batch), clusterDrainTimeout)
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
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
