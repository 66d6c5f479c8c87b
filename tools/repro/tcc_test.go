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
// transactions per point decide nothing).
func TestTCCExperimentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 300 short simulations")
	}
	dir := t.TempDir()
	for name, run := range tccRunners {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // independent simulations: use every core go test gives the package
			r, err := run(Env{Seed: 1}, tccTiny)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, dir, name, r)
		})
	}
}

// TestTCCRoundsByConstruction: every EC ROT takes one round and every Wren ROT two, at the
// defaults and at 32 partitions. The thesis states both (§4.6, Fig. 4.8b), but they hold by
// construction, so they are tested here rather than claimed by tcc-e1 and tcc-e10.
func TestTCCRoundsByConstruction(t *testing.T) {
	for _, partitions := range []float64{8, 32} {
		o := tccOptions(Env{Seed: 1}, tccTiny)
		tccFixedWorkload(&o, partitions)
		runs, err := tccRun(Env{}, "rounds", o, []string{"ec", "wren"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]string{"ec": "1", "wren": "2"} {
			if r := runs[p]; r.ROTs == 0 || r.RotRounds[want] != r.ROTs {
				t.Errorf("%d partitions: %s: %d of %d ROTs in %s rounds (%v)", int(partitions), p, r.RotRounds[want], r.ROTs, want, r.RotRounds)
			}
		}
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
