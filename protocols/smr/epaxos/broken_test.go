package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
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
	swarm.CatchesBroken(t, "epaxos", 6, 5, func(seed uint64) bench.Options {
		opts := bench.Defaults()
		opts.Topology, _ = topology.Preset("aws-helios")
		opts.Seed = seed
		opts.ClientsPerDC = 2
		opts.Workload = workload.TYCSB{Keys: 20, Distribution: workload.DistUniform, OpsPerTxn: 2, ReadRatio: 0.5}
		opts.DurationUs, opts.WarmupUs = 1_000_000, 0
		return opts
	}, protocol.Params{ParamUnsafeFastQuorum: "1"})
}
