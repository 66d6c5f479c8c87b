package repro

import (
	"math"
	"testing"

	"github.com/meridian-kv/meridian/topology"
)

// alvinRunners are the ALVIN experiments at a chosen scale.
var alvinRunners = map[string]func(Env, alvinScale) (*Report, error){
	"alvin-e1": runAlvinE1, "alvin-e2": runAlvinE2, "alvin-e3": runAlvinE3, "alvin-e4": runAlvinE4, "alvin-e5": runAlvinE5,
}

// TestAlvinExperimentsRun runs every ALVIN experiment at alvinTiny end to end: each is
// registered, measures every system on every configuration (3 nodes per site included) with
// every run good (checker, TPC-C conditions, Bank's final audit, nothing unfinished), sets
// claims with verdicts, and writes its series as CSV, PNG and HTML. It proves the machinery,
// not the verdicts, except E5's zero-load comparison, which holds by construction: both fast
// paths are one round trip to the same quorum.
func TestAlvinExperimentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 150 short simulations")
	}
	dir := t.TempDir()
	for name, run := range alvinRunners {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // independent simulations: use every core go test gives the package
			r, err := run(Env{Seed: 1}, alvinTiny)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, dir, name, r)
			if name == "alvin-e5" {
				for _, c := range r.Claims {
					if c.Paper == "0 ms" && c.Verdict != Matches {
						t.Errorf("%s: %s: %s", c.Claim, c.Ours, c.Verdict)
					}
				}
			}
		})
	}
}

// TestMeanGap: the spec's own sanity check of E4, r₄ − r₃ averaged over the origins of its
// §7.1 table, is about 33 ms (230/7: VA 40, OR 70, IE 10, SP 10, TK 10, SG 60, SY 30).
func TestMeanGap(t *testing.T) {
	paper, _ := topology.Preset("alvin-paper-7")
	if got := meanGapMs(paper, 4, 3); math.Abs(got-230.0/7) > 1e-9 {
		t.Errorf("mean r4 - r3 = %g ms, want %g", got, 230.0/7)
	}
}

// TestPeakAndLevelOff: the first of equal maxima is the peak, and the level-off is where the run
// of values within 5% of it that ends at the peak begins (e4.2's and ALVIN's curves share both).
func TestPeakAndLevelOff(t *testing.T) {
	for _, tc := range []struct {
		ys             []float64
		peak, levelOff int
	}{
		{[]float64{10, 30, 29, 30}, 1, 1},
		{[]float64{10, 28.6, 30, 20}, 2, 1},
		{[]float64{5}, 0, 0},
		{[]float64{30, 10, 10}, 0, 0},
		{[]float64{10, 20, 60.1, 58, 51.4}, 2, 2}, // alvin-e3's EPaxos: falls after its peak
		{[]float64{10, 29, 30}, 2, 1},
	} {
		at := func(i int) float64 { return tc.ys[i] }
		if got := peakIndex(len(tc.ys), at); got != tc.peak {
			t.Errorf("peakIndex(%v) = %d, want %d", tc.ys, got, tc.peak)
		}
		if got := levelOffIndex(len(tc.ys), at); got != tc.levelOff {
			t.Errorf("levelOffIndex(%v) = %d, want %d", tc.ys, got, tc.levelOff)
		}
	}
}
