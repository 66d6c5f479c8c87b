package logsim

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// TestBatcherCrashFailover crashes the first of two batchers of the first datacenter in the
// middle of the appends until well after them: its clients' unanswered appends go again, with
// their append numbers, to the other batcher (flstore.Client sends a retry to the next node),
// and when the crashed batcher resumes its held copies reach the filter, which drops them. No
// answered append is lost or logged twice (the run's checks: CH-I3 and every answer at its
// position in every log), and the datacenter's clients keep appending while the batcher is down.
func TestBatcherCrashFailover(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	topo, _ = topology.Subset(topo, topo.DCs[:2])
	params := protocol.Params{"batchers": "2", "b": "20"}
	cfg, err := chariots.ParseConfig(topo.N(), params, 40)
	if err != nil {
		t.Fatal(err)
	}
	victim := cfg.Layout.Active(0, flstore.Batcher)[0]
	o := Options{Topology: topo, Seed: 3, Jitter: 1, ClientsPerDC: 4, DurationUs: 400_000, ThinkUs: 2000, RetryUs: 20_000,
		BodyBytes: 16, SettleUs: 5_000_000, CheckEveryUs: 10_000, Params: params,
		Faults: []sim.Fault{{Kind: sim.NodeCrash, Node: victim, StartUs: 100_000, EndUs: 1_000_000}}}
	res, err := Run(o)
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	// The first datacenter's clients append at either batcher: without failover, those at the
	// victim would stop for the 300 ms of appends left after the crash.
	perDC := map[int]int{}
	for _, r := range res.Snapshot.Logs[0] {
		perDC[r.Host]++
	}
	t.Logf("%d appends (%d retries), first datacenter's log: %v records per host", res.Appends, res.Retries, perDC)
	if res.Retries == 0 {
		t.Fatal("no append was sent again: the crash tested nothing")
	}
	if perDC[0] < perDC[1]*3/4 {
		t.Fatalf("the first datacenter logged %d of its own records and %d of the second's: its clients stalled", perDC[0], perDC[1])
	}
}
