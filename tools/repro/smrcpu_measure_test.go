//go:build calibrate

package repro

// The real servers' cost of ALVIN, EPaxos and Multi-Paxos on TPC-C (issue 11, "Performance"),
// recorded in docs/BENCHMARKS.md. Like TestMeasureServiceCosts it builds the meridian binary
// and starts real 3-node clusters on 127.0.0.1 (aws-3's nodes, no WAN delay, no fsync), one
// protocol after the other in one run; about eight minutes:
//
//	go test -tags calibrate -run TestMeasureSMRTPCC -v -timeout 30m ./tools/repro/

import (
	"context"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// smrCPUWindowS is the measured part of every load, in seconds (after 2 s unmeasured).
const smrCPUWindowS = 15

// smrCPULoads are the loads of TestMeasureSMRTPCC: the spec's one warehouse per node, whose
// hot rows (warehouse, district) make most attempts abort from a few clients on, and 16
// warehouses per node, which spread them so that more clients raise the throughput.
var smrCPULoads = []struct{ warehouses, clients int }{{1, 2}, {1, 8}, {16, 16}, {16, 64}}

// TestMeasureSMRTPCC runs write-intensive TPC-C (retries) at every load of smrCPULoads against
// a 3-node cluster of each protocol and logs, per load, the committed transactions per second
// (from the nodes' commit counters over the window) and each node's process CPU per committed
// transaction: every node executes, validates and applies every transaction, so CPU per
// committed transaction per node is the protocol's cost.
func TestMeasureSMRTPCC(t *testing.T) {
	bin := buildMeridian(t)
	for k, proto := range []string{"alvin", "epaxos", "multipaxos-lo"} {
		c := startLocalCluster(t, bin, "aws-3", proto, nil, 7470+10*k)
		peak := 0.0
		for _, load := range smrCPULoads {
			opts := bench.TPCCDefaults()
			w := opts.Workload.(workload.TPCC)
			w.WarehousesPerDC = load.warehouses
			opts.Workload, opts.ClientsPerDC = w, load.clients
			opts.DurationUs, opts.WarmupUs = (smrCPUWindowS+2)*1_000_000, 0
			var a, b []nodeSample
			var startAt, endAt time.Time
			opts.Progress = func(_ string, elapsedUs, totalUs int64) {
				switch elapsedUs {
				case 2_000_000:
					a, startAt = c.sample(t), time.Now()
				case totalUs:
					b, endAt = c.sample(t), time.Now()
				}
			}
			res, err := bench.RunCluster(context.Background(), opts, c.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Problem(); err != nil {
				t.Fatalf("%s, %+v: %v", proto, load, err)
			}
			if a == nil || b == nil {
				t.Fatalf("%s, %+v: no samples", proto, load)
			}
			seconds := endAt.Sub(startAt).Seconds()
			commits, attempts, cpuS := 0.0, 0.0, 0.0
			for i := range c.cfg.Nodes {
				commits += b[i].commits - a[i].commits
				attempts += b[i].commitReqs - a[i].commitReqs
				cpuS += b[i].cpuS - a[i].cpuS
			}
			tps := commits / seconds
			peak = max(peak, tps)
			t.Logf("%-13s %2d warehouses, %2d clients per node: %7.1f committed txn/s, %4.1f%% of attempts aborted, CPU %5.2f cores in all, %6.0f µs per committed transaction per node",
				proto, load.warehouses, load.clients, tps, 100*(1-commits/attempts), cpuS/seconds, 1e6*cpuS/float64(len(c.cfg.Nodes))/commits)
		}
		t.Logf("%s: peak %.1f committed txn/s", proto, peak)
	}
}
