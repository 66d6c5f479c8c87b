package repro

import (
	"fmt"
	"math"
	"slices"

	"github.com/meridian-kv/meridian/topology"
)

// alvinKneeTol is the tolerance of a claim on a thread count: one step of Fig. 2's sweep.
const alvinKneeTol = 40

// alvinE4GapTolMs is the tolerance of E4's 30 ms: half of it. The gap's zero-load part alone,
// r₄ − r₃, ranges from 10 to 70 ms over the origins of the spec's table.
const alvinE4GapTolMs = 15

// alvinRareFastPct is the fast-path share below which E4's "the fast path rarely succeeds"
// holds.
const alvinRareFastPct = 25

// alvinCurve is one system's load sweep, in the order of alvinScale.sweep.
type alvinCurve []alvinPoint

// peak is the run of highest throughput.
func (c alvinCurve) peak() alvinPoint { return c[peakIndex(len(c), c.tps)] }

// knee is the thread count where the curve stops scaling (levelOffIndex).
func (c alvinCurve) knee() int { return c[levelOffIndex(len(c), c.tps)].threads }

// tps is the throughput of point i.
func (c alvinCurve) tps(i int) float64 { return c[i].tps }

// alvinSweep runs every system of systems on sites × 1 with write-intensive TPC-C at every
// thread count of sc.sweep.
func alvinSweep(env Env, sc alvinScale, exp string, sites int, systems []string) (map[string]alvinCurve, error) {
	curves := map[string]alvinCurve{}
	for _, p := range systems {
		for _, threads := range sc.sweep {
			o, err := alvinOptions(env, sc, alvinTPCC("write"), alvinConfig{sites, 1}, threads)
			if err != nil {
				return nil, err
			}
			pt, err := alvinRun(env, exp, o, p, threads)
			if err != nil {
				return nil, err
			}
			curves[p] = append(curves[p], pt)
		}
	}
	return curves, nil
}

// sweepLines is a KindXY series of y against threads per node, a line per system.
func sweepLines(name, title, yLabel string, systems []string, curves map[string]alvinCurve, y func(alvinPoint) float64) Series {
	s := Series{Name: name, Kind: KindXY, Title: title, XLabel: "threads per node", YLabel: yLabel}
	for _, p := range systems {
		l := Line{Label: alvinLabels[p]}
		for _, pt := range curves[p] {
			l.X, l.Y = append(l.X, float64(pt.threads)), append(l.Y, y(pt))
		}
		s.Lines = append(s.Lines, l)
	}
	return s
}

// listSweep renders f at every point of c: "15: 120.3, 45: 98.1, …".
func listSweep(c alvinCurve, format string, f func(alvinPoint) float64) string {
	return listCells(len(c), func(i int) string { return fmt.Sprintf("%d: "+format, c[i].threads, f(c[i])) })
}

func pointTPS(p alvinPoint) float64     { return p.tps }
func pointLatency(p alvinPoint) float64 { return p.latencyMs }
func pointAttempt(p alvinPoint) float64 { return p.attemptMs }
func pointFast(p alvinPoint) float64    { return p.fastPct }
func pointAborts(p alvinPoint) float64  { return p.abortPct }

// runAlvinE3 is Fig. 2a: latency and throughput of ALVIN and EPaxos on 5 sites as the load
// grows, with Paxos-LO beside them for the paper's "≈ 3× slower".
func runAlvinE3(env Env, sc alvinScale) (*Report, error) {
	systems := []string{"alvin", "epaxos", "multipaxos-lo"}
	curves, err := alvinSweep(env, sc, "alvin-e3", 5, systems)
	if err != nil {
		return nil, err
	}
	al, ep, lo := curves["alvin"], curves["epaxos"], curves["multipaxos-lo"]
	lower := 0
	for i := range al {
		if al[i].latencyMs < ep[i].latencyMs {
			lower++
		}
	}
	po := math.Min(al.peak().tps, ep.peak().tps)
	r := &Report{Name: "alvin-e3", Title: experiments["alvin-e3"].Title}
	r.Claims = []Claim{
		note(holds("ALVIN's latency below EPaxos's at every load", "every load", fmt.Sprintf("%d of %d", lower, len(al)), lower == len(al)),
			"ALVIN ms %s; EPaxos ms %s; committed attempts alone ALVIN %s, EPaxos %s; fast path ALVIN %s, EPaxos %s (%%); aborted attempts ALVIN %s, EPaxos %s (%%)",
			listSweep(al, "%.0f", pointLatency), listSweep(ep, "%.0f", pointLatency),
			listSweep(al, "%.0f", pointAttempt), listSweep(ep, "%.0f", pointAttempt),
			listSweep(al, "%.0f", pointFast), listSweep(ep, "%.0f", pointFast),
			listSweep(al, "%.0f", pointAborts), listSweep(ep, "%.0f", pointAborts)),
		note(within("EPaxos stops scaling (first load within 5% of its peak)", 85, float64(ep.knee()), alvinKneeTol, "threads/node"),
			"txn/s %s", listSweep(ep, "%.1f", pointTPS)),
		note(within("ALVIN saturates (first load within 5% of its peak)", 125, float64(al.knee()), alvinKneeTol, "threads/node"),
			"txn/s %s", listSweep(al, "%.1f", pointTPS)),
		holds("ALVIN keeps scaling longer than EPaxos", "125 > 85 threads/node", fmt.Sprintf("%d vs %d threads/node", al.knee(), ep.knee()), al.knee() > ep.knee()),
		note(within("Multi-Paxos slower than the partial-order protocols: min(ALVIN, EPaxos) / Paxos-LO peak throughput (±25%)", 3, ratio(po, lo.peak().tps), alvinRelTol*3, "×"),
			"Paxos-LO txn/s %s; latency at the peaks %.0f ms vs ALVIN %.0f, EPaxos %.0f", listSweep(lo, "%.1f", pointTPS), lo.peak().latencyMs, al.peak().latencyMs, ep.peak().latencyMs),
	}
	r.Series = []Series{
		sweepLines("throughput", "Committed throughput against load, TPC-C, 5 sites", "committed transactions/s", systems, curves, pointTPS),
		sweepLines("latency", "Mean latency (first BEGIN to final commit) against load", "mean latency (ms)", systems, curves, pointLatency),
		sweepLines("abort-rate", "Aborted attempts against load", "aborted (% of attempts)", systems, curves, pointAborts),
	}
	return r, nil
}

