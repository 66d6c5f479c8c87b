package sdur_test

import (
	"testing"

	_ "github.com/meridian-kv/meridian/protocols/partitioned/sdur"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

func TestSmoke(t *testing.T) {
	topo, _ := topology.Preset("sdur-wan1")
	opts := bench.Defaults()
	opts.Topology = topo
	opts.Partitions = 2
	opts.ClientsPerDC = 4
	opts.IntraDCUs = 150
	opts.DurationUs, opts.WarmupUs = 5_000_000, 1_000_000
	w := workload.DefaultMicro()
	w.ReadOnlyFraction = 0.1
	opts.Workload = w
	for _, p := range []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"} {
		res, err := bench.Run(opts, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s unfinished %d metrics %+v", p, res.Checker.Summary(), res.Unfinished, res.Metrics)
	}
}
