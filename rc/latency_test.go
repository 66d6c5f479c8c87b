package rc

import (
	"math"
	"testing"

	"github.com/meridian-kv/meridian/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestUncontendedLatency is §7.4's first RC check: on aws-helios with exact delays and no
// client hop, one client per datacenter over a huge key space commits after the RTT to its
// closest majority (§5.6: V 78, O 66, C 78, I 175, S 194 ms), within 1 ms. The commit latency
// is measured from the commit request, so the majority reads before it are not counted.
func TestUncontendedLatency(t *testing.T) {
	topo, ok := topology.Preset("aws-helios")
	if !ok {
		t.Fatal("no preset aws-helios")
	}
	opts := bench.Defaults()
	opts.Topology = topo
	opts.ClientsPerDC = 1
	opts.Workload = workload.Config{Keys: 1_000_000, Distribution: workload.DistUniform, OpsPerTxn: 2, ReadRatio: 0.5}
	opts.DurationUs, opts.WarmupUs = 5_000_000, 500_000
	opts.Jitter, opts.ClientHopUs = 0, 0
	res, err := bench.Run(opts, "rc")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK || res.Unfinished > 0 {
		t.Fatalf("%s; %d unfinished", res.Checker.Summary(), res.Unfinished)
	}
	want := map[string]float64{"V": 78, "O": 66, "C": 78, "I": 175, "S": 194}
	for _, dc := range res.DCs {
		w, ok := want[dc.Name]
		if !ok {
			t.Fatalf("unexpected datacenter %s", dc.Name)
		}
		if dc.Committed == 0 || dc.Aborted != 0 || math.Abs(dc.Latency.Mean-w) > 1 {
			t.Errorf("%s: mean commit latency %.2f ms over %d commits (%d aborts), want %.0f ± 1", dc.Name, dc.Latency.Mean, dc.Committed, dc.Aborted, w)
		}
		t.Logf("%s: mean %.2f ms, p99 %.2f ms, %d commits", dc.Name, dc.Latency.Mean, dc.Latency.P99, dc.Committed)
	}
}