// runAlvinE4 is Fig. 2b: ALVIN with fast decisions (F) against without (NF) on 7 sites as the
// load grows, with the fast path's hit rate and the zero-load gap the spec derives (§7.4).
func runAlvinE4(env Env, sc alvinScale) (*Report, error) {
	systems := []string{"alvin", "alvin-nf"}
	curves, err := alvinSweep(env, sc, "alvin-e4", 7, systems)
	if err != nil {
		return nil, err
	}
	f, nf := curves["alvin"], curves["alvin-nf"]
	maxGap, maxAttemptGap, better, maxFast := math.Inf(-1), math.Inf(-1), 0, 0.0
	for i := range f {
		gap := f[i].latencyMs - nf[i].latencyMs
		maxGap = math.Max(maxGap, gap)
		maxAttemptGap = math.Max(maxAttemptGap, f[i].attemptMs-nf[i].attemptMs)
		if gap > 0 {
			better++
		}
		maxFast = math.Max(maxFast, f[i].fastPct)
	}
	aws, _ := topology.Preset("aws-7")
	paper, _ := topology.Preset("alvin-paper-7")
	r := &Report{Name: "alvin-e4", Title: experiments["alvin-e4"].Title}
	r.Claims = []Claim{
		note(within("ALVIN-NF's latency below ALVIN-F's by up to (largest gap over the loads, ±15 ms)", 30, maxGap, alvinE4GapTolMs, "ms"),
			"F − NF ms %s; of the committed attempts alone %s", listCells(len(f), func(i int) string { return fmt.Sprintf("%d: %+.1f", f[i].threads, f[i].latencyMs-nf[i].latencyMs) }),
			listCells(len(f), func(i int) string { return fmt.Sprintf("%d: %+.1f", f[i].threads, f[i].attemptMs-nf[i].attemptMs) })),
		within("the same on the commit latency of committed attempts alone, without retries and backoff (±15 ms)", 30, maxAttemptGap, alvinE4GapTolMs, "ms"),
		holds("ALVIN-NF's latency below ALVIN-F's", "every load", fmt.Sprintf("%d of %d", better, len(f)), better == len(f)),
		note(holds(fmt.Sprintf("with high contention the fast path rarely succeeds (below %d%% of decisions)", alvinRareFastPct), "low",
			fmt.Sprintf("at most %.1f%%", maxFast), maxFast < alvinRareFastPct), "fast path %% %s", listSweep(f, "%.1f", pointFast)),
		note(within("zero-load F-slow − NF gap r₄ − r₃, mean over the origins (analytic, ±15 ms)", 33, meanGapMs(aws, 4, 3), alvinE4GapTolMs, "ms"),
			"aws-7; the spec's table alvin-paper-7 gives %.1f ms", meanGapMs(paper, 4, 3)),
	}
	r.Series = []Series{
		sweepLines("latency", "Mean latency (first BEGIN to final commit) against load, 7 sites", "mean latency (ms)", systems, curves, pointLatency),
		sweepLines("throughput", "Committed throughput against load, 7 sites", "committed transactions/s", systems, curves, pointTPS),
		sweepLines("fast-path", "ALVIN-F's fast decisions", "fast path (% of decisions)", systems[:1], curves, pointFast),
	}
	return r, nil
}

// meanGapMs is the mean over t's origins of r_a − r_b, where r_k is the RTT to the origin's
// k-th closest other site (spec §3.10).
func meanGapMs(t *topology.Topology, a, b int) float64 {
	sum := 0.0
	for i := range t.N() {
		var rtts []float64
		for j := range t.N() {
			if j != i {
				rtts = append(rtts, t.RTTMs[i][j])
			}
		}
		slices.Sort(rtts)
		sum += rtts[a-1] - rtts[b-1]
	}
	return sum / float64(t.N())
}
