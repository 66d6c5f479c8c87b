package conformance

import (
	"math"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// uncontended returns swarm.Uncontended's options with the propagation interval intervalMs.
func uncontended(t testing.TB, topoName string, intervalMs string) bench.Options {
	t.Helper()
	opts := swarm.Uncontended(t, topoName)
	opts.Params = protocol.Params{"interval": intervalMs}
	return opts
}

func run(t *testing.T, opts bench.Options, proto string) *bench.Result {
	t.Helper()
	res, err := bench.Run(opts, proto)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK {
		t.Fatalf("%s: %s\nparameters: %s", proto, res.Checker.Summary(), res.Replay)
	}
	return res
}

// TestHeliosTable4_1Latencies is §7.2.4: on Table 4.1 with exact delays and a send every 1 ms,
// uncontended commit latencies are Helios-0 (5, 25, 15), Helios-1 (20, 30, 20) and Helios-B
// (15, 20, 20), within 1 ms.
func TestHeliosTable4_1Latencies(t *testing.T) {
	for _, tc := range []struct {
		proto string
		want  []float64
	}{
		{"helios-0", []float64{5, 25, 15}},
		{"helios-1", []float64{20, 30, 20}},
		{"helios-b", []float64{15, 20, 20}},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			res := run(t, uncontended(t, "table4.1", "1ms"), tc.proto)
			for i, dc := range res.DCs {
				if dc.Committed == 0 || math.Abs(dc.Latency.Mean-tc.want[i]) > 1 {
					t.Errorf("%s: mean latency %.2f ms over %d commits, want %.0f ± 1", dc.Name, dc.Latency.Mean, dc.Committed, tc.want[i])
				}
			}
		})
	}
}

// TestLatencyAtTheLowerBound is the zero-jitter acceptance check on aws-helios with the
// main job's workload: each datacenter's mean Helios-0 latency lies within 2 ms + one
// propagation interval (10 ms) + the client's local round trip (1 ms) of its lower bound, and
// MF's within the same margin of its model, RTT_max of that datacenter (spec §2.8).
func TestLatencyAtTheLowerBound(t *testing.T) {
	opts := bench.Defaults()
	opts.DurationUs, opts.WarmupUs = 10_000_000, 1_000_000
	opts.Jitter = 0
	const marginMs = 2 + 10 + 1
	t.Run("helios-0", func(t *testing.T) {
		res := run(t, opts, "helios-0")
		for _, dc := range res.DCs {
			if dc.Latency.Mean < dc.LowerBoundMs-1 || dc.Latency.Mean > dc.LowerBoundMs+marginMs {
				t.Errorf("%s: mean %.1f ms, lower bound %.1f ms: outside [bound−1, bound+%d]", dc.Name, dc.Latency.Mean, dc.LowerBoundMs, marginMs)
			}
		}
	})
	t.Run("mf", func(t *testing.T) {
		res := run(t, opts, "mf")
		for i, dc := range res.DCs {
			model := opts.Topology.MaxRTTMs(i)
			if math.Abs(dc.Latency.Mean-model) > marginMs {
				t.Errorf("%s: mean %.1f ms, model RTT_max %.0f ms: off by more than %d", dc.Name, dc.Latency.Mean, model, marginMs)
			}
		}
	})
}

// TestLatencyWithJitter runs the main job's setting with aws-helios's measured standard
// deviations: Helios-0 must beat Helios-B and MF on average and stay within 15 ms of the bound
// at every datacenter (the paper measured 7–54 ms above it on EC2).
func TestLatencyWithJitter(t *testing.T) {
	opts := bench.Defaults()
	opts.DurationUs, opts.WarmupUs = 10_000_000, 1_000_000
	avg := map[string]float64{}
	for _, proto := range []string{"helios-0", "helios-b", "mf"} {
		res := run(t, opts, proto)
		for _, dc := range res.DCs {
			avg[proto] += dc.Latency.Mean / float64(len(res.DCs))
			if proto == "helios-0" && dc.Latency.Mean > dc.LowerBoundMs+15 {
				t.Errorf("helios-0 at %s: mean %.1f ms, more than 15 ms above the bound %.1f", dc.Name, dc.Latency.Mean, dc.LowerBoundMs)
			}
		}
	}
	if avg["helios-0"] >= avg["helios-b"] || avg["helios-0"] >= avg["mf"] {
		t.Errorf("average latency: helios-0 %.1f, helios-b %.1f, mf %.1f; want helios-0 lowest", avg["helios-0"], avg["helios-b"], avg["mf"])
	}
	t.Logf("average latency: helios-0 %.1f ms, helios-b %.1f ms, mf %.1f ms", avg["helios-0"], avg["helios-b"], avg["mf"])
}

func mustPreset(name string) *topology.Topology {
	t, ok := topology.Preset(name)
	if !ok {
		panic("no preset " + name)
	}
	return t
}
