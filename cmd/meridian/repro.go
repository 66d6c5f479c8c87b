package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/tools/repro"
)

// reproOptions are the flags of `meridian repro`.
type reproOptions struct {
	all              bool
	jsonFile, outDir string
	seed             uint64
	jitterCorr       time.Duration
	quiet            bool
	alignedTimers    bool
	// docFile, if set, receives the reproduction document generated from docSource and the run,
	// compared with the saved runs docCompare (LABEL=FILE).
	docFile, docSource string
	docCompare         []string
}

// newReproCmd returns the repro command and its subcommand list.
func newReproCmd(stdout, stderr io.Writer) *cobra.Command {
	var o reproOptions
	cmd := &cobra.Command{
		Use:   "repro (NAME... | --all) [flags]",
		Short: "reproduce the papers' experiments and compare with their claims (list, NAME, --all, --out DIR)",
		Long: `Reproduce the papers' experiments (see 'meridian repro list') and print, for each, our figures
beside the paper's and a verdict per claim. --out DIR also writes each experiment's claims, data
and plots, and an index page, under DIR, as each experiment ends. On a terminal, a progress line
on stderr shows the running experiment and step (--quiet: none).`,
		Example: `  meridian repro list
  meridian repro e4.1 --out repro-out
  meridian repro --all --out repro-out --json claims.json`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeExperiments,
		RunE:              func(_ *cobra.Command, names []string) error { return runRepro(o, names, stdout, stderr) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.all, "all", false, "run every experiment")
	f.StringVar(&o.jsonFile, "json", "", "also write the claims and the measured series as JSON to this file")
	f.StringVar(&o.outDir, "out", "", "also write CSV files, PNG plots and an HTML page per experiment, and index.html, under this directory")
	f.Uint64Var(&o.seed, "seed", 1, "seed of every simulated run")
	f.DurationVar(&o.jitterCorr, "jitter-correlation", time.Duration(bench.Defaults().JitterCorrelationUs)*time.Microsecond,
		"correlation time of each inter-datacenter link's jitter in every run (0: independent per message)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress line")
	f.BoolVar(&o.alignedTimers, "aligned-timers", false, "start every node's periodic timers in phase at time 0 (default: a seeded random phase per node)")
	f.StringVar(&o.docFile, "doc", "", "also write the reproduction document (docs/REPRODUCTION.md) generated from --doc-source and this run")
	f.StringVar(&o.docSource, "doc-source", repro.DocSource, "the hand-written source of --doc: Markdown with {{claims \"NAME\"}}, {{summary \"NAME\"...}}, {{line \"NAME\"}} and {{total}}")
	f.StringArrayVar(&o.docCompare, "doc-compare", nil, "LABEL=FILE: a saved run (--json) that --doc's source compares with as {{tally \"LABEL\" NAME}} (repeatable)")
	_ = cmd.MarkFlagDirname("out")
	cmd.AddCommand(newReproDocCmd())
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "list the experiments",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			for _, e := range repro.List() {
				fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Title)
			}
			return tw.Flush()
		},
	})
	return cmd
}

// newReproDocCmd returns `meridian repro doc`: the reproduction document regenerated from a
// saved run (--json of `meridian repro --all`), without running anything.
func newReproDocCmd() *cobra.Command {
	var source, out string
	var jsonFiles, compare []string
	var partial bool
	cmd := &cobra.Command{
		Use:   "doc --json FILE... [--source SRC] [--out FILE]",
		Short: "generate docs/REPRODUCTION.md from a saved run's JSON and the hand-written source",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			var reports []*repro.Report
			for _, f := range jsonFiles {
				run, err := readReproRun(f)
				if err != nil {
					return err
				}
				reports = append(reports, run.Experiments...)
			}
			return writeReproDoc(source, out, reports, compare, partial)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&jsonFiles, "json", nil, "the run's claims, as `meridian repro --all --json FILE` wrote them; repeat it for a run made of several (deterministic, same seed) invocations")
	f.StringVar(&source, "source", repro.DocSource, "the hand-written source")
	f.StringVar(&out, "out", "docs/REPRODUCTION.md", "the document to write")
	f.BoolVar(&partial, "partial", false, "show the experiments the run lacks as not measured instead of failing (a run cut short)")
	f.StringArrayVar(&compare, "compare", nil, "LABEL=FILE: another saved run the source compares with as {{tally \"LABEL\" NAME}} (repeatable; files with one label make one run)")
	_ = cmd.MarkFlagRequired("json")
	return cmd
}

