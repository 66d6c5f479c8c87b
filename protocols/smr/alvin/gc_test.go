package alvin

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// retained counts what a replica holds per transaction: DQueue entries, instances it leads or
// recovers, waiters, collected ids still remembered, and keys in the conflict index.
func (r *Replica) retained() int {
	return len(r.entries) + len(r.leads) + len(r.recs) + len(r.waiters) + len(r.gone) + len(r.readers) + len(r.writers)
}

// TestMetadataStaysBounded is §3.9: under 60 virtual seconds of contended load (two clients per
// datacenter over 200 keys) on aws-helios, with collected ids remembered for 1s, every
// replica's per-transaction state stays at what about a second decides, however long the run;
// with ids remembered for an hour, it grows with the run (so that the check can fail).
func TestMetadataStaysBounded(t *testing.T) {
	bounded := func(forget string) (early, late, decided int) {
		topo, _ := topology.Preset("aws-helios")
		s, err := sim.New(sim.Config{Topology: topo, Factory: newFactory(true), Params: protocol.Params{ParamGCForget: forget}, Seed: 7, Jitter: 1})
		if err != nil {
			t.Fatal(err)
		}
		done := swarm.StartLoad(t, s, topo.N(), 2, 200)
		for sec := int64(5); sec <= 60; sec += 5 {
			s.RunUntil(sec * 1_000_000)
			for dc := range topo.N() {
				n := s.Replica(protocol.NodeID(dc)).(*Replica).retained()
				if sec <= 30 {
					early = max(early, n)
				} else {
					late = max(late, n)
				}
			}
		}
		t.Logf("gc_forget %s: peak of %d records in the first 30s, %d in the last 30s, %d transactions decided", forget, early, late, *done)
		return early, late, *done
	}
	if early, late, decided := bounded("1s"); late > early*3/2 || late*10 > decided {
		t.Errorf("gc_forget 1s: %d records early, %d late, %d decided: not bounded", early, late, decided)
	}
	if early, late, decided := bounded("1h"); late < early*3/2 || late*2 < decided {
		t.Errorf("gc_forget 1h: %d records early, %d late, %d decided: the check cannot fail", early, late, decided)
	}
}
