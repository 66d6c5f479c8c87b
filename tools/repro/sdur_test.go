package repro

import "testing"

// sdurRunners are the S-DUR experiments at a chosen scale.
var sdurRunners = map[string]func(Env, sdurScale) (*Report, error){
	"sdur-x0": runSDURX0, "sdur-x1": runSDURX1, "sdur-x2": runSDURX2, "sdur-x3": runSDURX3,
	"sdur-x4": runSDURX4, "sdur-x5": runSDURX5, "sdur-x6": runSDURX6,
}

// TestSDURExperimentsRun runs every S-DUR experiment at sdurTiny end to end: each is registered,
// measures every configuration without an error (every simulated run passes the checker with
// nothing unfinished; X0's loopback servers commit in every phase), sets claims with verdicts,
// and its series can be written as CSV, PNG and HTML. It proves the machinery, not the
// verdicts (one client per datacenter for a second decides nothing), except the one that holds
// by construction at any scale: with no globals, WAN 1's locals commit within 10 ms.
func TestSDURExperimentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 90 short simulations and a loopback cluster")
	}
	dir := t.TempDir()
	for name, run := range sdurRunners {
		t.Run(name, func(t *testing.T) {
			r, err := run(Env{Seed: 1}, sdurTiny)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, dir, name, r)
			if name == "sdur-x1" && r.Claims[0].Verdict != Matches {
				t.Errorf("%s: %s: %s", r.Claims[0].Claim, r.Claims[0].Ours, r.Claims[0].Verdict)
			}
		})
	}
}
