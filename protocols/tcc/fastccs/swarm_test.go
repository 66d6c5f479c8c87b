package fastccs

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// swarmParams draws one seed's FastCCS parameters, VOPR style: gossip mode, fan-out and period,
// timeouts short enough to fire, the GC period, the A11 flag and the retry count, then extra.
func swarmParams(extra protocol.Params) swarm.TCCParams {
	return func(r *rand.Rand) protocol.Params {
		p := protocol.Params{
			ParamGossip:            []string{gossipAll, gossipTree}[r.IntN(2)], // not off: C6 needs gossip
			ParamGossipFanout:      fmt.Sprint(1 + r.IntN(3)),
			ParamStabInterval:      fmt.Sprintf("%dms", 1+r.IntN(20)),
			ParamTxTimeout:         fmt.Sprintf("%dms", 20+r.IntN(300)),
			ParamGCInterval:        fmt.Sprintf("%dms", 10+r.IntN(100)),
			ParamMergeClockOnWrite: fmt.Sprint(r.IntN(2) == 0),
			ParamRetries:           fmt.Sprint(r.IntN(4)),
		}
		maps.Copy(p, extra)
		return p
	}
}

// TestSwarm runs FastCCS over 200 random seeds with crashed partition servers and cut links
// (swarm.TCCOptions) and checks every history with the TCC checker (C1–C6, C5 with at most 2
// rounds).
func TestSwarm(t *testing.T) {
	swarm.RunTCC(t, "fastccs", "go test ./fastccs -run 'TestSwarm$'", swarmParams(nil))
}

// TestSwarmCatchesSkippedSnapshotCheck is the negative control: a client that skips Algorithm
// 1's line-10 check (unsafe_skip_snapshot_check) returns fractured snapshots, and the checker
// must find them in some of the seeds.
func TestSwarmCatchesSkippedSnapshotCheck(t *testing.T) {
	caught := 0
	for seed := range uint64(20) {
		res, err := bench.Run(swarm.TCCOptions(seed, swarmParams(protocol.Params{ParamUnsafeSkipSnapshotCheck: "true"})), "fastccs")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.TCC().RotRounds["2"] > 0 {
			t.Fatalf("seed %d: a ROT took a second round with the check skipped", seed)
		}
		if res.Checker.Counts["C2"] > 0 {
			caught++
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
			o := swarm.TCCOptions(7, swarmParams(nil))
			if name == "fastccs-geo" {
				o.Topology, _ = topology.Preset("aws-mf")
			}
			res, err := bench.Run(o, name)
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
