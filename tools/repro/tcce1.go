package repro

import (
	"fmt"
	"strings"

	"github.com/meridian-kv/meridian/tools/bench"
)

func init() {
	register(Experiment{Name: "tcc-e1", Title: "FastCCS, Eiger, Wren and EC at the thesis's defaults: latency CDFs, throughput, rounds (Fig. 4.1, §4.6)",
		Run: func(env Env) (*Report, error) { return runTCCE1(env, tccFull) }})
}

// tccE1Systems are the thesis's four systems and Eiger under the thesis's reading.
var tccE1Systems = []string{"ec", "fastccs", "eiger", "wren", tccEigerThesis}

// runTCCE1 runs the four systems at the thesis's defaults (Table 4.1): Fig. 4.1's read and
// write latency distributions, and the headline numbers of the abstract and §4.6 (throughput
// against EC and the competitors, the share of ROTs needing more than one round).
func runTCCE1(env Env, sc tccScale) (*Report, error) {
	o := tccOptions(env, sc)
	runs, err := tccRun(env, "tcc-e1", o, tccE1Systems, nil)
	if err != nil {
		return nil, err
	}
	r := &Report{Name: "tcc-e1", Title: experiments["tcc-e1"].Title}
	rot := func(p string) float64 { return runs[p].ROTLatency.Mean }
	wot := func(p string) float64 { return runs[p].WOTLatency.Mean }
	list := func(metric func(string) float64, format string) string {
		var parts []string
		for _, p := range tccProtocols {
			parts = append(parts, tccLabel(p)+" "+fmt.Sprintf(format, metric(p)))
		}
		return strings.Join(parts, ", ")
	}
	lowest, highest := true, true
	for _, p := range tccProtocols {
		lowest = lowest && rot("ec") <= rot(p)
		highest = highest && rot("wren") >= rot(p)
	}
	writesSlower := true
	for _, p := range []string{"fastccs", "eiger", "wren"} {
		writesSlower = writesSlower && wot(p) > rot(p)
	}
	reads, writes := list(rot, "%.2f ms"), list(wot, "%.2f ms")
	r.Claims = append(r.Claims,
		shape("reads: EC has the lowest latency", "lowest", reads, "EC's mean ≤ every other's", lowest),
		shape("reads: FastCCS almost matches EC", "close to EC",
			fmt.Sprintf("FastCCS %+.1f%% vs EC", pctChange(rot("ec"), rot("fastccs"))), "mean within 10% of EC's", rot("fastccs") <= 1.10*rot("ec")),
		shape("reads: Eiger is higher than FastCCS (false dependencies → round 2, commit checks)", "Eiger > FastCCS",
			fmt.Sprintf("Eiger %+.1f%% vs FastCCS (%.3f vs %.3f ms)", pctChange(rot("fastccs"), rot("eiger")), rot("eiger"), rot("fastccs")),
			"mean > 1.01 × FastCCS's", rot("eiger") > 1.01*rot("fastccs")),
		shape("reads: Wren is the highest (always two rounds)", "highest", reads, "Wren's mean ≥ every other's", highest),
		shape("writes are slower than reads in every TCC system", "WOT > ROT", "writes: "+writes, "mean WOT > mean ROT, each system", writesSlower),
		shape("writes: FastCCS gives up write latency (slower than EC's)", "FastCCS > EC",
			fmt.Sprintf("FastCCS %.2f ms, EC %.2f ms", wot("fastccs"), wot("ec")), "mean WOT above EC's", wot("fastccs") > wot("ec")),
		shape("writes: Wren's finish sooner than FastCCS's (§4.4.4)", "Wren < FastCCS",
			fmt.Sprintf("Wren %+.1f%% vs FastCCS (%.3f vs %.3f ms)", pctChange(wot("fastccs"), wot("wren")), wot("wren"), wot("fastccs")),
			"mean WOT < 0.99 × FastCCS's", wot("wren") < 0.99*wot("fastccs")),
	)
	r.Claims = append(r.Claims, tccHeadlineClaims(runs)...)
	r.Series = tccE1Series(o, runs)
	return r, nil
}

