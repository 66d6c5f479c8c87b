package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
	"github.com/meridian-kv/meridian/ml/svm"
	"github.com/meridian-kv/meridian/ml/train"
)

// mlOptions are the flags of `meridian ml`.
type mlOptions struct {
	dataset, testFile, scale, planning string
	schemes, workers                   string
	epochs, chunk                      int
	seed                               uint64
	lambda                             float64
	striped, check, quiet              bool
	jsonFile, saveFile, cpuProfile     string
}

const mlLong = `Train a sparse linear SVM by SGD (step 0.1, times 0.9 after every epoch) with COP, conflict
order planning (spec cop.md), and its baselines on the same iterations: locking, occ, ideal
(Hogwild!, not serializable) and serial (the reference). Every scheme but ideal is serializable;
COP's model is bitwise the serial one.

--dataset is a generator shaped like the paper's data (kdd-like, kddb-like, imdb-like, hotspot:H with H
features in the hot spot, e.g. hotspot:1K), at --scale ci (at most 100,000 samples, the
default) or full (the paper's size), or a LIBSVM/svmlight file (--test: a held-out file;
otherwise accuracy is measured on the training set).

It prints the loading and planning times, each run's throughput (samples per second over the
epochs, loading and planning excluded) and the held-out accuracy and training loss after every
epoch. --planning says where COP's plan is made: offline (one pass after loading), fused (while
loading), first-epoch (COP's first epoch runs under locking and records the plan) or sources:N
(N collection sites plan their share, the central site transposes). --check records each run's
last epoch and runs the serializability checker on it: exit status 1 if a serializable scheme
fails it.`

