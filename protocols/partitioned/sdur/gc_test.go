package sdur_test

import (
	"os"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/partitioned/sdur"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// probed holds the replicas of the last run of "sdur-gc-probe": S-DUR, its factory noting
// every replica it builds, so that a test can look at their records after a run.
var probed []*sdur.Replica

func init() {
	e, err := registry.Lookup("sdur")
	if err != nil {
		panic(err)
	}
	inner := e.New
	e.New = func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		if cfg.Self == 0 {
			probed = nil
		}
		r, err := inner(cfg, env)
		if err == nil {
			probed = append(probed, r.(*sdur.Replica))
		}
		return r, err
	}
	registry.Register("sdur-gc-probe", e)
}

// footprintAfter runs the micro workload (10% globals, 2 clients per home datacenter, WAN 1)
// for durationUs with garbage-collection horizon horizon, checks the run, and returns the
// largest record counts of any replica, and the committed transactions.
func footprintAfter(t *testing.T, durationUs int64, horizon string) (sdur.Footprint, int) {
	t.Helper()
	opts := bench.MicroDefaults()
	opts.Topology, _ = topology.Preset("sdur-wan1")
	opts.ClientsPerDC, opts.DurationUs, opts.WarmupUs, opts.CooldownUs = 2, durationUs, 0, 0
	opts.Workload = workload.Micro{ItemsPerPartition: 1000, GlobalFraction: 0.1, ReadOnlyFraction: 0.1, ValueBytes: 4}
	opts.Params = protocol.Params{"gc_horizon": horizon, "vote_timeout": "500ms", "snapshot_interval": "200ms"}
	res, err := bench.Run(opts, "sdur-gc-probe")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Problem(); err != nil || res.Unfinished > 0 {
		t.Fatalf("%v, %d unfinished (replay: %s)", err, res.Unfinished, res.Replay)
	}
	var most sdur.Footprint
	for _, r := range probed {
		f := r.Footprint()
		most = sdur.Footprint{Seen: max(most.Seen, f.Seen), Votes: max(most.Votes, f.Votes), Delivered: max(most.Delivered, f.Delivered),
			Slots: max(most.Slots, f.Slots), Log: max(most.Log, f.Log)}
	}
	return most, res.Checker.Committed
}

// TestGarbageCollectionBoundsRecords: over a run four times longer, with four times the
// committed transactions, a replica's records of transactions (seen, votes), of its broadcast's
// deliveries and of its slots stay within twice the short run's (a 2 s horizon, gc.go), and
// the runs pass the checker with nothing unfinished; with a horizon longer than the run (the
// control) the records grow with the run. MERIDIAN_LONG=1 runs ten virtual minutes.
func TestGarbageCollectionBoundsRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("three simulated runs of 10 to 40 virtual seconds")
	}
	long := int64(40_000_000)
	if os.Getenv("MERIDIAN_LONG") != "" {
		long = 600_000_000
	}
	short, shortCommits := footprintAfter(t, 10_000_000, "2s")
	most, commits := footprintAfter(t, long, "2s")
	t.Logf("10 s: %d committed, records %+v; %d s: %d committed, records %+v", shortCommits, short, long/1_000_000, commits, most)
	if commits < 3*shortCommits {
		t.Fatalf("the long run committed %d, the short one %d", commits, shortCommits)
	}
	bound := 2 * max(short.Seen, short.Votes, short.Delivered, short.Slots)
	for name, n := range map[string]int{"seen": most.Seen, "votes": most.Votes, "delivered": most.Delivered, "slots": most.Slots} {
		if n > bound {
			t.Errorf("%s: %d records after %d s, over %d (twice the 10 s run's largest)", name, n, long/1_000_000, bound)
		}
	}
	if control, _ := footprintAfter(t, 40_000_000, "1000s"); control.Seen <= bound {
		t.Errorf("control without collection: %d seen records, within the bound %d", control.Seen, bound)
	}
}

// TestGarbageCollectionUnderFaults runs every variant over swarm seeds (faults in the first
// 2.6 s: crashes, cut links, partitions, loss, reordering) stretched to 10 s with a 4 s
// horizon, so that the replicas forget the records of the faulty period while the run goes
// on: every run must pass the checker with nothing unfinished.
func TestGarbageCollectionUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("20 simulated runs of 10 virtual seconds")
	}
	o := swarm.Overrides{DurationUs: 10_000_000, Params: protocol.Params{"gc_horizon": "4s", "vote_timeout": "1s"}}
	for _, proto := range []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"} {
		for seed := uint64(1); seed <= 5; seed++ {
			if _, err := swarm.Check(proto, o.Apply(swarm.Draw(proto, seed))); err != nil {
				t.Errorf("%s seed %d %s: %v", proto, seed, o.Flags(), err)
			}
		}
	}
}
