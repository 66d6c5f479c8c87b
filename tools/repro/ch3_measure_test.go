//go:build calibrate

package repro

// The measurements behind e3.3's and e3.6's differences in docs/REPRODUCTION.md (issue 17).
// TestMeasureE33: e3.3's setting (ch3Options, 8 seeds pooled) at 1,000, 2,500 and 5,000 keys,
// with one parameter changed at a time (one subtest each), the aborts split by reason and DC,
// and the latency of committed and aborted transactions apart. TestMeasureE36Others: e3.6's
// other DCs with and without the aborts in their latency, with clients paced at e3.6's 2
// transactions/s and at 0.5 (slots longer than any commit), beside the latency model's figures. Not part of the normal test run
// (minutes of CPU); run them with
//
//	go test -tags calibrate -run 'TestMeasureE33|TestMeasureE36Others' -v -timeout 60m ./tools/repro/

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// e33Variant is e3.3's setting with one parameter changed.
type e33Variant struct {
	name    string
	aligned bool
	change  func(*bench.Options)
}

// e33Point is one variant at one database size: the pooled runs with aborts in the latency
// (Chapter 3's convention, as e3.3 measures) and without.
type e33Point struct {
	all, committed         protoResult
	perSeed, perSeedCommit []*bench.Result
}

// abortedMeanMs returns the mean latency of the aborted transactions of runs withAborts,
// whose seeds' runs without aborts in the latency are committedOnly (the same simulations).
func abortedMeanMs(withAborts, committedOnly []*bench.Result) float64 {
	sumMs, n := 0.0, 0
	for i, r := range withAborts {
		for j, d := range r.DCs {
			c := committedOnly[i].DCs[j]
			sumMs += d.Latency.Mean*float64(d.Committed+d.Aborted) - c.Latency.Mean*float64(c.Committed)
			n += d.Aborted
		}
	}
	return sumMs / float64(n)
}

// abortShares returns the share of all attempts aborted, and of each abort reason, over every
// seed and DC of runs, and each DC's abort share.
func abortShares(runs []*bench.Result) (total float64, byReason map[string]float64, byDC []string) {
	attempts, aborted := 0, 0
	reasons := map[string]int{}
	dcAttempts, dcAborted := map[string]int{}, map[string]int{}
	var dcs []string
	for _, r := range runs {
		for _, d := range r.DCs {
			attempts, aborted = attempts+d.Committed+d.Aborted, aborted+d.Aborted
			if !slices.Contains(dcs, d.Name) {
				dcs = append(dcs, d.Name)
			}
			dcAttempts[d.Name] += d.Committed + d.Aborted
			dcAborted[d.Name] += d.Aborted
			for k, n := range d.AbortReasons {
				reasons[k] += n
			}
		}
	}
	byReason = map[string]float64{}
	for k, n := range reasons {
		byReason[k] = 100 * float64(n) / float64(attempts)
	}
	for _, dc := range dcs {
		byDC = append(byDC, fmt.Sprintf("%s %.1f", dc, 100*float64(dcAborted[dc])/float64(dcAttempts[dc])))
	}
	return 100 * float64(aborted) / float64(attempts), byReason, byDC
}

func TestMeasureE33(t *testing.T) {
	keysList := []int{1000, 2500, 5000}
	variants := []e33Variant{
		{name: "base"},
		{name: "aligned-timers", aligned: true},
		{name: "7-clients-per-dc", change: func(o *bench.Options) { o.ClientsPerDC = 7 }},
		{name: "10-clients-per-dc", change: func(o *bench.Options) { o.ClientsPerDC = 10 }},
		{name: "interval-50ms", change: func(o *bench.Options) { o.Params = protocol.Params{"interval": "50ms"} }},
		{name: "interval-200ms", change: func(o *bench.Options) { o.Params = protocol.Params{"interval": "200ms"} }},
		{name: "zipfian-0.5", change: func(o *bench.Options) {
			setTYCSB(o, func(w *workload.TYCSB) { w.Distribution, w.Theta = workload.DistZipfian, 0.5 })
		}},
		{name: "client-hop-10ms", change: func(o *bench.Options) { o.ClientHopUs = 10_000 }},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { measureE33Variant(t, v, keysList) })
	}
}

