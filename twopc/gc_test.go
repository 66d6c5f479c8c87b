package twopc

import (
	"testing"

	"github.com/meridian-kv/meridian/bench"
	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// retained counts the per-transaction records and log entries a replica holds.
func (r *Replica) retained() int {
	return len(r.reads) + len(r.commits) + len(r.doomed) + len(r.orphans) + len(r.slots) + len(r.co.txns)
}

// TestMemoryStaysBounded runs two closed-loop clients per datacenter for 60 virtual seconds:
// with gc_after = 1s the coordinator's transaction records and log stay at what about a second
// decides, however long the run; with gc_after = 1h (nothing collected within the run) its
// transaction records grow with the run.
func TestMemoryStaysBounded(t *testing.T) {
	early, late, decided := runForRecords(t, "1s")
	if late > early*3/2 || late*10 > decided {
		t.Errorf("gc_after 1s: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", early, late, decided)
	}
	early, late, decided = runForRecords(t, "1h")
	if late < early*3/2 || late*2 < decided {
		t.Errorf("gc_after 1h: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", early, late, decided)
	}
}

// runForRecords runs the workload with the given gc_after and returns the largest number of
// records held by a replica in the first and in the last 30 s, and how many transactions were
// decided.
func runForRecords(t *testing.T, gcAfter string) (early, late, decided int) {
	t.Helper()
	topo, _ := topology.Preset("table4.1")
	s, err := sim.New(sim.Config{Topology: topo, Factory: New, Params: protocol.Params{ParamGCAfter: gcAfter}, Seed: 7, Jitter: 1})
	if err != nil {
		t.Fatal(err)
	}
	clients := topo.N() * 2
	decidedSoFar := swarm.StartLoad(t, s, topo.N(), 2, 200)
	for sec := int64(5); sec <= 60; sec += 5 {
		s.RunUntil(sec * 1_000_000)
		for dc := range topo.N() {
			r := s.Replica(protocol.NodeID(dc)).(*Replica)
			if sec <= 30 {
				early = max(early, r.retained())
			} else {
				late = max(late, r.retained())
			}
			if len(r.co.forgot) > clients {
				t.Fatalf("%s: %d watermarks for %d clients", topo.DCs[dc], len(r.co.forgot), clients)
			}
		}
	}
	decided = *decidedSoFar
	t.Logf("gc_after %s: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", gcAfter, early, late, decided)
	return early, late, decided
}

// TestPropertySafetyWithEagerGC reruns swarm seeds with gc_after = 50ms, below the chaotic
// networks' reordering delays, so late and duplicated requests meet forgotten transactions:
// the checker must find no anomaly and every transaction must finish.
func TestPropertySafetyWithEagerGC(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 10
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		opts := swarm.Options("2pc-paxos", seed)
		opts.Params = protocol.Params{ParamGCAfter: "50ms"}
		res, err := bench.Run(opts, "2pc-paxos")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !res.Checker.OK || res.Unfinished > 0 {
			t.Fatalf("seed %d: %s; %d unfinished\nparameters: %s", seed, res.Checker.Summary(), res.Unfinished, res.Replay)
		}
	}
}
