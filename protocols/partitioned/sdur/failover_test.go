package sdur_test

import (
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// TestLeaderFailover crashes partition 1's preferred server (its Paxos leader, in use-1) from 1 s
// to 4 s of a WAN 1 run. Global transactions of the EU clients need partition 1's broadcast, so
// they keep committing during the crash only if another replica takes the leadership over (spec
// §3.7: ballot takeover); afterwards every transaction finishes and the checker finds nothing.
func TestLeaderFailover(t *testing.T) {
	opts := bench.MicroDefaults()
	opts.ClientsPerDC, opts.KeepHistory = 4, true
	opts.DurationUs, opts.WarmupUs, opts.CooldownUs = 6_000_000, 0, 0
	opts.Workload = workload.Micro{ItemsPerPartition: 1000, GlobalFraction: 0.5, ValueBytes: 4}
	opts.Faults = []sim.Fault{{Kind: sim.NodeCrash, Node: 3, StartUs: 1_000_000, EndUs: 4_000_000}} // p1's preferred, use-1
	for _, proto := range []string{"sdur", "sdur-votebcast"} {
		res, err := bench.Run(opts, proto)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Problem(); err != nil || res.Unfinished > 0 {
			t.Fatalf("%s: %v, %d unfinished", proto, err, res.Unfinished)
		}
		during := 0
		for _, h := range res.History.Txns {
			global := len(h.Writes) == 2 && !strings.HasPrefix(h.Writes[1], "p0/")
			if h.DC == "eu-1" && global && h.Status == txn.Committed && h.StartUs >= 2_500_000 && h.EndUs < 4_000_000 {
				during++
			}
		}
		if during == 0 {
			t.Fatalf("%s: no global transaction of EU committed while partition 1's leader was down", proto)
		}
		t.Logf("%s: %d EU globals committed between 2.5 s and 4 s, the leader down", proto, during)
	}
}
