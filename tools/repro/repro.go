// Package repro reproduces the experiments of the Message Futures and Helios evaluations
// (dissertation seed 000, chapters 3 and 4; spec helios-message-futures.md §6) in the simulator
// and sets each of the paper's claims beside our figure with a verdict.
//
// Every experiment uses the spec's setup (topology, workload, clients, parameters); durations
// are shortened from the paper's 10 minutes to keep `meridian repro --all` within minutes, which
// the simulator's determinism and steady state make safe (see docs/REPRODUCTION.md).
package repro

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/meridian-kv/meridian/tools/bench"
)

// Verdicts of a claim.
const (
	Matches = "matches"
	Differs = "differs"
)

// Claim is one statement of the paper with our measurement.
type Claim struct {
	Claim string `json:"claim"`
	Paper string `json:"paper"`
	Ours  string `json:"ours"`
	// Tolerance is how far ours may lie from the paper's figure and still match ("±15% = ±3.2
	// ms"), "as stated" for a bound the paper states, or, for a qualitative claim, the test that
	// decides it; "" where the claim's text says it all.
	Tolerance string `json:"tolerance"`
	Verdict   string `json:"verdict"`
	// PaperValue and OursValue are a quantitative claim's numbers in its unit (nil for a
	// qualitative claim); for a range, PaperValue is the end nearest ours.
	PaperValue *float64 `json:"paper_value,omitempty"`
	OursValue  *float64 `json:"ours_value,omitempty"`
	// RelError is |ours − paper| / |paper| of a claim on a value or a range (0 inside the
	// range); nil for bounds, qualitative claims and a paper value of 0.
	RelError *float64 `json:"rel_error,omitempty"`
}

// quantify records a claim's numbers and its relative error (if the paper's value is not 0).
func (c *Claim) quantify(paper, ours float64) {
	c.PaperValue, c.OursValue = &paper, &ours
	if paper != 0 {
		e := math.Abs(ours-paper) / math.Abs(paper)
		c.RelError = &e
	}
}

// Report is one experiment's outcome.
type Report struct {
	Name   string  `json:"name"`
	Title  string  `json:"title"`
	Claims []Claim `json:"claims"`
	// Summary tallies Claims (Summarize); set by whoever runs the experiment (Run does).
	Summary *Summary `json:"summary,omitempty"`
	// Series is what the experiment measured, for plots and CSV files (WriteDir), and in the
	// JSON output so that docs/REPRODUCTION.md's tables come from a saved run ({{table}} in
	// WriteDoc) instead of being typed by hand.
	Series []Series `json:"series,omitempty"`
}

// Env is what an experiment needs from its caller.
type Env struct {
	// Progress, if set, receives a short description of each run as it starts.
	Progress func(step string)
	// Seed seeds every simulated run.
	Seed uint64
	// JitterCorrelationUs, if not nil, replaces bench.Defaults()'s correlation time of each
	// link's jitter (bench.Options.JitterCorrelationUs) in every run; it matters only where
	// links have jitter (the Chapter 4 experiments).
	JitterCorrelationUs *int64
	// AlignedTimers starts every node's periodic timers in phase at time 0 in every run
	// (bench.Options.AlignedTimers), as the simulator did before timers had a random phase; it
	// is there to measure what the phase changes.
	AlignedTimers bool
}

// network applies the environment's network settings, and its timers' phase, to opts.
func (e Env) network(opts *bench.Options) {
	if e.JitterCorrelationUs != nil {
		opts.JitterCorrelationUs = *e.JitterCorrelationUs
	}
	opts.AlignedTimers = e.AlignedTimers
}

func (e Env) progress(format string, args ...any) {
	if e.Progress != nil {
		e.Progress(fmt.Sprintf(format, args...))
	}
}

// Experiment is one reproducible experiment.
type Experiment struct {
	Name  string
	Title string
	Run   func(env Env) (*Report, error)
}

var experiments = map[string]Experiment{}

func register(e Experiment) { experiments[e.Name] = e }

// List returns every experiment, sorted by name.
func List() []Experiment {
	out := make([]Experiment, 0, len(experiments))
	for _, e := range experiments {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i].Name, out[j].Name) })
	return out
}

// naturalLess orders names with their digit runs compared as numbers, so that tcc-e2 comes
// before tcc-e10.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		switch {
		case da != "" && db != "":
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			if da != db {
				return da < db
			}
			a, b = a[len(da):], b[len(db):]
		case a[0] != b[0]:
			return a[0] < b[0]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

// digitPrefix returns the run of ASCII digits s starts with.
func digitPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// RunSummarized runs e and sets its report's Summary.
func (e Experiment) RunSummarized(env Env) (*Report, error) {
	r, err := e.Run(env)
	if err == nil {
		s := Summarize(r)
		r.Summary = &s
	}
	return r, err
}

// Lookup returns the experiment called name.
func Lookup(name string) (Experiment, bool) {
	e, ok := experiments[name]
	return e, ok
}

