package repro

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

func init() {
	register(Experiment{Name: "e3.1", Title: "MF vs Paxos vs Paxos-CP on COVIS (Fig. 3.3)", Run: runE31})
	register(Experiment{Name: "e3.6", Title: "MF with C's propagation interval swept (Fig. 3.8)", Run: runE36})
	register(Experiment{Name: "e3.7", Title: "MF immediate commits when only C issues transactions (Fig. 3.9)", Run: runE37})
}

// ch3Options is Chapter 3's setting (spec §6.3): the aws-mf topology (C, O, V, I, S), 5 client
// threads per DC pacing themselves at 2 transactions/s (10/s per DC), 5 operations on distinct
// keys drawn uniformly from 1,000, half reads, about 500 transactions per DC (50 s), a 100 ms
// propagation interval, and latency averaged over committed and aborted transactions.
func ch3Options(env Env) bench.Options {
	opts := bench.Defaults()
	opts.Topology, _ = topology.Preset("aws-mf")
	opts.Seed = env.Seed
	opts.ClientsPerDC = 5
	opts.RatePerClient = 2
	opts.Workload = workload.TYCSB{Keys: 1000, Distribution: workload.DistUniform, OpsPerTxn: 5, ReadRatio: 0.5}
	opts.DurationUs, opts.WarmupUs = 50_000_000, 0
	opts.Jitter = 0 // Table 3.1 gives no standard deviations
	env.network(&opts)
	opts.LatencyIncludesAborts = true
	opts.Params = protocol.Params{"interval": "100ms"}
	return opts
}

// e31Scenarios are Fig. 3.3's deployments, subsets of Table 3.1.
var e31Scenarios = [][]string{{"C", "O"}, {"C", "O", "V"}, {"C", "O", "V", "I"}, {"C", "O", "V", "I", "S"}}

// e31Paxos are the paper's two Paxos baselines (Megastore-style Paxos and Paxos-CP).
var e31Paxos = []string{"paxos-commit", "paxos-cp"}

// runE31 runs MF, Paxos and Paxos-CP on every scenario of Fig. 3.3 (CO, COV, COVI, COVIS).
func runE31(env Env) (*Report, error) {
	r := &Report{Name: "e3.1", Title: experiments["e3.1"].Title}
	commits := func(pr protoResult) float64 {
		sum := 0.0
		for _, dc := range pr.res.DCs {
			sum += float64(dc.Committed) / float64(len(pr.res.DCs))
		}
		return sum
	}
	var mfLat, mfBound, paxosLat, cpLat []float64
	var labels []string
	var last map[string]protoResult
	ahead, aheadList := true, ""
	for _, dcs := range e31Scenarios {
		name := strings.Join(dcs, "")
		opts := ch3Options(env)
		topo, err := topology.Subset(opts.Topology, dcs)
		if err != nil {
			return nil, err
		}
		opts.Topology = topo
		runs, err := runProtocols(env, "e3.1 "+name, opts, []string{"mf"})
		if err != nil {
			return nil, err
		}
		popts := opts
		popts.Params = nil
		paxos, err := runProtocols(env, "e3.1 "+name, popts, e31Paxos)
		if err != nil {
			return nil, err
		}
		maps.Copy(runs, paxos)
		bound := 0.0
		for i := range topo.N() {
			bound += topo.MaxRTTMs(i) / float64(topo.N())
		}
		mfLat, mfBound = append(mfLat, runs["mf"].avgMs), append(mfBound, bound)
		paxosLat, cpLat = append(paxosLat, runs["paxos-commit"].avgMs), append(cpLat, runs["paxos-cp"].avgMs)
		labels = append(labels, name)
		ahead = ahead && commits(runs["mf"]) > max(commits(runs["paxos-commit"]), commits(runs["paxos-cp"]))
		aheadList += fmt.Sprintf("%s: MF %.0f, Paxos %.0f, Paxos-CP %.0f; ", name, commits(runs["mf"]), commits(runs["paxos-commit"]), commits(runs["paxos-cp"]))
		if len(dcs) == 2 {
			r.Claims = append(r.Claims,
				withinRel("CO: Paxos commits per DC (its best case)", 64, commits(runs["paxos-commit"]), heliosRelTol, ""),
				withinRel("CO: Paxos-CP commits per DC (its best case)", 237, commits(runs["paxos-cp"]), heliosRelTol, ""))
		}
		last = runs
	}
	trend := func(ys []float64) string {
		parts := make([]string, len(ys))
		for i, y := range ys {
			parts[i] = fmt.Sprintf("%s %.0f (RTT_max %.0f)", labels[i], y, mfBound[i])
		}
		return strings.Join(parts, ", ") + " ms"
	}
	close, below := true, true
	for i := range mfLat {
		close = close && math.Abs(mfLat[i]-mfBound[i]) <= heliosRelTol*mfBound[i]
		if i >= 2 {
			below = below && mfLat[i] < mfBound[i]
		}
	}
	mf := last["mf"]
	r.Claims = append(r.Claims,
		shape("MF's latency is close to the mean RTT_max in every scenario", "≈ RTT_max", trend(mfLat), "within ±15% of it", close),
		shape("…and below it in the larger scenarios (COVI, COVIS)", "below", trend(mfLat), "below it in COVI and COVIS", below),
		withinRel("COVIS: MF average latency", 246, mf.avgMs, heliosRelTol, "ms"),
		withinRel("COVIS: MF commits per DC (its worst case, of ~500 issued)", 361, commits(mf), heliosRelTol, ""),
		shape("MF is far ahead in commits in every scenario", "MF ahead", strings.TrimSuffix(aheadList, "; "), "MF above both Paxos in every scenario", ahead),
	)
	for _, p := range e31Paxos {
		r.Claims = append(r.Claims, note(atLeast("COVIS: "+p+" latency", 14, last[p].avgMs/1000, "s"),
			"the spec: \"seconds, growing with the run length\""))
	}
	r.Series = append(seriesFromResults(nil, last["mf"], last["paxos-commit"], last["paxos-cp"]),
		Series{Name: "scenarios", Kind: KindBars, Title: "Average latency per scenario (Fig. 3.3)", XLabel: "scenario", YLabel: "average latency (ms)",
			Categories: labels, Lines: []Line{{Label: "MF", Y: mfLat}, {Label: "Paxos", Y: paxosLat}, {Label: "Paxos-CP", Y: cpLat}},
			Bound: mfBound, BoundLabel: "mean RTT_max"})
	return r, nil
}

