package main

import (
	"fmt"
	"io"

	"text/tabwriter"
	"time"

	"github.com/meridian-kv/meridian/repro"
)

// runRepro implements `meridian repro list`, `meridian repro NAME...` and `meridian repro --all`.
func runRepro(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("repro", stderr)
	all := fs.Bool("all", false, "run every experiment")
	jsonFile := fs.String("json", "", "also write the claims as JSON to this file")
	seed := fs.Uint64("seed", 1, "seed of every simulated run")
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
	env := repro.Env{Seed: *seed}
	var reports []*repro.Report
	start := time.Now()
	for i, e := range exps {
		if !*quiet {
			env.Progress = func(step string) {
				fmt.Fprintf(stderr, "\r\033[K[%d/%d, %s elapsed] %s", i+1, len(exps), time.Since(start).Round(time.Second), step)
			}
		}
		r, err := e.Run(env)
		if !*quiet {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		printReport(stdout, r)
		reports = append(reports, r)
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
