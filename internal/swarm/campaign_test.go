package swarm

import (
	"context"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	_ "github.com/meridian-kv/meridian/protocols/all" // the tests name protocols
	"github.com/meridian-kv/meridian/sim"
)

// TestOverridesApply: parameters are added without touching the drawn run's map, clients and
// duration are replaced, and a shorter run keeps only the faults over by 3/4 of it.
func TestOverridesApply(t *testing.T) {
	drawn := Draw("helios-1", 1)
	drawn.Faults = []sim.Fault{{Kind: sim.Outage, DC: "A", StartUs: 0, EndUs: 700_000}, {Kind: sim.Outage, DC: "A", StartUs: 0, EndUs: 800_000}}
	before := len(drawn.Params)
	got := Overrides{Params: protocol.Params{"x": "1"}, ClientsPerDC: 1, DurationUs: 1_000_000}.Apply(drawn)
	switch {
	case got.Params["x"] != "1" || len(drawn.Params) != before:
		t.Errorf("params %v (drawn %v)", got.Params, drawn.Params)
	case got.ClientsPerDC != 1 || got.DurationUs != 1_000_000:
		t.Errorf("clients %d, duration %d", got.ClientsPerDC, got.DurationUs)
	case len(got.Faults) != 1 || got.Faults[0].EndUs != 700_000 || len(drawn.Faults) != 2:
		t.Errorf("faults %v (drawn %v)", got.Faults, drawn.Faults)
	}
	if flags := (Overrides{Params: protocol.Params{"b": "2", "a": "1"}, ClientsPerDC: 2, DurationUs: 1_500_000}).Flags(); flags != "--set a=1 --set b=2 --clients-per-dc 2 --duration 1.5s" {
		t.Errorf("flags %q", flags)
	}
}

// TestCampaignStopsAtTheLowestFailure: with a broken protocol a campaign stops handing out seeds
// after a failure (one worker: a failing run waits out the end-of-run convergence, so a second
// worker could finish every other seed first) and reports failures by seed; with two workers
// and KeepGoing it runs them all.
func TestCampaignStopsAtTheLowestFailure(t *testing.T) {
	broken := Overrides{Params: protocol.Params{"unsafe_commit_early": "20ms"}}
	c := Campaign{Protocol: "helios-1", From: 1, Seeds: 30, Parallel: 1, Overrides: broken}
	sum := c.Run(context.Background())
	if len(sum.Failures) == 0 || sum.Seeds == 30 {
		t.Fatalf("%d failures over %d seeds; want a stop after the first", len(sum.Failures), sum.Seeds)
	}
	for i := 1; i < len(sum.Failures); i++ {
		if sum.Failures[i].Seed < sum.Failures[i-1].Seed {
			t.Fatalf("failures out of order: %v", sum.Failures)
		}
	}
	c.Seeds, c.Parallel, c.KeepGoing = 8, 2, true
	if sum := c.Run(context.Background()); sum.Seeds != 8 {
		t.Fatalf("KeepGoing ran %d of 8 seeds", sum.Seeds)
	}
}
