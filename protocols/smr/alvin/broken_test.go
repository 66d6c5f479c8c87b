package alvin

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
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
	swarm.CatchesBroken(t, "alvin-nf", 10, 8, func(seed uint64) bench.Options {
		opts := bench.Defaults()
		opts.Topology, _ = topology.Preset("aws-helios")
		opts.Seed = seed
		opts.ClientsPerDC = 4
		opts.Workload = workload.TYCSB{Keys: 10, Distribution: workload.DistUniform, OpsPerTxn: 2, ReadRatio: 0.5}
		opts.DurationUs, opts.WarmupUs = 2_000_000, 0
		// S hears V late: V's decisions reach S after the later decisions of other leaders.
		opts.Faults = []sim.Fault{{Kind: sim.Slow, DC: "V", Peer: "S", StartUs: 0, EndUs: opts.DurationUs, ExtraUs: 300_000}}
		return opts
	}, protocol.Params{ParamUnsafeIgnoreDeps: "true"})
}
