package sdur_test

import (
	"testing"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestSocialNetwork runs the spec's social network on both deployments with every variant, on
// few users (contention: Follows and Posts conflict, Timelines read what they write), and
// requires a clean checker verdict (Timelines are snapshot read-only transactions), every
// transaction finished and every operation type measured.
func TestSocialNetwork(t *testing.T) {
	for _, topo := range []string{"sdur-wan1", "sdur-wan2"} {
		for _, proto := range []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"} {
			opts := bench.MicroDefaults()
			opts.Topology = mustPreset(t, topo)
			opts.ClientsPerDC = 3
			opts.DurationUs, opts.WarmupUs, opts.CooldownUs = 3_000_000, 500_000, 500_000
			w := workload.DefaultSocial()
			w.UsersPerPartition = 20
			w.TimelineFraction, w.PostFraction = 0.5, 0.25
			opts.Workload = w
			res, err := bench.Run(opts, proto)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Problem(); err != nil || res.Unfinished > 0 {
				t.Fatalf("%s on %s: %v, %d unfinished\nreplay: %s", proto, topo, err, res.Unfinished, res.Replay)
			}
			for name, op := range res.Metrics.(*workload.SocialMetrics).Ops {
				if op.TPS == 0 {
					t.Errorf("%s on %s: no %s measured", proto, topo, name)
				}
			}
		}
	}
}

func mustPreset(t *testing.T, name string) *topology.Topology {
	t.Helper()
	topo, ok := topology.Preset(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	return topo
}