// e36 runs MF with every DC sending every 10 ms except C, which sends every intervalMs.
func mfWithC(env Env, exp string, intervalMs int, clientDCs []string) (protoResult, error) {
	opts := ch3Options(env)
	opts.Params = protocol.Params{"interval": "10ms", "interval.C": fmt.Sprintf("%dms", intervalMs)}
	opts.ClientDCs = clientDCs
	res, err := runProtocols(env, fmt.Sprintf("%s C=%dms", exp, intervalMs), opts, []string{"mf"})
	return res["mf"], err
}

func othersMean(res *bench.Result) float64 {
	sum, n := 0.0, 0
	for _, dc := range res.DCs {
		if dc.Name != "C" {
			sum += dc.Latency.Mean
			n++
		}
	}
	return sum / float64(n)
}

func runE36(env Env) (*Report, error) {
	runs := map[int]protoResult{}
	for _, ms := range []int{50, 500, 1000} {
		res, err := mfWithC(env, "e3.6", ms, nil)
		if err != nil {
			return nil, err
		}
		runs[ms] = res
	}
	c := func(ms int) float64 { return runs[ms].res.DCs[dcIndex(runs[ms].res, "C")].Latency.Mean }
	r := &Report{Name: "e3.6", Title: experiments["e3.6"].Title}
	commitsC := func(ms int) float64 { return float64(runs[ms].res.DCs[dcIndex(runs[ms].res, "C")].Committed) }
	othersCommits := func(ms int) float64 {
		sum := 0.0
		for _, dc := range runs[ms].res.DCs {
			if dc.Name != "C" {
				sum += float64(dc.Committed) / float64(len(runs[ms].res.DCs)-1)
			}
		}
		return sum
	}
	cRange := []float64{commitsC(50), commitsC(500), commitsC(1000)}
	r.Claims = append(r.Claims,
		withinRel("C's latency at 500 ms below its 50 ms run", 75, 100*(1-c(500)/c(50)), heliosRelTol, "%"),
		withinRel("C's latency from 500 to 1000 ms: a further drop", 74, 100*(1-c(1000)/c(500)), heliosRelTol, "%"),
		withinRel("C's latency at 1000 ms", 10, c(1000), heliosRelTol, "ms"),
		withinRel("the other DCs' mean latency rises from C=50 to C=500 ms (GAP-M5: the periodic model predicts ≈225)", 65,
			othersMean(runs[500].res)-othersMean(runs[50].res), heliosRelTol, "ms"),
		withinRel("the other DCs' mean latency rises from C=500 to C=1000 ms", 119,
			100*(othersMean(runs[1000].res)/othersMean(runs[500].res)-1), heliosRelTol, "%"),
		note(inRange("C's commits stay between 376 and 426: the fewest of the 50, 500, 1000 ms runs", 376, 426, heliosRelTol*426, slices.Min(cRange), ""),
			"%.0f, %.0f, %.0f", cRange[0], cRange[1], cRange[2]),
		note(inRange("…and the most of them", 376, 426, heliosRelTol*426, slices.Max(cRange), ""),
			"%.0f, %.0f, %.0f", cRange[0], cRange[1], cRange[2]),
		withinRel("the others' mean commits at C=50 ms", 386, othersCommits(50), heliosRelTol, ""),
		withinRel("the others' mean commits at C=1000 ms", 345, othersCommits(1000), heliosRelTol, ""),
	)
	r.Series = append(seriesFromResults([]string{"C every 50 ms", "C every 500 ms", "C every 1000 ms"}, runs[50], runs[500], runs[1000]),
		sweepSeries("C's propagation interval", "ms", []float64{50, 500, 1000}, runs[50], runs[500], runs[1000])...)
	return r, nil
}

func runE37(env Env) (*Report, error) {
	r := &Report{Name: "e3.7", Title: experiments["e3.7"].Title}
	var runs []protoResult
	for _, tc := range []struct {
		ms   int
		want float64
	}{{500, 60}, {1000, 90}} {
		res, err := mfWithC(env, "e3.7", tc.ms, []string{"C"})
		if err != nil {
			return nil, err
		}
		got := 100 * res.res.DCs[dcIndex(res.res, "C")].ImmediateFraction
		r.Claims = append(r.Claims, withinRel(fmt.Sprintf("immediate commits at C with a %d ms interval", tc.ms), tc.want, got, heliosRelTol, "%"))
		runs = append(runs, res)
	}
	r.Series = seriesFromResults([]string{"C every 500 ms", "C every 1000 ms"}, runs...)
	return r, nil
}
