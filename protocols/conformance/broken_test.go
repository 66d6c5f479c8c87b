package conformance

import (
	"bytes"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	_ "github.com/meridian-kv/meridian/protocols/all" // the tests name protocols
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// TestCheckerCatchesBrokenHelios proves the checker can fail: Helios-0 with offsets that violate
// Rule 1 (all target latencies 0, so every sum is −RTT; only the unsafe test switch allows it)
// must be caught under contention on most seeds.
func TestCheckerCatchesBrokenHelios(t *testing.T) {
	const seeds = 20
	caught := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		opts := bench.Defaults()
		opts.Topology = mustPreset("table4.1")
		opts.Seed = seed
		opts.ClientsPerDC = 2
		opts.Workload = workload.TYCSB{Keys: 20, Distribution: workload.DistUniform, OpsPerTxn: 3, ReadRatio: 0.5}
		opts.DurationUs, opts.WarmupUs = 2_000_000, 0
		opts.Params = protocol.Params{"latency_ms": "0,0,0", "unsafe_skip_rule1": "true"}
		res, err := bench.Run(opts, "helios-0")
		if err != nil {
			t.Fatal(err)
		}
		if !res.Checker.OK {
			caught++
			if caught == 1 {
				t.Logf("seed %d: %s", seed, res.Checker.Summary())
			}
		}
	}
	if caught < seeds*3/4 {
		t.Fatalf("checker caught the Rule-1-violating Helios on %d of %d seeds, want most", caught, seeds)
	}
	t.Logf("caught on %d of %d seeds", caught, seeds)
}

// TestSimulationIsDeterministic runs the same faulty, skewed, jittery configuration twice per
// protocol and requires byte-identical histories and identical counters; a different seed must
// give a different history.
func TestSimulationIsDeterministic(t *testing.T) {
	for _, proto := range []string{"helios-0", "helios-2", "mf", "rc", "2pc-paxos", "paxos-cp"} {
		t.Run(proto, func(t *testing.T) {
			opts := swarm.Options(proto, 7)
			opts.KeepHistory = true
			first, second := run(t, opts, proto), run(t, opts, proto)
			if a, b := jsonl(t, first), jsonl(t, second); !bytes.Equal(a, b) || first.Sim != second.Sim {
				t.Fatalf("two runs of one configuration differ (%d vs %d history bytes, stats %+v vs %+v)", len(a), len(b), first.Sim, second.Sim)
			}
			opts.Seed++
			if other := run(t, opts, proto); bytes.Equal(jsonl(t, first), jsonl(t, other)) {
				t.Fatal("a different seed produced the same history")
			}
		})
	}
}

func jsonl(t *testing.T, res *bench.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := history.WriteJSONL(&buf, res.History); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCheckerCatchesHeliosCommittingEarly proves that a Helios-f whose commit rule is slightly
// off (every knowledge timestamp 10 ms early, which breaks Rule 1 by 20 ms on every pair with
// tight target latencies) fails on the swarm's binding topology, where the knowledge condition
// and not the acknowledgements decides when a transaction commits; the correct protocol passes
// the same runs.
func TestCheckerCatchesHeliosCommittingEarly(t *testing.T) {
	for _, proto := range []string{"helios-1", "helios-2"} {
		t.Run(proto, func(t *testing.T) {
			swarm.CatchesBroken(t, proto, 10, 8, func(seed uint64) bench.Options {
				opts := bench.Defaults()
				opts.Topology = swarm.BindingTopology()
				opts.Seed = seed
				opts.ClientsPerDC = 4
				w := opts.Workload.(workload.TYCSB)
				w.Keys = 400 // contended, but not so much that 160 ms windows abort everything
				opts.Workload = w
				opts.DurationUs, opts.WarmupUs = 3_000_000, 0
				// L_A + L_B = 160 ms = RTT across the clusters: Rule 1 holds with no slack.
				opts.Params = protocol.Params{"latency_ms": "100,100,100,60,60,60"}
				return opts
			}, protocol.Params{"unsafe_commit_early": "10ms"})
		})
	}
}
