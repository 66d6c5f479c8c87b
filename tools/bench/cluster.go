package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/verify/history"
)

// DialFunc opens a benchmark client's connection to the node serving clients at addr and
// returns the client id the node allocated.
type DialFunc func(ctx context.Context, addr string) (Conn, txn.ClientID, error)

// Limits of a run against a real cluster.
const (
	clusterDrainTimeout    = 60 * time.Second // for outstanding transactions after the duration
	clusterConvergeTimeout = 60 * time.Second // for the replicas to install the same versions
)

// RunCluster runs the workload of opts against the running cluster cfg, in real time: the same
// closed-loop T-YCSB clients as the simulated bench, ClientsPerDC of them at each node, each
// over its own connection. Afterwards it waits for the replicas to converge, reads every node's
// version order (its /versions endpoint) and checks the history like Run does. opts.Topology and
// the protocol come from cfg; simulator-only options (faults, skew, jitter) are ignored.
func RunCluster(ctx context.Context, opts Options, cfg *cluster.Config, dial DialFunc) (*Result, error) {
	opts.Topology = cfg.Topology
	run, err := newRun(&opts)
	if err != nil {
		return nil, err
	}
	before, err := fetchVersionOrders(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: reading the cluster's state before the run: %w", err)
	}
	for _, t := range preexisting(before[0]) {
		run.record(t)
	}
	wallStart := time.Now()
	for _, nd := range cfg.Nodes {
		if !run.hasClients(nd.DCIndex) {
			continue
		}
		for i := range opts.ClientsPerDC {
			conn, id, err := dial(ctx, nd.ClientAddr)
			if err != nil {
				return nil, fmt.Errorf("bench: connecting to node %s at %s: %w", nd.Name, nd.ClientAddr, err)
			}
			if closer, ok := conn.(interface{ Close() error }); ok {
				defer closer.Close()
			}
			run.addWorker(conn, id, nd.DCIndex, i)
		}
	}
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
	}
	waitUntil(ctx, clusterDrainTimeout, run.idle)
	replicas, err := convergedVersionOrders(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res := run.finish(cfg.Protocol, replicas)
	res.WallTime = time.Since(wallStart)
	res.VirtualUs = res.WallTime.Microseconds()
	res.Replay = fmt.Sprintf("cluster=%s protocol=%s seed=%d clients-per-dc=%d duration=%s workload=%+v",
		cfg.Path, cfg.Protocol, opts.Seed, opts.ClientsPerDC, time.Duration(opts.DurationUs)*time.Microsecond, opts.Workload)
	return res, nil
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
func convergedVersionOrders(ctx context.Context, cfg *cluster.Config) ([]history.Replica, error) {
	var replicas []history.Replica
	lastTotal := -1
	waitUntil(ctx, clusterConvergeTimeout, func() bool {
		var err error
		if replicas, err = fetchVersionOrders(ctx, cfg); err != nil {
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

func fetchVersionOrders(ctx context.Context, cfg *cluster.Config) ([]history.Replica, error) {
	out := make([]history.Replica, 0, len(cfg.Nodes))
	for _, nd := range cfg.Nodes {
		reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, "http://"+nd.MetricsAddr+"/versions", nil)
		if err != nil {
			cancel()
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			return nil, err
		}
		var raw map[string][]string
		err = json.NewDecoder(resp.Body).Decode(&raw)
		resp.Body.Close()
		cancel()
		if err != nil {
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
