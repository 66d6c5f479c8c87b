package alvin

import (
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestCheckerCatchesBrokenPOB proves the checker can fail ALVIN: with unsafe_ignore_deps a node
// delivers a transaction as soon as it is stable, so nodes deliver conflicting transactions in
// different orders; runs under contention, with one slow link, must be caught on most seeds,
// and the same runs without the switch must all be clean.
func TestCheckerCatchesBrokenPOB(t *testing.T) {
	const seeds = 10
	caught := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		for _, broken := range []bool{false, true} {
			opts := bench.Defaults()
			opts.Topology, _ = topology.Preset("aws-helios")
			opts.Seed = seed
			opts.ClientsPerDC = 4
			opts.Workload = workload.TYCSB{Keys: 10, Distribution: workload.DistUniform, OpsPerTxn: 2, ReadRatio: 0.5}
			opts.DurationUs, opts.WarmupUs = 2_000_000, 0
			opts.Params = protocol.Params{ParamUnsafeIgnoreDeps: fmt.Sprint(broken)}
			// S hears V late: V's decisions reach S after the later decisions of other leaders.
			opts.Faults = []sim.Fault{{Kind: sim.Slow, DC: "V", Peer: "S", StartUs: 0, EndUs: opts.DurationUs, ExtraUs: 300_000}}
			res, err := bench.Run(opts, "alvin-nf")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !broken && (!res.Checker.OK || res.Unfinished > 0):
				t.Fatalf("seed %d without the switch: %s, %d unfinished", seed, res.Checker.Summary(), res.Unfinished)
			case broken && !res.Checker.OK:
				caught++
				if caught == 1 {
					t.Logf("seed %d: %s", seed, res.Checker.Summary())
				}
			}
		}
	}
	if caught < seeds*3/4 {
		t.Fatalf("checker caught the broken POB on %d of %d seeds, want most", caught, seeds)
	}
	t.Logf("caught on %d of %d seeds", caught, seeds)
}
