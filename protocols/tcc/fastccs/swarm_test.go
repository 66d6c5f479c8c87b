package fastccs

import (
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
)

// TestSwarm runs FastCCS over 200 random seeds with crashed partition servers and cut links
// (swarm.TCCOptions) and checks every history with the TCC checker (C1–C6, C5 with at most 2
// rounds).
func TestSwarm(t *testing.T) {
	swarm.RunTCC(t, "fastccs", "go test ./fastccs -run 'TestSwarm$'", nil)
}

// TestSwarmCatchesSkippedSnapshotCheck is the negative control: a client that skips Algorithm
// 1's line-10 check (unsafe_skip_snapshot_check) returns fractured snapshots (and its ROTs never
// take a second round), and the checker must find them in one of 20 seeds; it stops at the
// first (the seeds after it would decide nothing).
func TestSwarmCatchesSkippedSnapshotCheck(t *testing.T) {
	caught := 0
	for seed := uint64(0); seed < 20 && caught == 0; seed++ {
		res, err := bench.Run(swarm.TCCOptions("fastccs", seed, protocol.Params{ParamUnsafeSkipSnapshotCheck: "true"}), "fastccs")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.TCC().RotRounds["2"] > 0 {
			t.Fatalf("seed %d: a ROT took a second round with the check skipped", seed)
		}
		if res.Checker.Counts["C2"] > 0 {
			caught++
			t.Logf("caught in seed %d: %s", seed, res.Checker.Summary())
		}
	}
	if caught == 0 {
		t.Fatal("the checker found no fractured snapshot in 20 seeds of a FastCCS without its snapshot check")
	}
}

// TestDeterministic: the same seed gives the same run, byte for byte in its results.
func TestDeterministic(t *testing.T) {
	for _, name := range []string{"fastccs", "fastccs-geo"} {
		var runs [2]string
		for i := range runs {
			res, err := bench.Run(swarm.TCCOptions(name, 7, nil), name)
			if err != nil {
				t.Fatal(err)
			}
			runs[i] = fmt.Sprintf("%+v %v %d", res.TCC().RotRounds, res.Sim, res.Checker.Committed)
		}
		if runs[0] != runs[1] {
			t.Errorf("%s: two runs of one seed differ:\n%s\n%s", name, runs[0], runs[1])
		}
	}
}