// within is a numeric claim: ours matches if it lies within tolerance (in the claim's unit) of
// the paper's value.
func within(claim string, paper, ours, tolerance float64, unit string) Claim {
	c := Claim{Claim: claim, Paper: withUnit(paper, unit), Ours: withUnit(ours, unit),
		Tolerance: toleranceText(tolerance, unit), Verdict: Matches}
	c.quantify(paper, ours)
	if math.Abs(ours-paper) > tolerance {
		c.Verdict = differsBy(ours-paper, unit)
	}
	return c
}

// differsBy is the verdict of a number off by delta: "differs by +3.2 ms".
func differsBy(delta float64, unit string) string {
	sign := ""
	if delta >= 0 {
		sign = "+"
	}
	return Differs + " by " + sign + withUnit(delta, unit)
}

// withinRel is a numeric claim whose tolerance is a fraction of the paper's value: ours
// matches if it lies within relTol·|paper| of it.
func withinRel(claim string, paper, ours, relTol float64, unit string) Claim {
	c := within(claim, paper, ours, relTol*math.Abs(paper), unit)
	c.Tolerance = fmt.Sprintf("±%.3g%% of it (%s)", 100*relTol, c.Tolerance)
	return c
}

// atLeast is a bound the paper states ("> 14 s", "≥ 90%"): ours matches if it is at least
// bound, tested as stated.
func atLeast(claim string, bound, ours float64, unit string) Claim {
	return bounded(claim, "≥ ", bound, ours, unit, ours >= bound)
}

// atMost is a bound the paper states ("< 0.5%", "within 10%"): ours matches if it is at most
// bound, tested as stated.
func atMost(claim string, bound, ours float64, unit string) Claim {
	return bounded(claim, "≤ ", bound, ours, unit, ours <= bound)
}

func bounded(claim, op string, bound, ours float64, unit string, ok bool) Claim {
	c := holds(claim, op+withUnit(bound, unit), withUnit(ours, unit), ok)
	c.Tolerance = "as stated"
	c.PaperValue, c.OursValue = &bound, &ours
	if !ok {
		c.Verdict = differsBy(ours-bound, unit)
	}
	return c
}

// withUnit renders v with 4 significant digits (3 below 1 in magnitude, every digit of the
// integer part from 1000 up) and its unit.
func withUnit(v float64, unit string) string {
	num := fmt.Sprintf("%.4g", v)
	switch a := math.Abs(v); {
	case a < 1:
		num = fmt.Sprintf("%.3g", v)
	case a >= 1000:
		num = fmt.Sprintf("%.0f", v)
	}
	switch unit {
	case "":
		return num
	case "%":
		return num + "%"
	}
	return num + " " + unit
}

// toleranceText renders an absolute tolerance: "±5 ms", or "as stated" for none.
func toleranceText(tolerance float64, unit string) string {
	if tolerance == 0 {
		return "as stated"
	}
	return "±" + withUnit(tolerance, unit)
}

// holds is a qualitative claim: it matches if ok. Its text says what is tested; shape adds
// the test where the text does not.
func holds(claim, paper, ours string, ok bool) Claim {
	c := Claim{Claim: claim, Paper: paper, Ours: ours, Verdict: Matches}
	if !ok {
		c.Verdict = Differs
	}
	return c
}

// shape is a qualitative claim on the paper's stated shape (a rise, a level-off, an order),
// decided by test, which is printed as its tolerance.
func shape(claim, paper, ours, test string, ok bool) Claim {
	c := holds(claim, paper, ours, ok)
	c.Tolerance = test
	return c
}

// Summary is an experiment's (or a whole run's) tally.
type Summary struct {
	Claims  int `json:"claims"`
	Matches int `json:"matches"`
	// Quantified is how many matches carry a relative error; MedianRelError is their median
	// (0 if none).
	Quantified     int     `json:"quantified"`
	MedianRelError float64 `json:"median_rel_error"`
}

// Summarize tallies the claims of reports.
func Summarize(reports ...*Report) Summary {
	var s Summary
	var errs []float64
	for _, r := range reports {
		for _, c := range r.Claims {
			s.Claims++
			if c.Verdict != Matches {
				continue
			}
			s.Matches++
			if c.RelError != nil {
				errs = append(errs, *c.RelError)
			}
		}
	}
	s.Quantified = len(errs)
	if len(errs) > 0 {
		slices.Sort(errs)
		s.MedianRelError = errs[len(errs)/2]
		if len(errs)%2 == 0 {
			s.MedianRelError = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
		}
	}
	return s
}

// String is the summary line: "12 claims, 7 match; median relative error 4.1% (5 quantified
// matches)".
func (s Summary) String() string {
	out := fmt.Sprintf("%d claims, %d match", s.Claims, s.Matches)
	if s.Quantified == 0 {
		return out + "; no quantified match"
	}
	return out + fmt.Sprintf("; median relative error %.1f%% (%d quantified matches)", 100*s.MedianRelError, s.Quantified)
}