// newMLCmd returns the ml command.
func newMLCmd(stdout, stderr io.Writer) *cobra.Command {
	var o mlOptions
	cmd := &cobra.Command{
		Use:   "ml [flags]",
		Short: "train an SVM with COP and its baselines (locking, occ, ideal, serial)",
		Long:  mlLong,
		Example: `  meridian ml --dataset kdd-like --scheme cop,locking,occ,ideal --workers 2
  meridian ml --dataset hotspot:1K --workers 1,2 --epochs 5 --json out.json
  meridian ml --dataset imdb-like --scale full --scheme serial,cop --check
  meridian ml --dataset train.libsvm --test test.libsvm --scheme serial,cop --planning fused`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runML(o, stdout, stderr) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dataset, "dataset", "kdd-like", "kdd-like, kddb-like, imdb-like, hotspot:H or a LIBSVM file")
	f.StringVar(&o.testFile, "test", "", "held-out LIBSVM file for a --dataset file")
	f.StringVar(&o.scale, "scale", "ci", "generated dataset size: ci (at most 100,000 samples) or full (the paper's; kdd-like then takes about 10 GB)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the generated dataset")
	f.StringVar(&o.schemes, "scheme", "cop,locking,occ,ideal", "comma-separated schemes: "+strings.Join(cop.SchemeNames(), ", "))
	f.StringVar(&o.workers, "workers", strconv.Itoa(runtime.GOMAXPROCS(0)), "worker goroutines, or a comma-separated list (serial always runs one)")
	f.IntVar(&o.epochs, "epochs", svm.Epochs, "epochs per run")
	f.StringVar(&o.planning, "planning", "offline", "where COP's plan is made: offline, fused, first-epoch or sources:N")
	f.Float64Var(&o.lambda, "lambda", svm.DefaultLambda, "regularization weight λ")
	f.IntVar(&o.chunk, "chunk", 0, "consecutive transactions a worker takes at a time (0: 4, and COP's chosen from its plan: 256 where the plan is one chain)")
	f.BoolVar(&o.striped, "striped", false, "deal the chunks to workers round robin ahead of time instead of through a shared counter")
	f.BoolVar(&o.check, "check", false, "record each run's last epoch and check its serializability (slow; that epoch is left out of the throughput)")
	f.StringVar(&o.jsonFile, "json", "", "write the runs as JSON to this file")
	f.StringVar(&o.saveFile, "save", "", "write the training set to this LIBSVM file (and a held-out set to FILE.test); with --scheme '' nothing is trained")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file (go tool pprof)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress line (there is none unless stderr is a terminal)")
	_ = cmd.RegisterFlagCompletionFunc("scheme", cobra.FixedCompletions(cop.SchemeNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("scale", cobra.FixedCompletions([]string{"full", "ci"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("planning", cobra.FixedCompletions([]string{"offline", "fused", "first-epoch", "sources:4"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// mlRun is one run to do: a scheme with a number of workers.
type mlRun struct {
	scheme  cop.Scheme
	workers int
}

// mlJSON is the --json file.
type mlJSON struct {
	Dataset  string          `json:"dataset"`
	Planning string          `json:"planning"`
	LoadS    float64         `json:"load_s"`
	PlanS    float64         `json:"plan_s"`
	AdmitS   float64         `json:"admit_s,omitempty"`
	Runs     []*train.Result `json:"runs"`
}

// runML runs `meridian ml`.
func runML(o mlOptions, stdout, stderr io.Writer) error {
	runs, err := mlRuns(o)
	if err != nil {
		return err
	}
	switch {
	case len(runs) == 0 && o.saveFile == "":
		return usagef("ml: no scheme to run (--scheme is empty)")
	case o.epochs < 1:
		return usagef("ml: --epochs must be at least 1")
	case o.chunk < 0:
		return usagef("ml: --chunk must be at least 0")
	}
	scale, err := dataset.ParseScale(o.scale)
	if err != nil {
		return usagef("ml: --scale: %v", err)
	}
	planning, err := train.ParsePlanning(o.planning)
	if err != nil {
		return usagef("ml: --planning: %v", err)
	}
	cpus := runtime.GOMAXPROCS(0)
	for _, r := range runs {
		if r.workers > cpus {
			fmt.Fprintf(stderr, "meridian: warning: %d workers on %d CPUs take turns: throughput above %d workers is not measurable here\n", r.workers, cpus, cpus)
			break
		}
	}
	d, err := train.Load(train.Input{Dataset: o.dataset, Scale: scale, Seed: o.seed, TestFile: o.testFile, Planning: planning})
	if err != nil {
		return usagef("ml: %v", err)
	}
	printMLData(stdout, o, d)
	if o.saveFile != "" {
		if err := saveML(o.saveFile, d); err != nil {
			return err
		}
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	progress := !o.quiet && isTerminal(stderr) // a line that redraws itself in place
	var results []*train.Result
	for i, r := range runs {
		opts := train.Options{Epochs: o.epochs, Lambda: o.lambda, Chunk: o.chunk, Striped: o.striped, Check: o.check}
		if progress {
			opts.Progress = func(epoch int) {
				fmt.Fprintf(stderr, "\r\033[Krunning %s with %d workers [%d/%d]: epoch %d/%d", r.scheme, r.workers, i+1, len(runs), epoch, o.epochs)
			}
		}
		res, err := train.Run(d, r.scheme, r.workers, opts)
		if progress {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	if len(results) > 0 {
		printMLResults(stdout, results)
	}
	if o.jsonFile != "" {
		out := mlJSON{Dataset: o.dataset, Planning: planning.String(), LoadS: d.LoadDuration.Seconds(), PlanS: d.PlanDuration.Seconds(),
			AdmitS: d.AdmitDuration.Seconds(), Runs: results}
		if err := writeJSON(o.jsonFile, out); err != nil {
			return err
		}
	}
	for _, r := range results {
		if r.Checker != nil && !r.Checker.OK && !r.Checker.Expected {
			return fmt.Errorf("%s with %d workers is not serializable: %s", r.Scheme, r.Workers, r.Checker.Summary)
		}
	}
	return nil
}

// mlRuns returns the runs the flags ask for: every scheme with every worker count, serial once.
func mlRuns(o mlOptions) ([]mlRun, error) {
	var workers []int
	for _, s := range splitList(o.workers) {
		w, err := strconv.Atoi(s)
		if err != nil || w < 1 {
			return nil, usagef("ml: --workers: %q is not a positive number", s)
		}
		workers = append(workers, w)
	}
	if len(workers) == 0 {
		return nil, usagef("ml: --workers: no worker count")
	}
	var runs []mlRun
	for _, name := range splitList(o.schemes) {
		s, err := cop.ParseScheme(name)
		if err != nil {
			return nil, usagef("ml: --scheme: %v", err)
		}
		if s == cop.Serial {
			runs = append(runs, mlRun{s, 1})
			continue
		}
		for _, w := range workers {
			runs = append(runs, mlRun{s, w})
		}
	}
	return runs, nil
}

// printMLData describes the loaded data and the loading and planning times.
func printMLData(w io.Writer, o mlOptions, d *train.Data) {
	if d.Shape != nil {
		fmt.Fprintf(w, "%s (scale %s, seed %d)\n", d.Shape, o.scale, o.seed)
	} else {
		fmt.Fprintf(w, "%s: %d training samples, %d features, %.1f non-zeros per sample\n", o.dataset, d.Train.Len(), d.Train.NumFeatures,
			float64(d.Train.NNZ())/float64(d.Train.Len()))
	}
	if !d.HeldOut {
		fmt.Fprintln(w, "no held-out set: accuracy is measured on the training set")
	}
	secs := func(t time.Duration) string { return fmt.Sprintf("%.3f s", t.Seconds()) }
	share := func(t time.Duration) string {
		return fmt.Sprintf("%.1f%% of loading", 100*t.Seconds()/d.LoadDuration.Seconds())
	}
	switch d.Planning.Mode {
	case train.Offline:
		fmt.Fprintf(w, "loaded in %s; planned offline in %s (%s)\n", secs(d.LoadDuration), secs(d.PlanDuration), share(d.PlanDuration))
	case train.Fused:
		fmt.Fprintf(w, "loaded and planned (fused) in %s\n", secs(d.LoadDuration))
	case train.FirstEpoch:
		fmt.Fprintf(w, "loaded in %s; COP plans during its first epoch, under locking\n", secs(d.LoadDuration))
	case train.Sources:
		fmt.Fprintf(w, "loaded in %s; planned at %d sources in %s (%s), transposed at the central site in %s\n", secs(d.LoadDuration),
			d.Planning.Sources, secs(d.PlanDuration), share(d.PlanDuration), secs(d.AdmitDuration))
	}
}

// printMLResults prints the accuracy after every epoch, one column per run, then one line per
// run: throughput, final accuracy and loss, OCC restarts, the model's hash and the checker.
func printMLResults(w io.Writer, results []*train.Result) {
	name := func(r *train.Result) string { return fmt.Sprintf("%s/%d", r.Scheme, r.Workers) }
	fmt.Fprintln(w, "\naccuracy after each epoch (* ran under locking to plan; r recorded for --check):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "epoch\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t", name(r))
	}
	fmt.Fprintln(tw)
	for e := range results[0].Epochs {
		fmt.Fprintf(tw, "%d\t", e+1)
		for _, r := range results {
			mark := ""
			if ep := r.Epochs[e]; ep.Scheme != r.Scheme {
				mark = "*"
			} else if ep.Recorded {
				mark = "r"
			}
			fmt.Fprintf(tw, "%.4f%s\t", r.Epochs[e].Accuracy, mark)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	serialHash := ""
	for _, r := range results {
		if r.Scheme == cop.Serial.String() {
			serialHash = r.ModelSHA256
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scheme\tworkers\tsamples/s\taccuracy\tloss\trestarts/epoch\tmodel sha256\tchecker")
	for _, r := range results {
		restarts := int64(0)
		for _, e := range r.Epochs {
			restarts += e.Restarts
		}
		hash := r.ModelSHA256[:16]
		if serialHash != "" && r.ModelSHA256 == serialHash && r.Scheme != cop.Serial.String() {
			hash += " (= serial)"
		}
		verdict := "-"
		if r.Checker != nil {
			verdict = r.Checker.Summary
			if r.Checker.Expected && !r.Checker.OK {
				verdict += " (expected: not serializable)"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.4f\t%.4f\t%d\t%s\t%s\n", r.Scheme, r.Workers, humanRate(r.SamplesPerSec), r.Accuracy, r.Loss,
			restarts/int64(len(r.Epochs)), hash, verdict)
	}
	tw.Flush()
}

// humanRate renders a rate with three significant digits: "1.23M", "456k".
func humanRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// saveML writes the training set to path and a held-out set to path.test, in LIBSVM format.
func saveML(path string, d *train.Data) error {
	type file struct {
		path string
		data *dataset.Dataset
	}
	files := []file{{path, d.Train}}
	if d.HeldOut {
		files = append(files, file{path + ".test", d.Test})
	}
	for _, f := range files {
		out, err := os.Create(f.path)
		if err != nil {
			return usageError{fmt.Errorf("cannot write %s: %w", f.path, err)}
		}
		if err := errors.Join(dataset.WriteLIBSVM(out, f.data), out.Close()); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return nil
}
