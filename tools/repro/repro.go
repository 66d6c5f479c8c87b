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
	Claim   string `json:"claim"`
	Paper   string `json:"paper"`
	Ours    string `json:"ours"`
	Verdict string `json:"verdict"`
}

// Report is one experiment's outcome.
type Report struct {
	Name   string  `json:"name"`
	Title  string  `json:"title"`
	Claims []Claim `json:"claims"`
	// Series is what the experiment measured, for plots and CSV files (WriteDir); the JSON
	// output carries the claims only.
	Series []Series `json:"-"`
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
}

// network applies the environment's network settings to opts.
func (e Env) network(opts *bench.Options) {
	if e.JitterCorrelationUs != nil {
		opts.JitterCorrelationUs = *e.JitterCorrelationUs
	}
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

// Lookup returns the experiment called name.
func Lookup(name string) (Experiment, bool) {
	e, ok := experiments[name]
	return e, ok
}

// within is a numeric claim: ours matches if it lies within tolerance of the paper's value.
func within(claim string, paper, ours, tolerance float64, unit string) Claim {
	c := Claim{Claim: claim, Paper: fmt.Sprintf("%.4g %s", paper, unit), Ours: fmt.Sprintf("%.4g %s", ours, unit), Verdict: Matches}
	if math.Abs(ours-paper) > tolerance {
		c.Verdict = fmt.Sprintf("%s by %+.3g %s", Differs, ours-paper, unit)
	}
	return c
}

// holds is a qualitative claim: it matches if ok.
func holds(claim, paper, ours string, ok bool) Claim {
	c := Claim{Claim: claim, Paper: paper, Ours: ours, Verdict: Matches}
	if !ok {
		c.Verdict = Differs
	}
	return c
}
