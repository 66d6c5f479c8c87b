package e2e

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestOgreRoTUnitCrashRestart runs Ogre as `meridian cluster up` deploys it — a replica and a
// RoT unit process per datacenter (table4.1, emulated WAN) — under read-modify load with a
// read-only client per datacenter, which talks to its datacenter's unit, and kills with SIGKILL
// and restarts, in turn, A's unit, B's replica and C's unit. Every commit a client saw
// acknowledged must be installed at every replica and every unit afterwards (the checker's
// lost-commit check over every node's version order: a restarted unit caught up), the
// read-only transactions must be serializable with the history of their datacenter, and the
// restarted units must then answer a read-only transaction with the newest version of every key.
func TestOgreRoTUnitCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	entry, err := registry.Lookup("ogre")
	if err != nil {
		t.Fatal(err)
	}
	topo, _ := topology.Preset("table4.1")
	nodes, err := entry.Nodes(entry.DeployParams, topo.N())
	if err != nil || len(nodes) != 2*topo.N() {
		t.Fatalf("ogre's deployment places %v (%v); want a replica and a unit per datacenter", nodes, err)
	}
	dir := t.TempDir()
	cfg := cluster.GenerateNodes(topo, "table4.1", "ogre", dir, freeBasePort(t, len(nodes)), nodes)
	cfg.Params = entry.DeployParams
	cfg = bringUp(t, cfg, dir, meridianBinary(t))

	const rounds, downFor, upFor = 3, 1500 * time.Millisecond, 800 * time.Millisecond
	opts := workloadOptions(rounds*(downFor+upFor) + 4*time.Second)
	w := opts.Workload.(workload.TYCSB)
	w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 1, 20, 20
	opts.Workload, opts.KeepHistory = w, true
	wait := runInBackground(t, opts, cfg)
	victims := []string{"A-ro1", "B", "C-ro1"}
	restartedUs := map[string]int64{}
	for _, victim := range victims[:rounds] {
		time.Sleep(upFor)
		if err := cluster.Kill(dir, victim); err != nil {
			t.Fatal(err)
		}
		time.Sleep(downFor)
		if err := cluster.StartNode(context.Background(), dir, meridianBinary(t), victim); err != nil {
			t.Fatal(err)
		}
		restartedUs[victim] = time.Now().UnixMicro()
	}
	res := wait()
	committedClean(t, res)
	if len(res.History.Replicas) != len(nodes) {
		t.Fatalf("the checker compared %d nodes' version orders; want all %d (replicas and units)", len(res.History.Replicas), len(nodes))
	}
	// Each restarted unit caught up: a read-only transaction there now reads, for every key of
	// the run, the newest version of the converged version order (the nodes converged before the
	// checker ran). How many the bench's read-only clients ran there after the restart is only
	// logged: a client reconnects within a second or two, which a loaded machine stretches.
	order := res.History.Replicas[0].VersionOrder
	keys := slices.Sorted(maps.Keys(order))
	for _, unit := range []string{"A-ro1", "C-ro1"} {
		i, node, err := cfg.Node(unit)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := rpc.DialClient(ctx, node.ClientAddr, plaintext)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", unit, err)
		}
		reads, err := c.ReadSnapshot(ctx, keys)
		c.Close()
		cancel()
		if err != nil {
			t.Fatalf("%s: read-only transaction after the run: %v", unit, err)
		}
		for _, r := range reads {
			if want := order[r.Key]; r.Version != want[len(want)-1] {
				t.Errorf("%s (node %d) reads %s at %v; the converged order ends with %v", unit, i, r.Key, r.Version, want[len(want)-1])
			}
		}
		after := 0
		for _, tx := range res.History.Txns {
			if tx.Snapshot && tx.DC == unit[:1] && tx.Status == txn.Committed && res.OriginUnixUs+tx.StartUs > restartedUs[unit] {
				after++
			}
		}
		t.Logf("%s: reads the newest version of all %d keys; the bench's read-only client ran %d transactions there after its restart", unit, len(keys), after)
	}
}
