package sdur_test

import (
	"testing"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// microLocalP99 runs proto on WAN 1's micro workload with globals (a fraction) for 4 virtual
// seconds (1 s unmeasured at each end), 64 clients per home datacenter each starting 5
// transactions a second, and returns the run's local and global p99 in ms.
func microLocalP99(t *testing.T, proto string, globals float64) (local, global float64) {
	t.Helper()
	o := bench.MicroDefaults()
	o.ClientsPerDC, o.RatePerClient = 64, 5
	o.DurationUs, o.WarmupUs, o.CooldownUs = 4_000_000, 1_000_000, 1_000_000
	w := workload.DefaultMicro()
	w.GlobalFraction = globals
	o.Workload = w
	res, err := bench.Run(o, proto)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Problem(); err != nil || res.Unfinished > 0 {
		t.Fatalf("%s: %v, %d unfinished", proto, err, res.Unfinished)
	}
	m := res.Metrics.(*workload.MicroMetrics)
	return m.Local.P99, m.Global.P99
}

// TestVoteBroadcastLocalTarget is issue 12's latency target: in WAN 1 at 10% globals, vote
// broadcasting keeps local p99 within twice BASE's with no globals (the source: a > 90%
// reduction), while BASE's convoy puts it far beyond.
func TestVoteBroadcastLocalTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("three simulated runs of 4 virtual seconds")
	}
	zero, _ := microLocalP99(t, "sdur", 0)
	vb, vbGlobal := microLocalP99(t, "sdur-votebcast", 0.1)
	base, baseGlobal := microLocalP99(t, "sdur", 0.1)
	t.Logf("local p99: BASE 0%% globals %.1f ms; 10%% globals: VOTEBCAST %.1f ms (global %.1f), BASE %.1f ms (global %.1f)", zero, vb, vbGlobal, base, baseGlobal)
	if vb > 2*zero {
		t.Errorf("VOTEBCAST at 10%% globals: local p99 %.1f ms, over twice the 0%% p99 (%.1f ms)", vb, zero)
	}
	if base <= 2*zero {
		t.Errorf("control: BASE at 10%% globals has local p99 %.1f ms, within twice the 0%% p99 (%.1f ms): no convoy to cure", base, zero)
	}
}
