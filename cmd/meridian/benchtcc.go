package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
)

// tccFlags are the flags of `meridian bench --workload tcc` (the FastCCS thesis's generator).
type tccFlags struct {
	partitions    *int
	keysPerROT    *int
	keysPerWOT    *int
	valueBytes    *int
	writeFraction *float64
	keysPerPart   *int
	cooldown      *time.Duration
}

// tccOnlyFlags and tycsbOnlyFlags are the flags that mean something for one workload only.
var (
	tccOnlyFlags   = []string{"partitions", "keys-per-rot", "keys-per-wot", "value-size", "write-fraction", "keys-per-partition", "cooldown"}
	tycsbOnlyFlags = []string{"keys", "theta", "ops", "read-ratio", "rate", "skew", "cpu-per-commit", "history"}
)

func addTCCFlags(fs *flag.FlagSet) *tccFlags {
	def := bench.TCCDefaults()
	return &tccFlags{
		partitions:    fs.Int("partitions", def.Partitions, "--workload tcc: partitions per datacenter"),
		keysPerROT:    fs.Int("keys-per-rot", def.Workload.KeysPerROT, "--workload tcc: keys per read-only transaction"),
		keysPerWOT:    fs.Int("keys-per-wot", def.Workload.KeysPerWOT, "--workload tcc: keys per write-only transaction"),
		valueBytes:    fs.Int("value-size", def.Workload.ValueBytes, "--workload tcc: value size in bytes"),
		writeFraction: fs.Float64("write-fraction", def.Workload.WriteFraction, "--workload tcc: share of transactions that are write-only"),
		keysPerPart:   fs.Int("keys-per-partition", def.Workload.KeysPerPartition, "--workload tcc: key space per partition"),
		cooldown:      fs.Duration("cooldown", time.Duration(def.CooldownUs)*time.Microsecond, "--workload tcc: virtual time at the end excluded from the measurements"),
	}
}

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// checkWorkloadFlags refuses flags that belong to the other workload.
func checkWorkloadFlags(set map[string]bool, workloadName string) error {
	wrong := tycsbOnlyFlags
	if workloadName != "tcc" {
		wrong = tccOnlyFlags
	}
	for _, name := range wrong {
		if set[name] {
			return usagef("bench: --%s does not apply to --workload %s", name, workloadName)
		}
	}
	return nil
}

// tccCommon is what the T-YCSB and TCC benchmarks share on the command line.
type tccCommon struct {
	topology, protocols, distribution, jsonFile string
	cluster, cert, key                          string // --cluster: a running cluster instead of the simulator
	service                                     sim.Service
	clients                                     int
	duration, warmup                            time.Duration
	seed                                        uint64
	jitter                                      float64
	quiet                                       bool
	faults, params                              []string
	set                                         map[string]bool
}

// runTCCBench runs `meridian bench --workload tcc`.
func runTCCBench(c tccCommon, f *tccFlags, stdout, stderr io.Writer) error {
	opts := bench.TCCDefaults()
	if c.set["topology"] {
		topo, err := loadTopology(c.topology, stderr)
		if err != nil {
			return err
		}
		opts.Topology = topo
	}
	protocols := []string{"fastccs", "eiger", "wren", "ec"}
	if c.set["protocols"] {
		protocols = splitList(c.protocols)
	}
	if len(protocols) == 0 {
		return usagef("bench: no protocols")
	}
	if c.set["clients-per-dc"] {
		opts.ClientsPerDC = c.clients
	}
	if c.set["duration"] || c.set["warmup"] || c.set["cooldown"] {
		opts.DurationUs, opts.WarmupUs, opts.CooldownUs = c.duration.Microseconds(), c.warmup.Microseconds(), f.cooldown.Microseconds()
	}
	opts.Seed, opts.Jitter, opts.Partitions, opts.Service = c.seed, c.jitter, *f.partitions, c.service
	w := &opts.Workload
	w.KeysPerROT, w.KeysPerWOT, w.ValueBytes, w.WriteFraction, w.KeysPerPartition = *f.keysPerROT, *f.keysPerWOT, *f.valueBytes, *f.writeFraction, *f.keysPerPart
	if c.set["distribution"] {
		w.Distribution = c.distribution
	}
	for _, spec := range c.faults {
		fault, err := sim.ParseFault(spec)
		if err != nil {
			return usageError{err}
		}
		opts.Faults = append(opts.Faults, fault)
	}
	var err error
	if opts.Params, err = parseParams(c.params); err != nil {
		return usageError{err}
	}
	if err := opts.Validate(); err != nil {
		return usageError{err}
	}
	if !c.quiet {
		opts.Progress = progressPrinter(stderr, len(protocols))
	}
	var results []*bench.TCCResult
	if c.cluster != "" {
		if c.set["protocols"] || c.set["partitions"] {
			return usagef("bench: --protocols and --partitions come from the cluster file with --cluster")
		}
		res, cfg, err := runTCCCluster(opts, c.cluster, c.cert, c.key)
		if err != nil {
			return err
		}
		protocols = nil
		results = append(results, res)
		opts.Topology, opts.Partitions = cfg.Topology, res.Partitions
	}
	for _, p := range protocols {
		res, err := bench.RunTCC(opts, p)
		if err != nil {
			return usageError{err}
		}
		if opts.Progress != nil {
			fmt.Fprint(stderr, "\r\033[K")
		}
		results = append(results, res)
	}
	printTCCResults(stdout, results, opts, c.cluster != "")
	if c.jsonFile != "" {
		runs := make([]tccRunJSON, len(results))
		for i, r := range results {
			runs[i] = tccRunJSON{TCCResult: r, Checker: checkerJSON{OK: r.Checker.OK, Anomalies: len(r.Checker.Anomalies)}}
		}
		if err := writeJSON(c.jsonFile, map[string][]tccRunJSON{"runs": runs}); err != nil {
			return err
		}
	}
	for _, r := range results {
		if !r.Checker.OK && !r.ExpectAnomalies {
			return fmt.Errorf("checker found anomalies in %s: %s\nreplay with: %s", r.Protocol, r.Checker.Summary(), r.Replay)
		}
	}
	return nil
}

