package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// TestOrderingFiguresReachTheResult: a fault-free contended run reports, in bench's result, one
// decision (fast or slow) per transaction, by its original leader, and every replica's executed
// components covering every instance once; contention makes both paths and components with
// more than one command appear.
func TestOrderingFiguresReachTheResult(t *testing.T) {
	opts := bench.Defaults()
	opts.ClientsPerDC = 4
	opts.Workload = workload.TYCSB{Keys: 30, Distribution: workload.DistUniform, OpsPerTxn: 2, ReadRatio: 0.5}
	opts.DurationUs, opts.WarmupUs = 3_000_000, 0
	res, err := bench.Run(opts, "epaxos")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Problem(); err != nil || res.Unfinished > 0 {
		t.Fatalf("%v, %d unfinished", err, res.Unfinished)
	}
	o := res.Ordering
	if o == nil {
		t.Fatal("no ordering figures in the result")
	}
	decided := res.Checker.Committed + res.Checker.Aborted
	if o.FastDecisions+o.SlowDecisions != decided || o.FastDecisions == 0 || o.SlowDecisions == 0 {
		t.Fatalf("%d fast + %d slow decisions for %d transactions; want one each, on both paths", o.FastDecisions, o.SlowDecisions, decided)
	}
	executed := 0
	for size, n := range o.ComponentSizes {
		executed += size * n
	}
	count, multi, largest := o.Components()
	if executed != decided*opts.Topology.N() || multi == 0 || largest < 2 {
		t.Fatalf("components cover %d executions of %d transactions at %d replicas; %d components, %.3f with more than one, largest %d",
			executed, decided, opts.Topology.N(), count, multi, largest)
	}
	t.Logf("fast path %.1f%%, %d components, %.2f%% with more than one command, largest %d", 100*o.FastShare(), count, 100*multi, largest)
}
