// Package loopback is S-DUR's baseline-throughput experiment (spec sdur.md §7.2, X0; the
// source's Fig. 3): read-only and update throughput of one S-DUR partition of three servers
// against one unreplicated node backed by Pebble (package single), both behind the same gRPC
// service on loopback and driven by the same S-DUR client library, side by side in one run.
//
// Both systems run in this process: the three S-DUR nodes are server.Node (event loop, input
// log, peer transport: the real servers), the single node a gRPC server over single.Store.
// Closed-loop clients run one transaction after another with no think time: a read-only
// transaction reads two uniform keys at a snapshot; an update transaction reads two uniform
// keys and writes both. The update phase runs first, so the read phase reads written values.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/partitioned/sdur"
	"github.com/meridian-kv/meridian/server"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/server/single"
	"github.com/meridian-kv/meridian/topology"
)

// Options configure one comparison.
type Options struct {
	// Clients is the number of closed-loop clients of each phase.
	Clients int
	// Phase is how long each of the four phases (S-DUR and the single node, updates and
	// reads) runs; the first Warmup of it is not counted.
	Phase, Warmup time.Duration
	// Items is the number of keys, drawn uniformly.
	Items int
	// Sync fsyncs before acknowledging: the S-DUR nodes' input logs (cluster durability sync)
	// and the single node's commits. Without it neither fsyncs (durability none), as the
	// source's in-memory systems did not.
	Sync bool
	// Replicas is the S-DUR partition's size (the spec: 3).
	Replicas int
}

// Defaults are the experiment's settings: 32 clients, 5 s phases with 1 s of warm-up, 10,000
// keys, no fsync, 3 replicas.
func Defaults() Options {
	return Options{Clients: 32, Phase: 5 * time.Second, Warmup: time.Second, Items: 10_000, Replicas: 3}
}

// Throughput is one system's measured rates.
type Throughput struct {
	// ReadTPS and WriteTPS are committed read-only and update transactions per second.
	ReadTPS, WriteTPS float64
	// WriteAbortRate is the aborted share of decided update transactions.
	WriteAbortRate float64
}

// Result is one comparison.
type Result struct {
	SDUR, Single Throughput
	Options      Options
}

// ReadRatio and WriteRatio are S-DUR's throughput as a share of the single node's.
func (r *Result) ReadRatio() float64 { return r.SDUR.ReadTPS / r.Single.ReadTPS }

// WriteRatio is S-DUR's update throughput as a share of the single node's.
func (r *Result) WriteRatio() float64 { return r.SDUR.WriteTPS / r.Single.WriteTPS }

// lan is the one-datacenter topology every node and client of the experiment is in.
func lan() *topology.Topology {
	return &topology.Topology{Name: "loopback", DCs: []string{"lan"}, RTTMs: [][]float64{{0}}}
}

// Run measures both systems with their data under dir.
func Run(ctx context.Context, dir string, o Options) (*Result, error) {
	if o.Clients < 1 || o.Items < 2 || o.Phase <= o.Warmup || o.Replicas < 1 {
		return nil, fmt.Errorf("loopback: bad options %+v", o)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &Result{Options: o}

	sdurPl, sdurAddrs, stopSDUR, err := startSDUR(ctx, filepath.Join(dir, "sdur"), o)
	if err != nil {
		return nil, err
	}
	defer stopSDUR()
	if res.SDUR, err = measure(ctx, sdurPl, sdurAddrs, o); err != nil {
		return nil, fmt.Errorf("loopback: S-DUR: %w", err)
	}

	singlePl := &partitioned.Placement{Node: [][]protocol.NodeID{{0}}, DC: []int{0}}
	addr, stopSingle, err := startSingle(filepath.Join(dir, "single"), o.Sync)
	if err != nil {
		return nil, err
	}
	defer stopSingle()
	if res.Single, err = measure(ctx, singlePl, map[protocol.NodeID]string{0: addr}, o); err != nil {
		return nil, fmt.Errorf("loopback: single node: %w", err)
	}
	return res, nil
}

// freeAddrs returns n loopback addresses whose ports were free a moment ago (held open together
// while chosen, so all differ).
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs, nil
}

// startSDUR runs one partition of o.Replicas S-DUR servers in this process.
func startSDUR(ctx context.Context, dir string, o Options) (*partitioned.Placement, map[protocol.NodeID]string, func(), error) {
	topo := lan()
	pl, err := partitioned.Spread(topo, 1, o.Replicas)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := cluster.GeneratePlaced(topo, topo.Name, "sdur", dir, 0, pl)
	cfg.WANEmulation = false
	if !o.Sync {
		cfg.Durability = cluster.DurabilityNone
	}
	addrs, err := freeAddrs(3 * len(cfg.Nodes))
	if err != nil {
		return nil, nil, nil, err
	}
	clientAddrs := map[protocol.NodeID]string{}
	for i := range cfg.Nodes {
		nd := &cfg.Nodes[i]
		nd.PeerAddr, nd.ClientAddr, nd.MetricsAddr = addrs[3*i], addrs[3*i+1], addrs[3*i+2]
		clientAddrs[protocol.NodeID(i)] = nd.ClientAddr
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, nd := range cfg.Nodes {
		n, err := server.New(cfg, nd.Name, logger, server.Options{})
		if err != nil {
			cancel()
			wg.Wait()
			return nil, nil, nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.Run(ctx)
		}()
	}
	return pl, clientAddrs, func() { cancel(); wg.Wait() }, nil
}

// startSingle serves a single.Store in dir on a loopback port behind the gRPC service.
func startSingle(dir string, sync bool) (string, func(), error) {
	st, err := single.Open(dir, sync)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return "", nil, err
	}
	gs := grpc.NewServer()
	rpc.Register(gs, st, rpc.Limits{})
	go func() { _ = gs.Serve(ln) }()
	return ln.Addr().String(), func() { gs.Stop(); st.Close() }, nil
}

