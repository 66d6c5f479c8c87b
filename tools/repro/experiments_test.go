package repro

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestExperimentsRegistered: every experiment has a name, a title and a runner, List is sorted,
// and Lookup finds each by name.
func TestExperimentsRegistered(t *testing.T) {
	list := List()
	if len(list) == 0 {
		t.Fatal("no experiments registered")
	}
	for i, e := range list {
		if e.Name == "" || strings.TrimSpace(e.Title) == "" || e.Run == nil {
			t.Errorf("experiment %d: name %q, title %q, runner set %v", i, e.Name, e.Title, e.Run != nil)
		}
		if got, ok := Lookup(e.Name); !ok || got.Name != e.Name {
			t.Errorf("Lookup(%q) = %q, %v", e.Name, got.Name, ok)
		}
		if i > 0 && !naturalLess(list[i-1].Name, e.Name) {
			t.Errorf("List is not sorted: %q before %q", list[i-1].Name, e.Name)
		}
	}
	for _, name := range []string{"table4.1", "e3.1", "e3.2", "e3.3", "e3.4", "e3.5", "e3.6", "e3.7", "e4.1", "e4.2", "e4.3", "e4.4"} {
		if _, ok := Lookup(name); !ok {
			t.Errorf("experiment %s is not registered", name)
		}
	}
}

func TestCDFHelpers(t *testing.T) {
	cdf := []workload.CDFPoint{{Ms: 10, Fraction: 0}, {Ms: 20, Fraction: 0.5}, {Ms: 40, Fraction: 1}}
	for _, tc := range []struct{ q, ms float64 }{{0, 10}, {0.25, 15}, {0.5, 20}, {0.75, 30}, {1, 40}} {
		if got := cdfQuantile(cdf, tc.q); math.Abs(got-tc.ms) > 1e-9 {
			t.Errorf("cdfQuantile(%g) = %g, want %g", tc.q, got, tc.ms)
		}
		if got := cdfAt(cdf, tc.ms); math.Abs(got-tc.q) > 1e-9 {
			t.Errorf("cdfAt(%g) = %g, want %g", tc.ms, got, tc.q)
		}
	}
	if cdfAt(cdf, 5) != 0 || cdfAt(cdf, 50) != 1 {
		t.Error("cdfAt outside the range")
	}
}

// TestEst1Assignment: Est-1 gives 2 pairs each +25, +75, −25, −75 and 0, seeded, clamped at 0.
func TestEst1Assignment(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	est, desc := est1(topo, 1)
	again, _ := est1(topo, 1)
	other, _ := est1(topo, 2)
	if !slices.Equal(est, again) || slices.Equal(est, other) {
		t.Errorf("assignment not a function of the seed: %v %v %v", est, again, other)
	}
	var errs []float64
	k := 0
	for a := range topo.N() {
		for b := a + 1; b < topo.N(); b++ {
			if est[k] < 0 {
				t.Errorf("estimate %d is negative: %g", k, est[k])
			}
			errs = append(errs, est[k]-topo.RTTMs[a][b])
			k++
		}
	}
	slices.Sort(errs)
	if want := []float64{-75, -75, -25, -25, 0, 0, 25, 25, 75, 75}; !slices.Equal(errs, want) {
		t.Errorf("errors %v, want %v (seed 1 puts no negative error on a short pair)", errs, want)
	}
	// Clamping: with every RTT 10 ms, the four pairs given −25 or −75 estimate 0.
	flat := &topology.Topology{Name: "flat", DCs: topo.DCs, RTTMs: make([][]float64, topo.N())}
	for a := range flat.RTTMs {
		flat.RTTMs[a] = make([]float64, topo.N())
		for b := range flat.RTTMs[a] {
			if a != b {
				flat.RTTMs[a][b] = 10
			}
		}
	}
	est, _ = est1(flat, 1)
	slices.Sort(est)
	if want := []float64{0, 0, 0, 0, 10, 10, 35, 35, 85, 85}; !slices.Equal(est, want) {
		t.Errorf("clamped estimates %v, want %v", est, want)
	}
	if !strings.Contains(desc, "V-O") || !strings.Contains(desc, "I-S") {
		t.Errorf("description %q does not name the pairs", desc)
	}
}

func TestListOrdersNamesNaturally(t *testing.T) {
	names := []string{"tcc-e10", "e4.1", "tcc-e2", "e3.10", "e3.2", "table4.1", "tcc-e1"}
	slices.SortFunc(names, func(a, b string) int {
		if naturalLess(a, b) {
			return -1
		}
		if naturalLess(b, a) {
			return 1
		}
		return 0
	})
	want := []string{"e3.2", "e3.10", "e4.1", "table4.1", "tcc-e1", "tcc-e2", "tcc-e10"}
	if !slices.Equal(names, want) {
		t.Fatalf("natural order %v, want %v", names, want)
	}
}

// checkReport fails t unless r is experiment name's report, well formed: its title, claims
// with a figure and a verdict each, series with points, all written as CSV, PNG and HTML under
// dir.
func checkReport(t *testing.T, dir, name string, r *Report) {
	t.Helper()
	e, ok := Lookup(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	if r.Name != name || r.Title != e.Title || len(r.Claims) == 0 || len(r.Series) == 0 {
		t.Fatalf("report %q %q with %d claims and %d series", r.Name, r.Title, len(r.Claims), len(r.Series))
	}
	for _, c := range r.Claims {
		if c.Claim == "" || c.Paper == "" || c.Ours == "" || (c.Verdict != Matches && !strings.HasPrefix(c.Verdict, Differs)) {
			t.Errorf("incomplete claim %+v", c)
		}
		if strings.Contains(c.Ours, "NaN") || strings.Contains(c.Ours, "Inf") {
			t.Errorf("claim %q: ours %q", c.Claim, c.Ours)
		}
	}
	for _, s := range r.Series {
		for _, l := range s.Lines {
			if len(l.Y) == 0 {
				t.Errorf("series %s: line %q is empty", s.Name, l.Label)
			}
		}
	}
	if err := WriteExperiment(dir, r); err != nil {
		t.Fatal(err)
	}
}
