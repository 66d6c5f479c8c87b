package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
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
// restarted units must answer read-only transactions again.
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
	type outcome struct {
		res *bench.Result
		err error
	}
	done := make(chan outcome, 1)
	running := make(chan struct{})
	var once sync.Once
	go func() {
		opts := workloadOptions(rounds*(downFor+upFor) + 4*time.Second)
		w := opts.Workload.(workload.TYCSB)
		w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 1, 20, 20
		opts.Workload, opts.KeepHistory = w, true
		opts.Progress = func(string, int64, int64) { once.Do(func() { close(running) }) }
		res, err := bench.RunCluster(context.Background(), opts, cfg, nil)
		done <- outcome{res, err}
	}()
	select {
	case <-running:
	case o := <-done:
		t.Fatalf("the run ended before its first second: %v", o.err)
	}
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
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	res := o.res
	committed := 0
	for _, dc := range res.DCs {
		committed += dc.Committed
	}
	t.Logf("%d committed; checker: %s", committed, res.Checker.Summary())
	if committed == 0 || !res.Checker.OK {
		t.Fatalf("%d committed; checker: %s", committed, res.Checker.Summary())
	}
	if len(res.History.Replicas) != len(nodes) {
		t.Fatalf("the checker compared %d nodes' version orders; want all %d (replicas and units)", len(res.History.Replicas), len(nodes))
	}
	// Read-only transactions answered by each restarted unit after its restart.
	for _, unit := range []string{"A-ro1", "C-ro1"} {
		dc := unit[:1]
		after := 0
		for _, tx := range res.History.Txns {
			if tx.Snapshot && tx.DC == dc && tx.Status == txn.Committed && res.OriginUnixUs+tx.StartUs > restartedUs[unit] {
				after++
			}
		}
		if after == 0 {
			t.Errorf("unit %s answered no read-only transaction after its restart", unit)
		}
		t.Logf("%s: %d read-only transactions after its restart", unit, after)
	}
}
