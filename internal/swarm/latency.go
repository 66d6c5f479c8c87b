package swarm

import (
	"math"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// Uncontended returns the options of a run without conflicts on the topology preset topoName:
// one client per datacenter over a huge key space, exact delays and no client hop, so that
// commit latencies are the protocol's alone (spec §7.4) and can be set against its analytic
// model.
func Uncontended(t testing.TB, topoName string) bench.Options {
	t.Helper()
	topo, ok := topology.Preset(topoName)
	if !ok {
		t.Fatalf("no topology preset %s", topoName)
	}
	opts := bench.Defaults()
	opts.Topology = topo
	opts.ClientsPerDC = 1
	opts.Workload = workload.TYCSB{Keys: 1_000_000, Distribution: workload.DistUniform, OpsPerTxn: 2, ReadRatio: 0.5}
	opts.DurationUs, opts.WarmupUs = 5_000_000, 500_000
	opts.Jitter, opts.ClientHopUs = 0, 0
	return opts
}

// CheckLatencies runs proto with opts and requires a clean checker, every transaction finished,
// no abort, and each datacenter's mean commit latency within 1 ms of want (milliseconds by
// datacenter name). Datacenters without clients (opts.ClientDCs) are skipped.
func CheckLatencies(t *testing.T, opts bench.Options, proto string, want map[string]float64) {
	t.Helper()
	res, err := bench.Run(opts, proto)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK || res.Unfinished > 0 {
		t.Fatalf("%s: %s; %d unfinished\nparameters: %s", proto, res.Checker.Summary(), res.Unfinished, res.Replay)
	}
	for _, dc := range res.DCs {
		if opts.ClientDCs != nil && !slices.Contains(opts.ClientDCs, dc.Name) {
			continue
		}
		w, ok := want[dc.Name]
		if !ok {
			t.Fatalf("unexpected datacenter %s", dc.Name)
		}
		t.Logf("%s: mean %.2f ms, p99 %.2f ms, %d commits", dc.Name, dc.Latency.Mean, dc.Latency.P99, dc.Committed)
		if dc.Committed == 0 || dc.Aborted != 0 || math.Abs(dc.Latency.Mean-w) > 1 {
			t.Errorf("%s: mean commit latency %.2f ms over %d commits (%d aborts), want %.0f ± 1", dc.Name, dc.Latency.Mean, dc.Committed, dc.Aborted, w)
		}
	}
}
