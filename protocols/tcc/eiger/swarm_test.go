package eiger

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
)

// TestSwarm runs Eiger over 200 random seeds in the simulator (internal/swarm.TCCOptions: 2–8
// partitions, contention, write-heavy mixes, crashed partitions and cut links; random
// transaction timeouts, either EVT reading, reads with or without the client's clock) and
// requires the TCC checker (C1–C6, at most 3 rounds per ROT) to pass, every read to return its
// version's value and every transaction to finish once the faults are over.
func TestSwarm(t *testing.T) {
	swarm.RunTCC(t, "eiger", "go test ./eiger -run 'TestSwarm$'", nil)
}

// TestSwarmWithoutReadClock runs the 200 seeds with every read without the client's clock
// (read_clock=false, as under reading=thesis), so that the dependency-time check alone keeps
// every session's ROTs at or above its past in every seed. The seeds whose random draw is
// already read_clock=false are TestSwarm's very runs, so it runs only the others
// (swarm.RunTCCVariant): with TestSwarm, every one of the 200 seeds runs without the clock.
func TestSwarmWithoutReadClock(t *testing.T) {
	swarm.RunTCCVariant(t, "eiger", "go test ./eiger -run 'TestSwarmWithoutReadClock$'", protocol.Params{ParamReadClock: "false"})
}

// TestSwarmCatchesSkippedDepCheck is the negative control: reads without the client's clock
// and without the dependency-time check (unsafe_skip_dep_check) can return a snapshot older
// than the session's own past, and the checker must find it in one of seeds 0 to 39 (it stops
// at the first: swarm.UntilCaught).
func TestSwarmCatchesSkippedDepCheck(t *testing.T) {
	seeds := make([]uint64, 40)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	findings := make([]string, len(seeds))
	caught, seed, err := swarm.UntilCaught(seeds, 1, func(i int, seed uint64) (bool, error) {
		res, err := bench.Run(swarm.TCCOptions("eiger", seed, protocol.Params{
			ParamReadClock: "false", ParamUnsafeSkipDepCheck: "true"}), "eiger")
		if err != nil || res.Checker.OK {
			return false, err
		}
		findings[i] = res.Checker.Summary()
		return true, nil
	})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if len(caught) == 0 {
		t.Fatalf("the checker found nothing in %d seeds of an Eiger without its clock or its dependency check", len(seeds))
	}
	t.Logf("caught in seed %d: %s", seeds[caught[0]], findings[caught[0]])
}
