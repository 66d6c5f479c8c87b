package repro

import (
	"slices"
	"testing"
)

// tccRunners are the FastCCS experiments at a chosen scale.
var tccRunners = map[string]func(Env, tccScale) (*Report, error){
	"tcc-e1": runTCCE1, "tcc-e2": runTCCE2, "tcc-e3": runTCCE3, "tcc-e4": runTCCE4, "tcc-e5": runTCCE5,
	"tcc-e6": runTCCE6, "tcc-e7": runTCCE7, "tcc-e8": runTCCE8, "tcc-e9": runTCCE9, "tcc-e10": runTCCE10,
}

// TestTCCExperimentsRun runs every FastCCS experiment at tccTiny end to end: each is
// registered, measures every system without an error, sets claims with verdicts, and its series
// can be written as CSV, PNG and HTML. It proves the machinery, not the verdicts (a few hundred
// transactions per point decide nothing), except those that hold by construction: EC and Wren
// take exactly one and two rounds.
func TestTCCExperimentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 300 short simulations")
	}
	dir := t.TempDir()
	for name, run := range tccRunners {
		t.Run(name, func(t *testing.T) {
			r, err := run(Env{Seed: 1}, tccTiny)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, dir, name, r)
			if name == "tcc-e10" {
				for _, c := range r.Claims[:2] { // EC one round, Wren two
					if c.Verdict != Matches {
						t.Errorf("%s: %s: %s", c.Claim, c.Ours, c.Verdict)
					}
				}
			}
		})
	}
}

// TestTCCFig48Shared: E9 and E10 are measured by the same runs, once per seed and scale.
func TestTCCFig48Shared(t *testing.T) {
	sc := tccScale{durationUs: 8_000, warmupUs: 2_000, maxPartitions: 16}
	a, err := tccFig48Sweep(Env{Seed: 3}, sc)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tccFig48Sweep(Env{Seed: 3}, sc)
	if a != b {
		t.Error("the second experiment ran Fig. 4.8's simulations again")
	}
	if !slices.Equal(a.xs, []float64{8, 16}) {
		t.Errorf("partitions %v, want [8 16]", a.xs)
	}
	if c, _ := tccFig48Sweep(Env{Seed: 4}, sc); c == a {
		t.Error("another seed reused the runs of seed 3")
	}
}

func TestTCCDoublings(t *testing.T) {
	if got := tccDoublings(8, 1024, tccScale{maxPartitions: 64}); !slices.Equal(got, []float64{8, 16, 32, 64}) {
		t.Errorf("tccDoublings(8, 1024) capped at 64 = %v", got)
	}
	if got := tccDoublings(1, 64, tccFull); len(got) != 7 || got[6] != 64 {
		t.Errorf("tccDoublings(1, 64) = %v", got)
	}
}
