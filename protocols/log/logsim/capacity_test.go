package logsim

import (
	"os"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/topology"
)

// TestCapacityLimitsThroughput: under the calibrated model, one standalone maintainer fed
// above its capacity persists about what one 1 Gb/s interface carries of 512-byte appends,
// and a one-machine-per-stage Chariots pipeline fed by one client machine takes about as much
// at every stage, with every append answered and checked.
func TestCapacityLimitsThroughput(t *testing.T) {
	nic := Calibrated.NICRecordsPerSec(600)
	fl, err := RunFLStore(FLOptions{Maintainers: 1, RatePerSec: 250_000, BodyBytes: 512, DurationUs: 100_000,
		SampleEveryUs: 20_000, SettleUs: 1_000_000, Capacity: &Calibrated, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rate := perSec(fl.Maintainers[0].Records[1:], 20_000)
	t.Logf("standalone: %d appends, %.0f/s persisted after the first period (NIC bound %.0f/s)", fl.Appends, rate, nic)
	if rate < 0.8*nic || rate > 1.1*nic {
		t.Errorf("one maintainer persisted %.0f records/s, want about %.0f", rate, nic)
	}
	topo, _ := topology.Preset("table4.1")
	topo, _ = topology.Subset(topo, topo.DCs[:1])
	o := Options{Topology: topo, Params: protocol.Params{"maintainers": "1"}, Seed: 1, ClientsPerDC: 0, DurationUs: 100_000,
		RetryUs: 10_000_000, BodyBytes: 512, SettleUs: 2_000_000, SampleEveryUs: 20_000, Capacity: &Calibrated,
		MachinesPerDC: 1, MachineRatePerSec: 250_000}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Stages {
		if !s.Spare && s.Role != flstore.Indexer.String() && s.Role != flstore.Sender.String() && s.Role != flstore.Receiver.String() {
			t.Logf("%s %d: %.0f records/s", s.Role, s.Node, perSec(s.Records[1:], 20_000))
		}
	}
	t.Logf("%d appends, end %d µs", res.Appends, res.EndUs)
}

func perSec(rs []uint64, everyUs int64) float64 {
	sum := uint64(0)
	for _, r := range rs {
		sum += r
	}
	return float64(sum) * 1e6 / float64(int64(len(rs))*everyUs)
}

// TestSaturatedRingNoRebuild runs chariots-t75's deployment (two machines per stage, two
// client machines offering more than their interfaces carry) under the calibrated model: the
// ring is saturated, its token late behind records, yet it is not lost, so the only token
// rebuild is the first build (a timeout-based design rebuilt it every second and never
// converged). The client machines' answered appends keep pace with what their interfaces
// carry: answers wait for the head of the log, whose gossip is control plane (Control), not
// queued behind records (behind them, the clients got about half their interface rate).
// MERIDIAN_LONG=1 runs t75's full virtual second.
func TestSaturatedRingNoRebuild(t *testing.T) {
	durationUs := int64(60_000)
	if os.Getenv("MERIDIAN_LONG") != "" {
		durationUs = 1_000_000
	}
	one := &topology.Topology{Name: "one-dc", DCs: []string{"DC"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	o := Options{Topology: one, Seed: 1, DurationUs: durationUs, RetryUs: 60_000_000, BodyBytes: 512, SettleUs: 60_000_000,
		SampleEveryUs: 10_000, Capacity: &Calibrated, MachinesPerDC: 2, MachineRatePerSec: 250_000,
		Params: protocol.Params{"batchers": "2", "filters": "2", "queues": "2", "maintainers": "2"}}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.TokenRebuilds != 1 {
		t.Errorf("%d token rebuilds in a saturated ring, want only the first build", res.TokenRebuilds)
	}
	nic := Calibrated.NICRecordsPerSec(600)
	for _, s := range res.Stages {
		if s.Role != "client" {
			continue
		}
		// from the second sampling period to the end of the load
		rate := perSec(s.Records[1:durationUs/o.SampleEveryUs], o.SampleEveryUs)
		t.Logf("client machine %d: %.0f appends/s answered (its interface: %.0f/s)", s.Node, rate, nic)
		if rate < 0.85*nic {
			t.Errorf("client machine %d got %.0f appends/s answered, under 85%% of its interface's %.0f/s", s.Node, rate, nic)
		}
	}
	t.Logf("%d appends, %d token rebuilds, end %d µs", res.Appends, res.TokenRebuilds, res.EndUs)
}
