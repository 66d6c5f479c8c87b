package multipaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/sim"
)

// TestLogIsTrimmed: under 20 virtual seconds of load on aws-3 (five clients per datacenter,
// default batching), every replica executes thousands of slots but keeps only the few that some
// replica has not executed yet (the leader's Commit carries the minimum its followers reported).
func TestLogIsTrimmed(t *testing.T) {
	topo := preset(t, "aws-3")
	s, err := sim.New(sim.Config{Topology: topo, Factory: batch.Wrap(Factory(LowestMeanRTT)), Seed: 5, Jitter: 1})
	if err != nil {
		t.Fatal(err)
	}
	decided := swarm.StartLoad(t, s, topo.N(), 5, 1000)
	s.RunUntil(20_000_000)
	for dc := range topo.N() {
		r := s.Replica(protocol.NodeID(dc)).(*batch.Replica).Inner().(*Replica)
		t.Logf("%s: executed %d slots, %d in the log", topo.DCs[dc], r.CommitIndex(), len(r.log))
		if r.CommitIndex() < 1000 || len(r.log) > 100 {
			t.Errorf("%s: executed %d slots, %d in the log (%d transactions decided)", topo.DCs[dc], r.CommitIndex(), len(r.log), *decided)
		}
	}
}