// clientsPerConns is how many clients share one NodeConns, whose callbacks run on one goroutine.
const clientsPerConns = 4

// measure runs the update phase, then the read-only phase, against the nodes at addrs.
func measure(ctx context.Context, pl *partitioned.Placement, addrs map[protocol.NodeID]string, o Options) (Throughput, error) {
	var conns []*rpc.NodeConns
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var clients []*loopClient
	for i := range o.Clients {
		if i%clientsPerConns == 0 {
			c, err := rpc.DialNodes(addrs, sdur.Codec, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return Throughput{}, err
			}
			c.SetCallTimeout(10 * time.Second)
			conns = append(conns, c)
		}
		tr, err := newTransport(ctx, conns[len(conns)-1], pl.Preferred(0))
		if err != nil {
			return Throughput{}, err
		}
		lib, err := sdur.NewClient(partitioned.ClientConfig{ID: tr.ClientID(), DC: 0, Topology: lan(), Placement: pl, Transport: tr,
			Rand: rand.New(rand.NewPCG(uint64(i), 1)), Params: nil})
		if err != nil {
			return Throughput{}, err
		}
		clients = append(clients, &loopClient{lib: lib, id: tr.ClientID(), rng: rand.New(rand.NewPCG(uint64(i), 2)), items: o.Items})
	}
	var out Throughput
	for _, readOnly := range []bool{false, true} {
		committed, aborted, err := phase(ctx, clients, readOnly, o)
		if err != nil {
			return out, err
		}
		if committed == 0 {
			return out, errNoCommit
		}
		tps := float64(committed) / (o.Phase - o.Warmup).Seconds()
		if readOnly {
			out.ReadTPS = tps
		} else {
			out.WriteTPS = tps
			if committed+aborted > 0 {
				out.WriteAbortRate = float64(aborted) / float64(committed+aborted)
			}
		}
	}
	return out, nil
}

// newTransport registers a client with node home, retrying while the node starts.
func newTransport(ctx context.Context, c *rpc.NodeConns, home protocol.NodeID) (*rpc.TCCTransport, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		tr, err := c.NewTransport(tctx, home)
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return tr, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loopClient is one closed-loop client. Its callbacks run on its NodeConns's goroutine.
type loopClient struct {
	lib   partitioned.Client
	id    txn.ClientID
	seq   uint32
	rng   *rand.Rand
	items int
}

// phase runs every client in a closed loop for o.Phase and counts the transactions decided after
// o.Warmup.
func phase(ctx context.Context, clients []*loopClient, readOnly bool, o Options) (committed, aborted int64, err error) {
	var nCommitted, nAborted atomic.Int64
	var firstErr atomic.Value
	var stop, counting atomic.Bool
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		var next func()
		next = func() {
			if stop.Load() || ctx.Err() != nil {
				wg.Done()
				return
			}
			c.run(readOnly, func(status txn.Status, err error) {
				switch {
				case err != nil:
					firstErr.CompareAndSwap(nil, err)
					stop.Store(true)
				case !counting.Load():
				case status == txn.Committed:
					nCommitted.Add(1)
				default:
					nAborted.Add(1)
				}
				next()
			})
		}
		next()
	}
	select {
	case <-time.After(o.Warmup):
	case <-ctx.Done():
	}
	counting.Store(true)
	select {
	case <-time.After(o.Phase - o.Warmup):
	case <-ctx.Done():
	}
	counting.Store(false)
	committed, aborted = nCommitted.Load(), nAborted.Load()
	stop.Store(true)
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok {
		return 0, 0, e
	}
	return committed, aborted, ctx.Err()
}

// run runs one transaction: two distinct uniform keys, read (and, for an update, both written).
func (c *loopClient) run(readOnly bool, done func(txn.Status, error)) {
	c.seq++
	id := txn.NewID(c.id, c.seq)
	a := c.rng.IntN(c.items)
	b := (a + 1 + c.rng.IntN(c.items-1)) % c.items
	keys := []string{partitioned.Key(0, strconv.Itoa(a)), partitioned.Key(0, strconv.Itoa(b))}
	fail := func(err error) { done(txn.Unknown, err) }
	c.lib.Begin(id, readOnly, func(err error) {
		if err != nil {
			fail(err)
			return
		}
		var step func(i int)
		step = func(i int) {
			if i == len(keys) {
				c.lib.Commit(func(status txn.Status, _ txn.AbortReason, err error) { done(status, err) })
				return
			}
			c.lib.Read(keys[i], func(_ []byte, _ txn.ID, err error) {
				if err != nil {
					fail(err)
					return
				}
				if readOnly {
					step(i + 1)
					return
				}
				c.lib.Write(keys[i], []byte(strconv.FormatUint(uint64(id), 16)), func(err error) {
					if err != nil {
						fail(err)
						return
					}
					step(i + 1)
				})
			})
		}
		step(0)
	})
}

// errNoCommit reports a phase in which nothing committed.
var errNoCommit = errors.New("loopback: no transaction committed")
