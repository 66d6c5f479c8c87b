package rc

import (
	"testing"

	"github.com/meridian-kv/meridian/bench"
	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
)

// retained counts the per-transaction records a replica holds.
func (r *Replica) retained() int {
	return len(r.decided) + len(r.outcomes) + len(r.parts) + len(r.coords) + len(r.doomed)
}

// TestMemoryStaysBounded runs two closed-loop clients per datacenter for 60 virtual seconds:
// with gc_after = 1s every replica's transaction records stay at what about a second decides,
// however long the run, and the watermarks grow only with the number of clients; with
// gc_after = 1h (nothing collected within the run) they grow with the run, as they did before
// garbage collection.
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
// transaction records held by a replica in the first and in the last 30 s, and how many
// transactions were decided.
func runForRecords(t *testing.T, gcAfter string) (early, late, decided int) {
	t.Helper()
	s, err := sim.New(sim.Config{Topology: three(), Factory: New, Params: protocol.Params{ParamGCAfter: gcAfter}, Seed: 7, Jitter: 1})
	if err != nil {
		t.Fatal(err)
	}
	clients := 3 * 2
	decidedSoFar := swarm.StartLoad(t, s, 3, 2, 200)
	for sec := int64(5); sec <= 60; sec += 5 {
		s.RunUntil(sec * 1_000_000)
		for dc := range 3 {
			r := s.Replica(protocol.NodeID(dc)).(*Replica)
			if sec <= 30 {
				early = max(early, r.retained())
			} else {
				late = max(late, r.retained())
			}
			if len(r.forgot) > clients {
				t.Fatalf("replica %d: %d watermarks for %d clients", dc, len(r.forgot), clients)
			}
		}
	}
	decided = *decidedSoFar
	t.Logf("gc_after %s: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", gcAfter, early, late, decided)
	return early, late, decided
}

// TestPropertySafetyWithEagerGC reruns swarm seeds with gc_after = 50ms, far below the chaotic
// networks' reordering delays (up to 5×RTT), so late and duplicated ReadLock, Accept and
// Decision messages meet forgotten transactions: the checker must still find no anomaly, the
// replicas must converge and every transaction must be decided.
func TestPropertySafetyWithEagerGC(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 10
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		opts := swarm.Options("rc", seed)
		opts.Params = protocol.Params{ParamGCAfter: "50ms"}
		res, err := bench.Run(opts, "rc")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !res.Checker.OK || res.Unfinished > 0 {
			t.Fatalf("seed %d: %s; %d unfinished\nparameters: %s", seed, res.Checker.Summary(), res.Unfinished, res.Replay)
		}
	}
}
