package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestSDURClusterKillLeader starts S-DUR's WAN 1 deployment (sdur-wan1, two partitions of three
// replicas, six processes, emulated WAN) and runs the micro workload with half of the
// transactions global, while partition 1's Paxos leader (use-1-p1r0) is killed with SIGKILL and
// restarted 3 s later. Every commit a client saw acknowledged must be installed at every
// replica afterwards (the checker's lost-commit check), the history must be serializable, and
// the EU clients' globals, which need partition 1's broadcast, must keep committing while the
// leader is down (a new leader takes over).
func TestSDURClusterKillLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	bin := meridianBinary(t)
	topo, _ := topology.Preset("sdur-wan1")
	pl, err := partitioned.PlacementFor(topo, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := bringUp(t, cluster.GeneratePlaced(topo, "sdur-wan1", "sdur", dir, freeBasePort(t, len(pl.DC)), pl), dir, bin)
	type outcome struct {
		res *bench.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		opts := bench.MicroDefaults()
		opts.ClientsPerDC, opts.KeepHistory = 2, true
		opts.Workload = workload.Micro{ItemsPerPartition: 1000, GlobalFraction: 0.5, ValueBytes: 4}
		opts.DurationUs, opts.WarmupUs, opts.CooldownUs = (9 * time.Second).Microseconds(), 0, 0
		res, err := bench.RunCluster(context.Background(), opts, cfg, nil)
		done <- outcome{res, err}
	}()
	time.Sleep(2 * time.Second)
	const victim = "use-1-p1r0"
	if err := cluster.Kill(dir, victim); err != nil {
		t.Fatal(err)
	}
	killedUs := time.Now().UnixMicro()
	time.Sleep(3 * time.Second)
	restartedUs := time.Now().UnixMicro()
	if err := cluster.StartNode(context.Background(), dir, bin, victim); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !o.res.Checker.OK || o.res.Checker.Committed == 0 {
		t.Fatalf("%d committed; checker: %s", o.res.Checker.Committed, o.res.Checker.Summary())
	}
	whileDown := 0
	for _, tx := range o.res.History.Txns {
		startUs, endUs := o.res.OriginUnixUs+tx.StartUs, o.res.OriginUnixUs+tx.EndUs
		global := len(tx.Writes) == 2 && !strings.HasPrefix(tx.Writes[1], "p0/")
		if tx.DC == "eu-1" && global && tx.Status == txn.Committed && startUs > killedUs+1_500_000 && endUs < restartedUs {
			whileDown++
		}
	}
	t.Logf("checker: %s; %d EU globals committed while partition 1's leader was down", o.res.Checker.Summary(), whileDown)
	if whileDown == 0 {
		t.Fatal("no EU global committed while partition 1's leader was down")
	}
}