// tccRunJSON is one run in --json: the result's fields (rot_rounds among them) and the
// checker's verdict in the same shape as the T-YCSB benchmark's.
type tccRunJSON struct {
	*bench.TCCResult
	Checker checkerJSON `json:"checker"`
}

// printTCCResults prints one row per protocol, throughput also relative to ec when it ran.
func printTCCResults(w io.Writer, results []*bench.TCCResult, opts bench.TCCOptions, real bool) {
	topo := "one datacenter"
	if opts.Topology != nil {
		topo = opts.Topology.Name
	}
	where := fmt.Sprintf("%s virtual (measured %s), seed %d", time.Duration(opts.DurationUs)*time.Microsecond,
		time.Duration(opts.DurationUs-opts.WarmupUs-opts.CooldownUs)*time.Microsecond, opts.Seed)
	if real {
		where = fmt.Sprintf("%s on a real cluster (measured %s)", time.Duration(opts.DurationUs)*time.Microsecond,
			time.Duration(opts.DurationUs-opts.WarmupUs-opts.CooldownUs)*time.Microsecond)
	}
	fmt.Fprintf(w, "TCC workload on %s: %d partitions, %d clients/DC, %d+%d keys per ROT+WOT, %d-byte values, %.0f%% writes, %s\n",
		topo, opts.Partitions, opts.ClientsPerDC, opts.Workload.KeysPerROT, opts.Workload.KeysPerWOT, opts.Workload.ValueBytes,
		100*opts.Workload.WriteFraction, where)
	ecTPS := 0.0
	if i := slices.IndexFunc(results, func(r *bench.TCCResult) bool { return r.Protocol == "ec" }); i >= 0 {
		ecTPS = results[i].ThroughputTPS
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\ttxn/s\tvs ec\tROT p50 ms\tROT p99 ms\tWOT p50 ms\tWOT p99 ms\tvisible ms p50/p99\t1 round\t2 rounds\t3 rounds\tcommit checks\tchecker\t")
	for _, r := range results {
		rel := "-"
		if ecTPS > 0 {
			rel = fmt.Sprintf("%.2f", r.ThroughputTPS/ecTPS)
		}
		pct := func(k string) string {
			if r.ROTs == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f%%", 100*float64(r.RotRounds[k])/float64(r.ROTs))
		}
		verdict := r.Checker.Summary()
		if r.Unfinished > 0 {
			verdict += fmt.Sprintf("; %d unfinished", r.Unfinished)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%d\t%s\t\n", r.Protocol, r.ThroughputTPS, rel,
			r.ROTLatency.P50, r.ROTLatency.P99, r.WOTLatency.P50, r.WOTLatency.P99, visibleCell(r), pct("1"), pct("2"), pct("3"), r.CommitChecks,
			strings.ReplaceAll(verdict, "\t", " "))
	}
	tw.Flush()
	for _, r := range results {
		if r.VisibilityDropped > 0 {
			fmt.Fprintf(w, "%s: %d visibility events dropped (bounded buffers); its visibility lag is a sample\n", r.Protocol, r.VisibilityDropped)
		}
	}
}

// visibleCell is the "visible ms p50/p99" column: the per-partition visibility lag (from a
// partition's local commit of a WOT until round-1 reads there return it), "0 (on commit)" for
// the protocols that make versions visible as they commit them, "-" when not measured (a real
// cluster, or no WOT committed in the window).
func visibleCell(r *bench.TCCResult) string {
	switch {
	case r.VisibilityMeasured > 0:
		return fmt.Sprintf("%.2f/%.2f", r.VisibilityLag.P50, r.VisibilityLag.P99)
	case r.VisibleOnCommit:
		return "0 (on commit)"
	}
	return "-"
}
