package bench

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// BenchmarkSimulator measures the simulator on the main job's setting (aws-helios, 12 clients
// per datacenter, T-YCSB defaults), 10 virtual seconds per protocol, and reports events per
// wall second and the ratio of virtual to wall time.
func BenchmarkSimulator(b *testing.B) {
	opts := Defaults()
	opts.DurationUs = 10_000_000
	opts.WarmupUs = 1_000_000
	for _, p := range opts.Protocols {
		b.Run(p, func(b *testing.B) { measure(b, opts, []string{p}) })
	}
}

// BenchmarkDefaultRun is the whole main job, `meridian bench` without flags: five protocols,
// 60 virtual seconds each. Run it with -benchtime 1x.
func BenchmarkDefaultRun(b *testing.B) {
	opts := Defaults()
	measure(b, opts, opts.Protocols)
}

func measure(b *testing.B, opts Options, protocols []string) {
	var events uint64
	var virtualUs int64
	for b.Loop() {
		for _, p := range protocols {
			res, err := Run(opts, p)
			if err != nil {
				b.Fatal(err)
			}
			if !res.Checker.OK {
				b.Fatalf("%s: %s", p, res.Checker.Summary())
			}
			events += res.Sim.Events
			virtualUs += res.VirtualUs
		}
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/wall, "events/s")
	b.ReportMetric(float64(virtualUs)/1e6/wall, "virtual/wall")
}

// TestRetry: with retries an aborted transaction runs again on the same keys until it commits;
// each re-run names its first attempt and counts its attempt in the history, the end-to-end
// latency covers every attempt, and the checker still judges the whole run.
func TestRetry(t *testing.T) {
	opts := Defaults()
	opts.Topology, _ = topology.Preset("table4.1")
	opts.ClientsPerDC, opts.DurationUs, opts.WarmupUs = 4, 5_000_000, 500_000
	opts.Workload = workload.TYCSB{Keys: 200, Distribution: workload.DistUniform, OpsPerTxn: 4, ReadRatio: 0.5}
	opts.Retry, opts.RetryBackoffUs, opts.KeepHistory = true, 10_000, true
	res, err := Run(opts, "helios-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Problem(); err != nil {
		t.Fatal(err)
	}
	byID := map[txn.ID]history.Txn{}
	for _, tx := range res.History.Txns {
		byID[tx.ID] = tx
	}
	retried := 0
	for _, tx := range res.History.Txns {
		if tx.Attempt <= 1 {
			continue
		}
		retried++
		first, ok := byID[tx.First]
		if !ok || first.Status != txn.Aborted || first.Client != tx.Client || first.Attempt > 1 {
			t.Fatalf("%v (attempt %d) names first attempt %v: %+v", tx.ID, tx.Attempt, tx.First, first)
		}
		if !slices.Equal(first.Writes, tx.Writes) {
			t.Fatalf("%v re-ran %v with other writes: %v, then %v", tx.ID, tx.First, first.Writes, tx.Writes)
		}
	}
	if retried == 0 {
		t.Fatal("no transaction was retried: the test checks nothing")
	}
	for _, d := range res.DCs {
		if d.Committed > 0 && (d.AttemptsPerCommit < 1 || d.EndToEnd.Mean < d.Latency.Mean) {
			t.Errorf("%s: %.2f attempts per commit, end-to-end mean %.1f ms below the commit latency %.1f ms",
				d.Name, d.AttemptsPerCommit, d.EndToEnd.Mean, d.Latency.Mean)
		}
	}
	t.Logf("%d retried attempts; %s", retried, res.Checker.Summary())
}
