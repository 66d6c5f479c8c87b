package paxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
)

// TestMemoryStaysBounded runs two closed-loop clients per datacenter of table4.1 for 120 virtual
// seconds under both baselines: far more positions are chosen than keptPositions, yet every
// replica's log stays within keptPositions plus what the Sync period leaves unreported, its
// outcome table holds exactly the transactions of that log, and every replica has dropped a
// prefix.
func TestMemoryStaysBounded(t *testing.T) {
	for _, combined := range []bool{false, true} {
		topo := mustPreset(t, "table4.1")
		s, err := sim.New(sim.Config{Topology: topo, Factory: New(combined), Seed: 7, Jitter: 1})
		if err != nil {
			t.Fatal(err)
		}
		swarm.StartLoad(t, s, topo.N(), 2, 1000)
		peak := 0
		for sec := int64(10); sec <= 120; sec += 10 {
			s.RunUntil(sec * 1_000_000)
			for dc := range topo.N() {
				r := s.Replica(protocol.NodeID(dc)).(*Replica)
				peak = max(peak, len(r.log))
				inLog := 0
				for _, v := range r.log {
					inLog += len(v)
				}
				if len(r.outcome) != inLog {
					t.Fatalf("combined %v, replica %d at %ds: %d outcomes for %d transactions in the log", combined, dc, sec, len(r.outcome), inLog)
				}
			}
		}
		for dc := range topo.N() {
			r := s.Replica(protocol.NodeID(dc)).(*Replica)
			if r.base == 0 || r.applied() < 4*keptPositions {
				t.Errorf("combined %v, replica %d: %d positions applied, %d dropped: the test exercises nothing", combined, dc, r.applied(), r.base)
			}
		}
		if peak > keptPositions+64 {
			t.Errorf("combined %v: a replica held %d positions, want at most %d", combined, peak, keptPositions+64)
		}
		t.Logf("combined %v: %d positions applied, at most %d held", combined, s.Replica(0).(*Replica).applied(), peak)
	}
}
