package repro

import "testing"

// TestChariotsExperimentsRun runs every log experiment at chariotsTiny end to end: each is
// registered, every run passes its checks, and the reports are well formed with their plots.
// It proves the machinery, not the verdicts.
func TestChariotsExperimentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 20 short simulations")
	}
	dir := t.TempDir()
	for name, run := range map[string]func(Env, chariotsScale) (*Report, error){
		"chariots-f1": runChariotsF1, "chariots-f2": runChariotsF2, "chariots-t72": runChariotsT72,
		"chariots-t73": runChariotsT73, "chariots-t74": runChariotsT74, "chariots-t75": runChariotsT75,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := run(Env{Seed: 1}, chariotsTiny)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, dir, name, r)
			for _, c := range r.Claims {
				t.Logf("%s | %s | %s | %s", c.Claim, c.Paper, c.Ours, c.Verdict)
			}
		})
	}
}