// readReproRun reads a run saved by `meridian repro --json FILE`.
func readReproRun(path string) (*repro.Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError{err}
	}
	var run repro.Run
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", path, err)}
	}
	return &run, nil
}

// writeReproDoc writes the reproduction document out from the source file and reports,
// compared with the saved runs compare (LABEL=FILE each); partial shows experiments reports
// lacks as not measured.
func writeReproDoc(source, out string, reports []*repro.Report, compare []string, partial bool) error {
	src, err := os.ReadFile(source)
	if err != nil {
		return usageError{err}
	}
	others := map[string][]*repro.Report{}
	for _, c := range compare {
		label, file, ok := strings.Cut(c, "=")
		if !ok || label == "" {
			return usagef("repro: a run to compare with is LABEL=FILE, got %q", c)
		}
		run, err := readReproRun(file)
		if err != nil {
			return err
		}
		others[label] = append(others[label], run.Experiments...)
	}
	var buf bytes.Buffer
	if err := repro.WriteDoc(&buf, string(src), reports, others, partial); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return usageError{fmt.Errorf("cannot write %s: %w", out, err)}
	}
	return nil
}

// completeExperiments completes the experiment names of `meridian repro`.
func completeExperiments(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	var names []string
	for _, e := range repro.List() {
		if !slices.Contains(args, e.Name) {
			names = append(names, e.Name+"\t"+e.Title)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// runRepro runs `meridian repro NAME...` and `meridian repro --all`.
func runRepro(o reproOptions, names []string, stdout, stderr io.Writer) error {
	var exps []repro.Experiment
	switch {
	case o.all && len(names) > 0:
		return usagef("repro: give experiment names or --all, not both")
	case o.all:
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
	if o.jitterCorr < 0 {
		return usagef("repro: --jitter-correlation must not be negative")
	}
	corrUs := o.jitterCorr.Microseconds()
	env := repro.Env{Seed: o.seed, JitterCorrelationUs: &corrUs, AlignedTimers: o.alignedTimers}
	var reports []*repro.Report
	start := time.Now()
	progress := !o.quiet && isTerminal(stderr) // a line that redraws itself in place
	for i, e := range exps {
		if progress {
			env.Progress = func(step string) {
				fmt.Fprint(stderr, "\r\033[K"+progressLine(i, len(exps), time.Since(start), step))
			}
		}
		r, err := e.RunSummarized(env)
		if progress {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		printReport(stdout, r)
		reports = append(reports, r)
		if o.outDir != "" {
			// Written as each experiment ends, so that a long run's finished part is on disk.
			if err := repro.WriteExperiment(o.outDir, r); err != nil {
				return err
			}
			if err := repro.WriteIndex(o.outDir, reports); err != nil {
				return err
			}
		}
	}
	total := repro.Summarize(reports...)
	if len(reports) > 1 {
		fmt.Fprintf(stdout, "all %d experiments: %s\n", len(reports), total)
	}
	if o.jsonFile != "" {
		if err := writeJSON(o.jsonFile, repro.Run{Experiments: reports, Summary: total}); err != nil {
			return err
		}
	}
	if o.docFile != "" {
		return writeReproDoc(o.docSource, o.docFile, reports, o.docCompare, false)
	}
	return nil
}

func printReport(w io.Writer, r *repro.Report) {
	fmt.Fprintf(w, "%s: %s\n", r.Name, r.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLAIM\tPAPER\tOURS\tTOLERANCE\tVERDICT")
	for _, c := range r.Claims {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Claim, c.Paper, c.Ours, c.Tolerance, c.Verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "  %s: %s\n\n", r.Name, repro.Summarize(r))
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
