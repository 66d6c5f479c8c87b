package multipaxos

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// zeroLoadLatencyMs is spec §5.1's zero-load latency at each origin o: RTT(o, L) + r^L_{CQ−1},
// the leader's (CQ−1)-th smallest RTT to another datacenter, CQ = ⌊n/2⌋+1 (RTT(L, L) = 0).
func zeroLoadLatencyMs(topo *topology.Topology, p Placement) map[string]float64 {
	l := FailoverOrder(topo, p)[0]
	var rtts []float64
	for dc, v := range topo.RTTMs[l] {
		if dc != l {
			rtts = append(rtts, v)
		}
	}
	slices.Sort(rtts)
	round := rtts[topo.N()/2-1] // r_{CQ-1}, 1-based: CQ-1 = ⌊n/2⌋ others
	want := map[string]float64{}
	for dc, name := range topo.DCs {
		want[name] = topo.RTTMs[dc][l] + round
	}
	return want
}

// TestZeroLoadLatency is spec §6.2 S12 for Multi-Paxos on aws-3, aws-5, aws-7 and alvin-paper-7,
// both placements: one client per datacenter, no conflicts, exact delays and no client hop; each
// origin's mean commit latency must equal RTT(o, L) + r^L_{CQ−1} within 1 ms (the issue asks for
// 2), with batching off. Transactions write and never only read, so that none commits locally.
func TestZeroLoadLatency(t *testing.T) {
	for _, name := range []string{"aws-3", "aws-5", "aws-7", "alvin-paper-7"} {
		for _, v := range []struct {
			proto string
			p     Placement
		}{{"multipaxos-lo", LowestMeanRTT}, {"multipaxos-hi", HighestMeanRTT}} {
			t.Run(name+"/"+v.proto, func(t *testing.T) {
				opts := swarm.Uncontended(t, name)
				w := opts.Workload.(workload.TYCSB)
				w.ReadRatio = 0
				opts.Workload = w
				opts.Params = protocol.Params{batch.ParamWindow: "0"}
				want := zeroLoadLatencyMs(opts.Topology, v.p)
				t.Logf("analytic: %v", want)
				swarm.CheckLatencies(t, opts, v.proto, want)
			})
		}
	}
}

// TestZeroLoadLatencyBatched: with the default batching window W (20 ms on aws-3, 30 ms on
// aws-5) each hop of the commit path waits at most W, so each origin's mean latency lies between
// the unbatched one and 4 W more (2 W at the leader), and above it by at least W.
func TestZeroLoadLatencyBatched(t *testing.T) {
	for _, name := range []string{"aws-3", "aws-5"} {
		opts := swarm.Uncontended(t, name)
		w := opts.Workload.(workload.TYCSB)
		w.ReadRatio = 0
		opts.Workload = w
		windowMs := float64(batch.DefaultWindowMs(opts.Topology.N()))
		want := zeroLoadLatencyMs(opts.Topology, LowestMeanRTT)
		leader := opts.Topology.DCs[FailoverOrder(opts.Topology, LowestMeanRTT)[0]]
		res, err := bench.Run(opts, "multipaxos-lo")
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Problem(); err != nil || res.Unfinished > 0 {
			t.Fatalf("%s: %v, %d unfinished", name, err, res.Unfinished)
		}
		for _, dc := range res.DCs {
			hops := 4.0
			if dc.Name == leader {
				hops = 2
			}
			lo, hi := want[dc.Name]+windowMs, want[dc.Name]+hops*windowMs+1
			t.Logf("%s %s: mean %.2f ms, want in [%.1f, %.1f]", name, dc.Name, dc.Latency.Mean, lo, hi)
			if dc.Committed == 0 || dc.Latency.Mean < lo || dc.Latency.Mean > hi {
				t.Errorf("%s %s: mean %.2f ms over %d commits, want in [%.1f, %.1f]", name, dc.Name, dc.Latency.Mean, dc.Committed, lo, hi)
			}
		}
	}
}
