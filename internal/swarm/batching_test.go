package swarm

import (
	"testing"

	"github.com/meridian-kv/meridian/tools/bench"
)

// TestSMRInstanceBatchingUnderFaults runs the state-machine replication protocols with instance
// batching (InstanceBatching) over swarm seeds (faults, chaos, skew): T-YCSB on most seeds, and
// TPC-C or Bank (smrWorkloadOptions: TPC-C's consistency conditions and Bank's audits) on every
// third. Every run must pass Check: no anomaly, no broken workload invariant, nothing unfinished
// once the faults are over. Four seeds per protocol (20 runs); MERIDIAN_LONG=1 runs
// SeedsPerProtocol per protocol, MERIDIAN_SEED=N one.
func TestSMRInstanceBatchingUnderFaults(t *testing.T) {
	seeds := firstSeeds(t, 4)
	options := func(proto string, seed uint64) bench.Options {
		opts := Options(proto, seed)
		if seed%3 == 0 {
			opts = smrWorkloadOptions(proto, seed)
		}
		InstanceBatching(seed, &opts)
		return opts
	}
	for _, proto := range []string{"alvin", "alvin-nf", "epaxos", "multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) {
			runSeeds(t, proto, "go test ./internal/swarm -run 'TestSMRInstanceBatchingUnderFaults/"+proto+"$'", seeds, options)
		})
	}
}
