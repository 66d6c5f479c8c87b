package twopc

import (
	"math"
	"testing"

	"github.com/meridian-kv/meridian/bench"
	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestUncontendedLatency is spec §7.4 / §5.6: on aws-helios with exact delays and no client hop,
// an uncontended commit at X takes RTT(X,V) + 78 ms (V 78, O 144, C 156, I 162, S 346), within
// 1 ms. Latency is measured from the commit request, so the reads do not count.
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
	res, err := bench.Run(opts, "2pc-paxos")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK {
		t.Fatalf("%s\nparameters: %s", res.Checker.Summary(), res.Replay)
	}
	want := map[string]float64{"V": 78, "O": 144, "C": 156, "I": 162, "S": 346}
	for _, dc := range res.DCs {
		t.Logf("%s: %.2f ms over %d commits", dc.Name, dc.Latency.Mean, dc.Committed)
		if dc.Committed == 0 || math.Abs(dc.Latency.Mean-want[dc.Name]) > 1 {
			t.Errorf("%s: mean latency %.2f ms over %d commits, want %.0f ± 1", dc.Name, dc.Latency.Mean, dc.Committed, want[dc.Name])
		}
	}
}

// TestPropertySafety runs the 200-seed randomized swarm (outages, partitions, slow links, loss,
// duplication, reordering): no anomaly, converged replicas, and every transaction finished.
func TestPropertySafety(t *testing.T) {
	swarm.Run(t, "2pc-paxos", "go test ./twopc -run TestPropertySafety")
}
