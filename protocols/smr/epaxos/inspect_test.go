package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/tools/bench"
)

// inspected holds the replicas of the last run of "epaxos-inspect", EPaxos registered once more
// for tests that look inside the replicas after a simulated run.
var inspected []*Replica

func init() {
	registry.Register("epaxos-inspect", registry.Entry{Family: registry.ReadWrite, Codec: Codec, ToleratesOutages: 1,
		New: func(c protocol.Config, env protocol.Env) (protocol.Replica, error) {
			r, err := New(c, env)
			if err == nil {
				if c.Self == 0 {
					inspected = nil
				}
				inspected = append(inspected, r.(*Replica))
			}
			return r, err
		}})
}

// TestSwarmExercisesRecovery: the property test's seeds (the first 20, with their crashes aimed
// at recovery) do make replicas run Explicit Prepare, so its verdict covers recovery, and every
// replica ends with nothing in flight.
func TestSwarmExercisesRecovery(t *testing.T) {
	recoveries, tries, commits := 0, 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		opts := swarm.Options("epaxos-inspect", seed)
		crashDuringRecovery(seed, &opts)
		if _, err := bench.Run(opts, "epaxos-inspect"); err != nil {
			t.Fatal(err)
		}
		for _, r := range inspected {
			recoveries += r.stats.Recoveries
			tries += r.stats.Tries
			commits += r.stats.FastCommits + r.stats.SlowCommits
			if !r.Quiescent() {
				t.Errorf("seed %d: replica %d has work in flight at the end", seed, r.self)
			}
		}
	}
	t.Logf("%d recoveries (%d sent TryPreAccept), %d commits by original leaders", recoveries, tries, commits)
	if recoveries == 0 {
		t.Fatal("no replica ever recovered an instance")
	}
}
