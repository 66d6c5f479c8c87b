package repro

import (
	"fmt"
	"math"
	"slices"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// The thesis's workload sweeps (§4.4, Figs. 4.2–4.5): the four systems on 8 partitions with 32
// clients as one parameter of Table 4.1 moves over its range and the others stay at their
// defaults. The thesis ran each on AWS and in PeerSim; our simulator is PeerSim's kind (no CPU
// or disk model, spec §4.2), so claims the thesis makes of its simulations are ours to match,
// and those it makes of AWS only are set beside ours with the difference explained.

func init() {
	register(Experiment{Name: "tcc-e2", Title: "Keys per read-only transaction 2–64 (Fig. 4.2)",
		Run: func(env Env) (*Report, error) { return runTCCE2(env, tccFull) }})
	register(Experiment{Name: "tcc-e3", Title: "Keys per write-only transaction 2–64 (Fig. 4.3)",
		Run: func(env Env) (*Report, error) { return runTCCE3(env, tccFull) }})
	register(Experiment{Name: "tcc-e4", Title: "Value size 2–1024 bytes (Fig. 4.4)",
		Run: func(env Env) (*Report, error) { return runTCCE4(env, tccFull) }})
	register(Experiment{Name: "tcc-e5", Title: "Write fraction 0.01–0.5 (Fig. 4.5)",
		Run: func(env Env) (*Report, error) { return runTCCE5(env, tccFull) }})
}

// tccTxnLengths are the transaction lengths of E2 and E3, Table 4.1's range 2–64.
var tccTxnLengths = []float64{2, 4, 8, 16, 32, 64}

// tccValueSizes are E4's value sizes, Table 4.1's range 2–1024 bytes with 512 (where the thesis
// sees the systems converge) included.
var tccValueSizes = []float64{2, 8, 32, 128, 256, 512, 1024}

// tccWriteFractions are E5's write fractions, Table 4.1's range 0.01–0.5 (spec WL2: the text's
// "0.01%" is the table's 0.01).
var tccWriteFractions = []float64{0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5}

// tccRelTol is the tolerance of a number the thesis gives ("~10%"): 15% of it.
const tccRelTol = 0.15

// tccEqualPct is how far apart two throughputs the thesis calls equal may be, in percent: the
// noise floor of a point (tccMinChange) with room for both points' noise.
const tccEqualPct = 2 * 100 * tccMinChange

// tccFrequentChecksPerROT is the least rate of Eiger commit checks the claim "frequent" accepts:
// one ROT in a hundred.
const tccFrequentChecksPerROT = 0.01

func tccReport(name string, s *tccSweep) *Report {
	return &Report{Name: name, Title: experiments[name].Title, Series: s.series()}
}

func runTCCE2(env Env, sc tccScale) (*Report, error) {
	s, err := runTCCSweep(env, "tcc-e2", sc, "keys per read-only transaction", "keys", tccTxnLengths, tccProtocols,
		func(o *bench.Options, x float64) { setTCC(o, func(w *workload.TCC) { w.KeysPerROT = int(x) }) }, nil)
	if err != nil {
		return nil, err
	}
	r := tccReport("tcc-e2", s)
	first, last := 0, s.last()
	meanOverhead := 0.0
	for i := range s.xs {
		meanOverhead += tccOverheadPct(s.tps("fastccs", i), s.tps("ec", i)) / float64(len(s.xs))
	}
	above, margin := s.aboveEverywhere("fastccs", "eiger", "wren")
	multi := func(p string, i int) float64 { return 100 * s.at(p, i).MultiRoundFraction() }
	r.Claims = append(r.Claims,
		note(withinRel("FastCCS follows EC with a penalty of ~10% (mean over the lengths)", 10, meanOverhead, tccRelTol, "%"),
			"%s", s.normTrend("fastccs")),
		holds("Eiger and Wren are much worse than FastCCS at every length", "FastCCS above both", margin, above),
		holds("short transactions: Wren has the lowest throughput (rounds dominate)", "Wren lowest at 2 keys",
			fmt.Sprintf("at %s: %s", s.xName(first), tccPointList(s, first)), tccLowest(s, "wren", first)),
		holds("Wren closes in on the others as transactions grow", "normalized throughput rises",
			s.normTrend("wren"), rises(s.norm("wren", first), s.norm("wren", last))),
		holds("long transactions: Wren surpasses Eiger (AWS; the simulator overstates Wren's extra round there)", "Wren > Eiger at 64 keys",
			fmt.Sprintf("at %s: Wren %.0f, Eiger %.0f tx/s", s.xName(last), s.tps("wren", last), s.tps("eiger", last)),
			s.tps("wren", last) > s.tps("eiger", last)),
		holds("Eiger gets worse with length: more ROTs need a second round, throughput falls against EC", "rises / falls",
			fmt.Sprintf("multi-round %.1f%% → %.1f%%, normalized %.2f → %.2f", multi("eiger", first), multi("eiger", last),
				s.norm("eiger", first), s.norm("eiger", last)),
			shareRises(multi("eiger", first), multi("eiger", last)) && falls(s.norm("eiger", first), s.norm("eiger", last))),
		holds("FastCCS's second round becomes more likely with length (by more than 0.1 point) but stays rarer than Eiger's", "rises, below Eiger",
			fmt.Sprintf("FastCCS %.2f%% → %.2f%%, Eiger at %s %.1f%%", multi("fastccs", first), multi("fastccs", last), s.xName(last), multi("eiger", last)),
			shareRises(multi("fastccs", first), multi("fastccs", last)) && multi("fastccs", last) < multi("eiger", last)),
	)
	return r, nil
}

func runTCCE3(env Env, sc tccScale) (*Report, error) {
	s, err := runTCCSweep(env, "tcc-e3", sc, "keys per write-only transaction", "keys", tccTxnLengths, tccProtocols,
		func(o *bench.Options, x float64) { setTCC(o, func(w *workload.TCC) { w.KeysPerWOT = int(x) }) }, nil)
	if err != nil {
		return nil, err
	}
	r := tccReport("tcc-e3", s)
	first, last := 0, s.last()
	overhead := func(i int) float64 { return tccOverheadPct(s.tps("fastccs", i), s.tps("ec", i)) }
	above, margin := s.aboveEverywhere("fastccs", "eiger", "wren")
	multi := func(p string, i int) float64 { return 100 * s.at(p, i).MultiRoundFraction() }
	checks := func(i int) float64 { return tccChecksPerROT(s.at("eiger", i)) }
	r.Claims = append(r.Claims,
		holds("FastCCS is substantially below EC for long write transactions (more than 10%, growing with length)", "well below EC",
			fmt.Sprintf("%.1f%% below at %s, %.1f%% at %s", overhead(first), s.xName(first), overhead(last), s.xName(last)),
			overhead(last) > 10 && overhead(last) > overhead(first)),
		holds("FastCCS still beats Eiger and Wren at every length", "FastCCS above both", margin, above),
		holds("longer writes touch more partitions: more ROTs need a second round (FastCCS and Eiger)", "rises",
			fmt.Sprintf("FastCCS %.2f%% → %.2f%%, Eiger %.1f%% → %.1f%%", multi("fastccs", first), multi("fastccs", last), multi("eiger", first), multi("eiger", last)),
			shareRises(multi("fastccs", first), multi("fastccs", last)) && shareRises(multi("eiger", first), multi("eiger", last))),
		shape("…and drastically more Eiger commit checks, which become frequent (a main reason Eiger slows down)", "rises drastically, frequent",
			fmt.Sprintf("%.4f → %.4f per ROT", checks(first), checks(last)), "at least doubles, and ≥ 0.01 per ROT at 64 keys",
			checks(last) >= 2*checks(first) && checks(last) >= tccFrequentChecksPerROT),
	)
	return r, nil
}

func runTCCE4(env Env, sc tccScale) (*Report, error) {
	s, err := runTCCSweep(env, "tcc-e4", sc, "value size", "bytes", tccValueSizes, tccProtocols,
		func(o *bench.Options, x float64) { setTCC(o, func(w *workload.TCC) { w.ValueBytes = int(x) }) }, nil)
	if err != nil {
		return nil, err
	}
	r := tccReport("tcc-e4", s)
	above, margin := s.aboveEverywhere("fastccs", "eiger", "wren")
	def, last := s.index(128), s.last()
	worstNorm := func(i int) float64 {
		return math.Min(s.norm("fastccs", i), math.Min(s.norm("eiger", i), s.norm("wren", i)))
	}
	converge := true
	for _, p := range []string{"fastccs", "eiger", "wren"} {
		converge = converge && rises(s.norm(p, def), s.norm(p, last))
	}
	r.Claims = append(r.Claims,
		holds("FastCCS is the closest to EC at every value size", "closest to EC", margin, above),
		holds("above 512 B every TCC system approaches EC (normalized throughput at 1024 B above that at 128 B)", "converge toward EC",
			fmt.Sprintf("%s; %s; %s", s.normTrend("fastccs"), s.normTrend("eiger"), s.normTrend("wren")), converge),
		holds("…so the gap between EC and the slowest TCC system narrows from 128 B to 1024 B", "narrows",
			fmt.Sprintf("slowest at 128 B %.2f of EC, at 1024 B %.2f", worstNorm(def), worstNorm(last)), rises(worstNorm(def), worstNorm(last))),
	)
	return r, nil
}

func runTCCE5(env Env, sc tccScale) (*Report, error) {
	s, err := runTCCSweep(env, "tcc-e5", sc, "write fraction", "", tccWriteFractions, tccProtocols,
		func(o *bench.Options, x float64) { setTCC(o, func(w *workload.TCC) { w.WriteFraction = x }) }, nil)
	if err != nil {
		return nil, err
	}
	r := tccReport("tcc-e5", s)
	first, last := 0, s.last()
	fall := falls(s.tps("fastccs", first), s.tps("fastccs", last))
	for i := 1; i < len(s.xs); i++ {
		fall = fall && s.tps("fastccs", i) < s.tps("fastccs", i-1)
	}
	multi := func(p string, i int) float64 { return 100 * s.at(p, i).MultiRoundFraction() }
	cross := -1
	for i := range s.xs {
		if s.tps("wren", i) > s.tps("fastccs", i) {
			cross = i
			break
		}
	}
	crossOurs := "Wren never overtakes: " + tccRatioTrend(s, "wren", "fastccs")
	if cross >= 0 {
		crossOurs = fmt.Sprintf("from write fraction %g: %s", s.xs[cross], tccRatioTrend(s, "wren", "fastccs"))
	}
	readHeavy := true
	for _, x := range []float64{0.01, 0.05} {
		if i := s.index(x); i >= 0 {
			readHeavy = readHeavy && s.tps("fastccs", i) > max(s.tps("eiger", i), s.tps("wren", i))
		}
	}
	eigerVsFast := pctChange(s.tps("fastccs", first), s.tps("eiger", first))
	// The thesis gives two figures for this point: its simulator's (equal throughput) and
	// AWS's (Eiger ~10% below, the client dependency tree's CPU cost). Ours is a simulator with
	// no CPU model, so the simulator's is the claim; two windows, one around each, would always
	// let one of them match.
	r.Claims = append(r.Claims,
		holds("FastCCS's throughput falls as the write fraction rises", "falls", tccThroughputTrend(s, "fastccs"), fall),
		holds("…with more second rounds", "rises", fmt.Sprintf("%.2f%% → %.2f%% of ROTs", multi("fastccs", first), multi("fastccs", last)),
			shareRises(multi("fastccs", first), multi("fastccs", last))),
		holds("Wren overtakes FastCCS at high write fractions (AWS and simulation; crossover not stated)", "Wren > FastCCS at high fractions",
			crossOurs, cross > 0),
		holds("FastCCS beats Eiger and Wren at realistic read-heavy fractions (0.01, 0.05)", "FastCCS highest",
			fmt.Sprintf("at 0.01: %s; at 0.05: %s", tccPointList(s, first), tccPointList(s, max(s.index(0.05), 0))), readHeavy),
		holds("0.01: Eiger and FastCCS run almost the same number of second rounds (within 2 points)", "about equal",
			fmt.Sprintf("Eiger %.2f%%, FastCCS %.2f%%", multi("eiger", first), multi("fastccs", first)),
			math.Abs(multi("eiger", first)-multi("fastccs", first)) <= 2),
		within("0.01: the simulation predicts equal throughput for Eiger and FastCCS (Eiger vs FastCCS)", 0, eigerVsFast, tccEqualPct, "%"),
	)
	return r, nil
}

// tccPointList lists every system's throughput at point i: "EC 31000, FastCCS 29000, …".
func tccPointList(s *tccSweep, i int) string {
	out := ""
	for j, p := range s.protocols {
		if j > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %.0f", tccLabel(p), s.tps(p, i))
	}
	return out + " tx/s"
}

// tccLowest reports whether p has the lowest throughput of all at point i.
func tccLowest(s *tccSweep, p string, i int) bool {
	return !slices.ContainsFunc(s.protocols, func(q string) bool { return q != p && s.tps(q, i) <= s.tps(p, i) })
}

// tccThroughputTrend lists p's throughput at every point.
func tccThroughputTrend(s *tccSweep, p string) string {
	return tccLabel(p) + ": " + s.trend("%.0f", func(i int) float64 { return s.tps(p, i) }) + " tx/s"
}

// tccRatioTrend lists a's throughput over b's at every point.
func tccRatioTrend(s *tccSweep, a, b string) string {
	return tccLabel(a) + "/" + tccLabel(b) + ": " + s.trend("%.2f", func(i int) float64 { return s.tps(a, i) / s.tps(b, i) })
}
