package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestCheckerCatchesTooSmallFastQuorum is the negative control: with unsafe_fast_quorum = 1 a
// leader commits on its own attributes without hearing from anyone, so two conflicting commands
// of different leaders may both commit without either in the other's deps, and replicas execute
// them in different orders. Under contention the checker must catch it on most seeds (replicas
// diverge, or the history is not serializable), while the same runs with the real fast quorum
// are clean.
func TestCheckerCatchesTooSmallFastQuorum(t *testing.T) {
	const seeds = 6
	caught := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		opts := bench.Defaults()
		opts.Topology, _ = topology.Preset("aws-helios")
		opts.Seed = seed
		opts.ClientsPerDC = 2
		opts.Workload = workload.TYCSB{Keys: 20, Distribution: workload.DistUniform, OpsPerTxn: 2, ReadRatio: 0.5}
		opts.DurationUs, opts.WarmupUs = 1_000_000, 0
		res, err := bench.Run(opts, "epaxos")
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Problem(); err != nil || res.Unfinished > 0 {
			t.Fatalf("seed %d with the real fast quorum: %v, %d unfinished\nparameters: %s", seed, err, res.Unfinished, res.Replay)
		}
		opts.Params = protocol.Params{ParamUnsafeFastQuorum: "1"}
		if res, err = bench.Run(opts, "epaxos"); err != nil {
			t.Fatal(err)
		}
		if !res.Checker.OK {
			caught++
			if caught == 1 {
				t.Logf("seed %d: %s", seed, res.Checker.Summary())
			}
		}
	}
	if caught < seeds*3/4 {
		t.Fatalf("checker caught the broken EPaxos on %d of %d seeds, want most", caught, seeds)
	}
	t.Logf("caught on %d of %d seeds", caught, seeds)
}
