package ogre

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/workload"
)

func init() {
	registry.Register("ogre-unsafe-skip-deps", registry.Entry{Description: "tests only: Ogre whose RoT-Storage ignores read-from and read-before dependencies",
		New: newFactory(true, true), Codec: Codec, Family: registry.ReadWrite, SerializableSnapshotsPerDC: true, Nodes: nodesFor})
}

// TestCheckerCatchesBrokenIngestion is the negative control of the RoT-Storage: an Ogre that
// applies committed transactions before their read-from and read-before dependencies gives
// read-only transactions snapshots that no serial order explains, and the checker finds them
// (cycles through a snapshot) in some of the swarm's seeds — those where slow links,
// partitions or a reordering network deliver a transaction's decision before a decision it
// depends on — while the real Ogre passes the same seeds (TestPropertySafety). It stops at the
// first seed caught (swarm.UntilCaught). Snapshots are checked one datacenter at a time
// (checker.Options.SnapshotsPerDC), so the findings are not the long forks that datacenters' own
// orders allow.
//
// The same holds with the RoT-Storage on unit nodes (rot_units, the swarm's unit faults of
// TestPropertySafetyRoTUnits): the broken units' snapshots are caught too.
func TestCheckerCatchesBrokenIngestion(t *testing.T) {
	for _, units := range []bool{false, true} {
		const seeds = 40
		findings := make([]checker.Report, seeds)
		caught, seed, err := swarm.UntilCaught(swarm.SeedRange(seeds), 1, func(i int, seed uint64) (bool, error) {
			opts := swarm.Options("ogre-unsafe-skip-deps", seed)
			if units {
				unitOptions(seed, &opts)
			}
			res, err := bench.Run(opts, "ogre-unsafe-skip-deps")
			if err != nil || res.Checker.OK {
				return false, err
			}
			findings[i] = res.Checker
			return true, nil
		})
		if err != nil {
			t.Fatalf("units %v, seed %d: %v", units, seed, err)
		}
		if len(caught) == 0 {
			t.Fatalf("units %v: the checker found nothing in %d seeds of an Ogre whose RoT-Storage ignores dependencies", units, seeds)
		}
		f := findings[caught[0]]
		if f.Counts[checker.KindG2]+f.Counts[checker.KindG1c] == 0 {
			t.Errorf("units %v, seed %d: %s; want dependency cycles", units, caught[0]+1, f.Summary())
		}
		t.Logf("units %v: caught in seed %d (the first of seeds 1 to %d; swarm.UntilCaught)", units, caught[0]+1, seeds)
	}
}

// TestLongForkAcrossDatacenters: Ogre's snapshots are serializable within their datacenter, not
// across datacenters (a long fork: two datacenters apply two independent writes in opposite
// orders, and their snapshots see one each). Checked as one history, the main job's setting
// with a read-only client per datacenter shows such G2 cycles; checked per datacenter, it is
// clean. This documents the guarantee (the seed's Lemma 6 orders a snapshot by its own RoT
// unit's timestamps only).
func TestLongForkAcrossDatacenters(t *testing.T) {
	opts := bench.Defaults()
	opts.DurationUs = 10_000_000
	w := opts.Workload.(workload.TYCSB)
	w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 1, 50, 30
	opts.Workload, opts.KeepHistory = w, true
	res, err := bench.Run(opts, "ogre")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK {
		t.Fatalf("per datacenter: %s", res.Checker.Summary())
	}
	global := checker.Check(res.History, checker.Options{Model: checker.Serializable})
	if global.OK || global.Counts[checker.KindG2] == 0 {
		t.Fatalf("one global check: %s; want long-fork G2 cycles through snapshots of two datacenters", global.Summary())
	}
	t.Logf("global check: %s", global.Summary())
}
