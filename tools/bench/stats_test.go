package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/workload"
)

// TestLatencyCDF checks that the sampled distribution is monotone, runs from the smallest to
// the largest latency, agrees with the median, and is empty where nothing was measured.
func TestLatencyCDF(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	c := newCollector(make([]float64, topo.N()), 0, 10_000_000, false, 0)
	for i := 1; i <= 1000; i++ { // 1..1000 ms at DC 0
		c.add(0, 0, 1, workload.Outcome{Status: txn.Committed, LatencyUs: int64(i) * 1000, Ops: 5})
	}
	dcs := c.summarise(topo)
	cdf := dcs[0].LatencyCDF
	if len(cdf) < 40 || len(cdf) > 60 {
		t.Fatalf("%d points, want about 50", len(cdf))
	}
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Ms < cdf[i-1].Ms || cdf[i].Fraction <= cdf[i-1].Fraction {
			t.Fatalf("not monotone at %d: %+v then %+v", i, cdf[i-1], cdf[i])
		}
	}
	first, last := cdf[0], cdf[len(cdf)-1]
	if math.Abs(first.Ms-1) > 0.01 || first.Fraction != 0 || math.Abs(last.Ms-1000) > 1 || last.Fraction != 1 {
		t.Errorf("CDF runs from %+v to %+v, want from 1 ms at 0 to 1000 ms at 1", first, last)
	}
	for _, p := range cdf {
		if p.Fraction == 0.5 && p.Ms != dcs[0].Latency.P50 {
			t.Errorf("CDF at 0.5 is %.3f ms, the median %.3f ms", p.Ms, dcs[0].Latency.P50)
		}
	}
	if len(dcs[1].LatencyCDF) != 0 {
		t.Errorf("a DC without measurements has a CDF: %+v", dcs[1].LatencyCDF)
	}
}

// TestWarnings: a run that commits almost nothing, or leaves transactions unfinished, says so.
func TestWarnings(t *testing.T) {
	low := &Result{Checker: checker.Report{OK: true, Committed: 23, Aborted: 302_899}}
	if w := low.Warnings(); len(w) != 1 || !strings.Contains(w[0], "only 23 of 302922") {
		t.Errorf("23 of 302,922 committed: %q", w)
	}
	fine := &Result{Checker: checker.Report{OK: true, Committed: 500, Aborted: 500}, Unfinished: 2}
	if w := fine.Warnings(); len(w) != 1 || !strings.Contains(w[0], "2 transactions never finished") {
		t.Errorf("half committed, 2 unfinished: %q", w)
	}
	if w := (&Result{}).Warnings(); len(w) != 1 || !strings.Contains(w[0], "nothing to check") {
		t.Errorf("nothing decided: %q", w)
	}
}
