package swarm

import (
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// GCRecords reports what a replica holds per transaction: its records, and its per-client
// watermarks (which may grow only with the number of clients).
type GCRecords func(r protocol.Replica) (records, watermarks int)

// CheckRecordsBounded runs two closed-loop clients per datacenter of topo for 60 virtual
// seconds under factory, once with the protocol's gc_after = 1s and once with 1h (nothing
// collected within the run): with 1s every replica's transaction records must stay at what
// about a second decides, however long the run, and the watermarks must not outgrow the
// clients; with 1h the records must grow with the run (so that the check can fail).
func CheckRecordsBounded(t *testing.T, topo *topology.Topology, factory protocol.Factory, records GCRecords) {
	t.Helper()
	SimulationGC(t)
	early, late, decided := runForRecords(t, topo, factory, "1s", records)
	if late > early*3/2 || late*10 > decided {
		t.Errorf("gc_after 1s: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", early, late, decided)
	}
	early, late, decided = runForRecords(t, topo, factory, "1h", records)
	if late < early*3/2 || late*2 < decided {
		t.Errorf("gc_after 1h: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", early, late, decided)
	}
}

// runForRecords runs the load with gc_after and returns the largest number of records a replica
// held in the first and in the last 30 s, and how many transactions were decided.
func runForRecords(t *testing.T, topo *topology.Topology, factory protocol.Factory, gcAfter string, records GCRecords) (early, late, decided int) {
	t.Helper()
	s, err := sim.New(sim.Config{Topology: topo, Factory: factory, Params: protocol.Params{"gc_after": gcAfter}, Seed: 7, Jitter: 1})
	if err != nil {
		t.Fatal(err)
	}
	const clientsPerDC = 2
	decidedSoFar := StartLoad(t, s, topo.N(), clientsPerDC, 200)
	for sec := int64(5); sec <= 60; sec += 5 {
		s.RunUntil(sec * 1_000_000)
		for dc := range topo.N() {
			n, marks := records(s.Replica(protocol.NodeID(dc)))
			if sec <= 30 {
				early = max(early, n)
			} else {
				late = max(late, n)
			}
			if marks > topo.N()*clientsPerDC {
				t.Fatalf("%s: %d watermarks for %d clients", topo.DCs[dc], marks, topo.N()*clientsPerDC)
			}
		}
	}
	t.Logf("gc_after %s: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", gcAfter, early, late, *decidedSoFar)
	return early, late, *decidedSoFar
}

// RunEagerGC reruns 40 swarm seeds of proto (10 with -short) with gc_after = 50ms, below the
// chaotic networks' reordering delays, so that late and duplicated messages meet forgotten
// transactions: the checker must still find no anomaly and every transaction must finish. The
// seeds run on every core (ForSeeds).
func RunEagerGC(t *testing.T, proto string) {
	t.Helper()
	SimulationGC(t)
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	seed, err := ForSeeds(SeedRange(seeds), func(_ int, seed uint64) error {
		opts := Options(proto, seed)
		opts.Params = protocol.Params{"gc_after": "50ms"}
		res, err := bench.Run(opts, proto)
		if err != nil {
			return err
		}
		if !res.Checker.OK || res.Unfinished > 0 {
			return fmt.Errorf("%s; %d unfinished\nparameters: %s", res.Checker.Summary(), res.Unfinished, res.Replay)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
}
