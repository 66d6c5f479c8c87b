package repro

import "testing"

// TestOgreROIsolationRuns runs ogre-ro-isolation at isolationTiny end to end: registered, every
// run passes the checker, three claims with verdicts, series writable.
func TestOgreROIsolationRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four short simulations")
	}
	r, err := runOgreROIsolation(Env{Seed: 1}, isolationTiny)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, t.TempDir(), "ogre-ro-isolation", r)
	if len(r.Claims) != 3 {
		t.Fatalf("%d claims", len(r.Claims))
	}
}