// tccHeadlineClaims are the thesis's headline numbers at the defaults (abstract, §4.6, spec §4.4):
// FastCCS ~20% above both TCC competitors (issue 5 accepts ≥ 15%) and 5–10% below EC (WL10);
// at least 90% of its ROTs in one round; 20–50% of Eiger's in more than one, for Eiger as the
// spec prescribes and under the thesis's reading. EC's one round and Wren's two are true by
// construction and tested (TestTCCRoundsByConstruction), not claimed.
func tccHeadlineClaims(runs map[string]*tccResult) []Claim {
	tps := func(p string) float64 { return runs[p].ThroughputTPS }
	above := func(p string) Claim {
		m := pctChange(tps(p), tps("fastccs"))
		return note(atLeast(fmt.Sprintf("throughput: FastCCS above %s by ≥ 15%% (issue 5; the abstract: ~20%%)", tccLabel(p)), 15, m, "%"),
			"%.0f vs %.0f tx/s", tps("fastccs"), tps(p))
	}
	multi := func(p string) float64 { return 100 * runs[p].MultiRoundFraction() }
	eigerMulti := func(p string) Claim {
		return note(inRange(fmt.Sprintf("%s: 20–50%% of ROTs need more than one round (§4.6)", tccLabel(p)), 20, 50, 0, multi(p), "%"),
			"%.4f commit checks per ROT", tccChecksPerROT(runs[p]))
	}
	return []Claim{
		above("eiger"), above("wren"), above(tccEigerThesis),
		note(inRange("throughput: FastCCS 5–10% below EC (WL10)", 5, 10, 0, tccOverheadPct(tps("fastccs"), tps("ec")), "%"),
			"%.0f vs %.0f tx/s", tps("fastccs"), tps("ec")),
		atLeast("FastCCS: most ROTs in one round", 90, 100-multi("fastccs"), "%"),
		eigerMulti("eiger"), eigerMulti(tccEigerThesis),
	}
}

// tccE1Series: Fig. 4.1's two distributions, the throughput absolute and normalized to EC, and
// the rounds.
func tccE1Series(o bench.Options, runs map[string]*tccResult) []Series {
	cdf := func(name, what string, writes bool) Series {
		s := Series{Name: name, Kind: KindCDF, Title: what + " latency distribution (Fig. 4.1)",
			XLabel: what + " latency (ms)", YLabel: "fraction of transactions"}
		for _, p := range tccE1Systems {
			c := runs[p].ROTLatencyCDF
			if writes {
				c = runs[p].WOTLatencyCDF
			}
			if len(c) > 0 {
				s.Lines = append(s.Lines, cdfLine(tccLabel(p), c))
			}
		}
		return s
	}
	var cats []string
	var tps, norm, avg, multi []float64
	for _, p := range tccE1Systems {
		r := runs[p]
		cats = append(cats, tccLabel(p))
		tps, norm = append(tps, r.ThroughputTPS), append(norm, r.ThroughputTPS/runs["ec"].ThroughputTPS)
		avg, multi = append(avg, r.AvgRounds()), append(multi, 100*r.MultiRoundFraction())
	}
	bars := func(name, title, yLabel string, ys []float64) Series {
		return Series{Name: name, Kind: KindBars, Title: title, XLabel: "system", YLabel: yLabel,
			Categories: cats, Lines: []Line{{Label: "defaults", Y: ys}}}
	}
	return []Series{
		cdf("cdf-reads", "Read-only transaction", false),
		cdf("cdf-writes", "Write-only transaction", true),
		bars("throughput", "Throughput at the defaults", "transactions/s", tps),
		bars("throughput-normalized", "Throughput normalized to EC", "throughput / EC's", norm),
		bars("rounds", "Mean rounds per read-only transaction", "rounds per ROT", avg),
		bars("multi-round", "Read-only transactions needing more than one round", "ROTs with > 1 round (%)", multi),
	}
}
