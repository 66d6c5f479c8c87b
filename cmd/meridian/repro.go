package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/tools/repro"
)

// runRepro implements `meridian repro list`, `meridian repro NAME...` and `meridian repro --all`;
// --out DIR also writes each experiment's claims, data and plots, and an index page, under DIR.
func runRepro(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("repro", stderr)
	all := fs.Bool("all", false, "run every experiment")
	jsonFile := fs.String("json", "", "also write the claims as JSON to this file")
	outDir := fs.String("out", "", "also write CSV files, PNG plots and an HTML page per experiment, and index.html, under this directory")
	seed := fs.Uint64("seed", 1, "seed of every simulated run")
	jitterCorr := fs.Duration("jitter-correlation", time.Duration(bench.Defaults().JitterCorrelationUs)*time.Microsecond,
		"correlation time of each inter-datacenter link's jitter in every run (0: independent per message)")
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	names := fs.Args()
	if len(names) == 1 && names[0] == "list" {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, e := range repro.List() {
			fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Title)
		}
		return tw.Flush()
	}
	var exps []repro.Experiment
	switch {
	case *all && len(names) > 0:
		return usagef("repro: give experiment names or --all, not both")
	case *all:
		exps = repro.List()
	case len(names) == 0:
		return usagef("repro: name an experiment (see 'meridian repro list') or give --all")
	}
	for _, n := range names {
		e, ok := repro.Lookup(n)
		if !ok {
			return usagef("repro: unknown experiment %q (see 'meridian repro list')", n)
		}
		exps = append(exps, e)
	}
	if *jitterCorr < 0 {
		return usagef("repro: --jitter-correlation must not be negative")
	}
	corrUs := jitterCorr.Microseconds()
	env := repro.Env{Seed: *seed, JitterCorrelationUs: &corrUs}
	var reports []*repro.Report
	start := time.Now()
	redraw := isTerminal(stderr)
	for i, e := range exps {
		if !*quiet {
			env.Progress = func(step string) {
				line := progressLine(i, len(exps), time.Since(start), step)
				if redraw {
					fmt.Fprint(stderr, "\r\033[K"+line)
				} else {
					fmt.Fprintln(stderr, line)
				}
			}
		}
		r, err := e.Run(env)
		if !*quiet && redraw {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		printReport(stdout, r)
		reports = append(reports, r)
		if *outDir != "" {
			// Written as each experiment ends, so that a long run's finished part is on disk.
			if err := repro.WriteExperiment(*outDir, r); err != nil {
				return err
			}
			if err := repro.WriteIndex(*outDir, reports); err != nil {
				return err
			}
		}
	}
	if *jsonFile != "" {
		return writeJSON(*jsonFile, map[string][]*repro.Report{"experiments": reports})
	}
	return nil
}

func printReport(w io.Writer, r *repro.Report) {
	fmt.Fprintf(w, "%s: %s\n", r.Name, r.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLAIM\tPAPER\tOURS\tVERDICT")
	matched := 0
	for _, c := range r.Claims {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Claim, c.Paper, c.Ours, c.Verdict)
		if c.Verdict == repro.Matches {
			matched++
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "  %d of %d claims match\n\n", matched, len(r.Claims))
}

// progressLine is the progress bar of `meridian repro` while experiment done+1 of n runs step:
// "[####................] 3/10 1m5s e4.1: helios-2, 60 virtual s".
func progressLine(done, n int, elapsed time.Duration, step string) string {
	const width = 20
	filled := width * done / max(n, 1)
	if r := []rune(step); len(r) > 70 {
		step = string(r[:69]) + "…"
	}
	return fmt.Sprintf("[%s%s] %d/%d %s %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		done+1, n, elapsed.Round(time.Second), step)
}

// isTerminal reports whether w is a terminal, where the progress line redraws itself in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
