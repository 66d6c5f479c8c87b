package conformance

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestMFImmediateCommitZone is §7.2.8: two datacenters 100 ms apart, B sending every 10 ms and A
// every 1000 ms. A transaction at A issued more than about 110 ms after A's last send commits at
// once, so about 1 − 110/1000 = 89% of uniformly issued transactions commit immediately, and
// the mean latency is about 110²/2000 ≈ 6 ms.
func TestMFImmediateCommitZone(t *testing.T) {
	opts := uncontended(t, "table4.1", "10ms")
	opts.Topology = &topology.Topology{Name: "icz", DCs: []string{"A", "B"},
		RTTMs: [][]float64{{0, 100}, {100, 0}}, StdDevMs: [][]float64{{0, 0}, {0, 0}}}
	opts.Params = protocol.Params{"interval.A": "1000ms", "interval.B": "10ms"}
	opts.Workload = workload.TYCSB{Keys: 1_000_000, Distribution: workload.DistUniform, OpsPerTxn: 1, ReadRatio: 0}
	opts.RatePerClient = 1000.0 / 271 // a period incommensurate with A's sends: uniform phases
	opts.DurationUs, opts.WarmupUs = 120_000_000, 2_000_000
	opts.KeepHistory = true
	res := run(t, opts, "mf")
	immediate, total, sumMs := 0, 0, 0.0
	for _, tx := range res.History.Txns {
		if tx.DC != "A" || tx.StartUs < opts.WarmupUs {
			continue
		}
		lat := float64(tx.EndUs-tx.StartUs) / 1000
		total++
		sumMs += lat
		if lat < 1 {
			immediate++
		}
	}
	frac, mean := float64(immediate)/float64(total), sumMs/float64(total)
	t.Logf("A: %d transactions, %.1f%% immediate, mean latency %.1f ms", total, 100*frac, mean)
	if frac < 0.85 || frac > 0.93 {
		t.Errorf("immediate fraction %.3f, want ≈ 0.89", frac)
	}
	if mean < 3 || mean > 9 {
		t.Errorf("mean latency %.1f ms, want ≈ 6", mean)
	}
}