// measureE33Variant logs variant v at every size of keysList and its change from 2,500 to 5,000
// keys (both must be in keysList).
func measureE33Variant(t *testing.T, v e33Variant, keysList []int) {
	points := map[int]e33Point{}
	for _, keys := range keysList {
		var p e33Point
		for _, withAborts := range []bool{true, false} {
			env := Env{Seed: 1, AlignedTimers: v.aligned}
			runs, err := ch3Results(env, v.name, func(o *bench.Options) {
				if v.change != nil {
					v.change(o)
				}
				setTYCSB(o, func(w *workload.TYCSB) { w.Keys = keys })
				o.LatencyIncludesAborts = withAborts
			})
			if err != nil {
				t.Fatal(err)
			}
			if withAborts {
				p.all, p.perSeed = pooledResult(runs), runs
			} else {
				p.committed, p.perSeedCommit = pooledResult(runs), runs
			}
		}
		points[keys] = p
		total, reasons, byDC := abortShares(p.perSeed)
		var rs []string
		for _, k := range slices.Sorted(maps.Keys(reasons)) {
			rs = append(rs, fmt.Sprintf("%s %.1f%%", k, reasons[k]))
		}
		t.Logf("%-18s %5d keys: commits/DC %.1f, aborts %.1f%% (%s; per DC %s), latency %.1f ms (committed only %.1f ms, aborted only %.1f ms)",
			v.name, keys, ch3Commits(p.all.res), total, strings.Join(rs, ", "), strings.Join(byDC, ", "), p.all.avgMs, p.committed.avgMs,
			abortedMeanMs(p.perSeed, p.perSeedCommit))
	}
	a, b := points[2500], points[5000]
	t.Logf("%-18s 2500 → 5000 keys: commits %+.1f%%, latency %+.1f%% (committed only %+.1f%%)", v.name,
		pctChange(ch3Commits(a.all.res), ch3Commits(b.all.res)), pctChange(a.all.avgMs, b.all.avgMs), pctChange(a.committed.avgMs, b.committed.avgMs))
}

// e36OthersModelMs is the §2.8 model's mean commit latency of the DCs other than C with
// independent send phases, every interval 10 ms but C's intervalCMs: for DC A,
// E[max_B(RTT_AB + U(0, P_B))] − E[U(0, P_A)], at least 0 (an immediate commit), averaged over
// the other DCs by a seeded Monte Carlo of draws samples each.
func e36OthersModelMs(intervalCMs float64, draws int) float64 {
	topo, _ := topology.Preset("aws-mf")
	c := slices.Index(topo.DCs, "C")
	rng := rand.New(rand.NewPCG(1, 2))
	interval := func(b int) float64 {
		if b == c {
			return intervalCMs
		}
		return 10
	}
	sum := 0.0
	for a := range topo.N() {
		if a == c {
			continue
		}
		for range draws {
			latest := 0.0
			for b := range topo.N() {
				if b != a {
					latest = max(latest, topo.RTTMs[a][b]+rng.Float64()*interval(b))
				}
			}
			sum += max(latest-rng.Float64()*interval(a), 0) / float64(draws*(topo.N()-1))
		}
	}
	return sum
}

func TestMeasureE36Others(t *testing.T) {
	t.Logf("the model (independent phases): the other DCs' mean latency %.1f, %.1f, %.1f ms at C = 50, 500, 1000 ms",
		e36OthersModelMs(50, 200_000), e36OthersModelMs(500, 200_000), e36OthersModelMs(1000, 200_000))
	for seed := uint64(1); seed <= 4; seed++ {
		for _, tc := range []struct {
			withAborts    bool
			ratePerClient float64
		}{{true, 2}, {false, 2}, {false, 0.5}} {
			withAborts := tc.withAborts
			var line []string
			var prev float64
			for _, ms := range []int{50, 500, 1000} {
				opts := ch3Options(Env{Seed: seed})
				opts.Params = protocol.Params{"interval": "10ms", "interval.C": fmt.Sprintf("%dms", ms)}
				opts.LatencyIncludesAborts, opts.RatePerClient = withAborts, tc.ratePerClient
				res, err := runProtocols(Env{Seed: seed}, "e3.6", opts, []string{"mf"})
				if err != nil {
					t.Fatal(err)
				}
				r := res["mf"].res
				attempts, aborted := 0, 0
				for _, d := range r.DCs {
					if d.Name != "C" {
						attempts, aborted = attempts+d.Committed+d.Aborted, aborted+d.Aborted
					}
				}
				others := othersMean(r)
				line = append(line, fmt.Sprintf("C=%d ms: %.1f ms (%+.1f), aborts %.1f%%", ms, others, others-prev, 100*float64(aborted)/float64(attempts)))
				prev = others
			}
			t.Logf("seed %d, %.1f tx/s per client, aborts in the latency %v: the other DCs' mean latency %s",
				seed, tc.ratePerClient, withAborts, strings.Join(line, "; "))
		}
	}
}
