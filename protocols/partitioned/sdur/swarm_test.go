package sdur_test

import (
	"bytes"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/verify/history"
)

// TestSwarm runs every S-DUR variant over many random seeds (swarm: the WAN 1 and WAN 2
// deployments and spread placements, contention, global and snapshot read-only transactions,
// leader and node crashes, cut links, datacenter partitions, slow links, lossy and reordering
// networks) and requires the checker to find no anomaly and every transaction to finish once the
// faults end.
func TestSwarm(t *testing.T) {
	for _, proto := range []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"} {
		t.Run(proto, func(t *testing.T) {
			swarm.Run(t, proto, "go test ./protocols/partitioned/sdur -run 'TestSwarm/"+proto+"$'")
		})
	}
}

// TestSimulationIsDeterministic runs one faulty swarm configuration of every variant twice and
// requires byte-identical histories and counters, and a different history for another seed.
func TestSimulationIsDeterministic(t *testing.T) {
	for _, proto := range []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"} {
		opts := swarm.Options(proto, 7)
		opts.KeepHistory = true
		runs := make([][]byte, 3)
		var stats [3]sim.Stats
		for i := range runs {
			if i == 2 {
				opts.Seed++
			}
			res, err := bench.Run(opts, proto)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := history.WriteJSONL(&b, res.History); err != nil {
				t.Fatal(err)
			}
			runs[i], stats[i] = b.Bytes(), res.Sim
		}
		if !bytes.Equal(runs[0], runs[1]) || stats[0] != stats[1] {
			t.Fatalf("%s: two runs of one configuration differ", proto)
		}
		if bytes.Equal(runs[0], runs[2]) {
			t.Fatalf("%s: a different seed produced the same history", proto)
		}
	}
}

// TestThresholdCampaignSeeds replays the 10,000-seed campaign's failing sdur-threshold seeds
// (616 and 4579 shrunk to one client per datacenter and 375 ms, 803 whole): partition 0's
// snapshot decisions, every 20 ms, held THRESHOLD's no-op tick off, so a global whose votes were
// all in waited forever for K more deliveries (lost commits at r0, an unfinished transaction).
func TestThresholdCampaignSeeds(t *testing.T) {
	shrunk := swarm.Overrides{ClientsPerDC: 1, DurationUs: 375_000}
	for _, tc := range []struct {
		seed uint64
		o    swarm.Overrides
	}{{616, shrunk}, {4579, shrunk}, {803, swarm.Overrides{}}} {
		if _, err := swarm.Check("sdur-threshold", tc.o.Apply(swarm.Draw("sdur-threshold", tc.seed))); err != nil {
			t.Errorf("seed %d %s: %v", tc.seed, tc.o.Flags(), err)
		}
	}
}
