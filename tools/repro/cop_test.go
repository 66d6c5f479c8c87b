package repro

import (
	"strings"
	"testing"
)

// copTiny runs every COP experiment in about a second: it proves the machinery, not the
// verdicts. Two repeats, so that X3's rounds and X4's pairs run as at CI scale.
var copTiny = copScale{samples: 1_000, epochs: 2, repeats: 2}

// TestCOPExperimentsRun runs cop-x1 … cop-x5 at copTiny end to end: each is registered,
// measures every scheme without an error, sets claims with verdicts, reports the thread counts
// above this machine's cores as not measurable rather than measuring them, and its series can
// be written as CSV, PNG and HTML.
func TestCOPExperimentsRun(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		run  func(Env, copScale) (*Report, error)
	}{{"cop-x1", runCOPX1}, {"cop-x2", runCOPX2}, {"cop-x3", runCOPX3}, {"cop-x4", runCOPX4}, {"cop-x5", runCOPX5}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.run(Env{Seed: 1}, copTiny)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, dir, tc.name, r)
			for _, c := range r.Claims {
				if strings.Contains(c.Ours, "not measurable") != strings.HasSuffix(c.Verdict, "not measurable here") {
					t.Errorf("%s: ours %q, verdict %q", c.Claim, c.Ours, c.Verdict)
				}
			}
		})
	}
}

// TestCOPWorkersWithinCores: only thread counts with a core each are measured.
func TestCOPWorkersWithinCores(t *testing.T) {
	ws := copWorkers()
	if len(ws) == 0 || ws[0] != 1 {
		t.Fatalf("workers %v: want 1 first", ws)
	}
	for _, w := range ws {
		if w > copCores() {
			t.Errorf("%d workers measured on %d cores", w, copCores())
		}
	}
	if copCores() < 8 {
		r, err := runCOPX2(Env{Seed: 1}, copTiny)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range r.Claims {
			if strings.Contains(c.Claim, "8 threads") && strings.HasSuffix(c.Verdict, "not measurable here") {
				n++
			}
		}
		if n < 5 {
			t.Errorf("%d of cop-x2's 8-thread claims reported not measurable on %d cores, want them all", n, copCores())
		}
	}
}
