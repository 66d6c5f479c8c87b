package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/tools/nemesis"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// benchFlags are the flags of `meridian bench`.
type benchFlags struct {
	topology, protocols, workload, distribution string
	clients, partitions                         int
	nodesPerDC                                  int
	duration, warmup, cooldown                  time.Duration
	seed                                        uint64
	keys, ops                                   int
	roClients, roKeys                           int
	roRate                                      float64
	theta, readRatio                            float64
	keysPerROT, keysPerWOT, valueBytes          int
	writeFraction                               float64
	moveFraction                                float64
	keysPerPartition                            int
	replicas, itemsPerPartition                 int
	globalFraction, roFraction                  float64
	rate, jitter                                float64
	retry                                       bool
	retryBackoff                                time.Duration
	jitterCorrelation                           time.Duration
	skew                                        string
	cpuPerMessage, cpuPerRequest, cpuPerCommit  time.Duration
	jsonFile, historyFile, cpuProfile           string
	quiet                                       bool
	logCapacity                                 bool
	parallel                                    int
	heapBudgetMiB                               int
	cluster, cert, key, nemesis                 string
	faults, params                              []string
	smr                                         smrFlags
}

// workloadOnlyFlags are the flags that mean something for one workload only.
var workloadOnlyFlags = map[string][]string{
	"tycsb":  {"keys", "theta", "ops", "read-ratio", "ro-clients-per-dc", "ro-keys", "ro-rate"},
	"tcc":    {"partitions", "keys-per-rot", "keys-per-wot", "value-size", "write-fraction", "keys-per-partition"},
	"micro":  {"partitions", "replicas", "global-fraction", "ro-fraction", "items-per-partition"},
	"social": {"partitions", "replicas"},
}

const benchLong = `Run a workload on one or more protocols in the simulator, or with --cluster against a running
cluster, and print per-datacenter commit latency, throughput, aborts and the checker's verdict.

With no flags it runs the main job: T-YCSB (50,000 keys, Zipfian 0.99, 5 operations, 50% reads)
with 12 closed-loop clients per datacenter on aws-helios against helios-0, helios-1, helios-2,
helios-b and mf, 60 virtual seconds each.

--workload tcc runs the FastCCS thesis's read-only and write-only transactions on a partitioned
store (defaults: one datacenter of 8 partitions, 32 clients, fastccs, eiger, wren and ec, 20
virtual seconds of which the middle 10 are measured). Without --workload the protocols' family
picks it: tycsb for read-write protocols, tcc for the transactional-causal ones, micro for the
partitioned read-write ones.

--workload micro runs S-DUR's microbenchmark (seed 003: read x, read y, write x, write y; a
--global-fraction of the transactions take y from another partition) on --partitions partitions
of --replicas replicas (defaults: sdur-wan1 with the spec's WAN 1 placement, 2 × 3, 10% globals,
8 clients in each home datacenter, sdur, sdur-delay, sdur-threshold and sdur-votebcast, 20
virtual seconds of which the middle 10 are measured). On another topology the replicas are
spread round robin over its datacenters. --workload social runs the spec's social network (85%
Timeline, 7.5% Post, 7.5% Follow) on the same deployment.

--workload tpcc and --workload bank run ALVIN's workloads (spec alvin.md §7.2) on read-write
protocols (defaults: helios-1, mf, rc, 2pc-paxos and ogre, retrying aborted transactions): an
object TPC-C whose consistency conditions are checked at the end of every run, with a table per
transaction type, and bank transfers audited during the run and at its end (--calibrate finds
the account count for 10-20% aborts per protocol).

--json writes every run in one shape (docs/RESULTS.md); --history writes the recorded history
as JSON Lines (docs/HISTORY.md), one file per protocol when several run (FILE gets the
protocol's name before its extension). Exit status: 0 if every run is good, 1 if the checker
found an anomaly the protocol's consistency forbids, 2 for bad flags or files.`

// newBenchCmd returns the bench command.
func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &benchFlags{}
	def := bench.Defaults()
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "run a workload on protocols in the simulator or against a cluster (no flags: the main job)",
		Long:  benchLong,
		Example: `  meridian bench
  meridian bench --protocols helios-0,mf --duration 20s --json out.json
  meridian bench --protocols helios-1 --fault crash:S@10s-20s --set gt=500ms
  meridian bench --workload tcc --partitions 8 --protocols fastccs,eiger,wren,ec --history h.jsonl
  meridian bench --cluster /tmp/mc/cluster.yaml --duration 20s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd.Flags(), f, stdout, stderr) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.topology, "topology", "aws-helios", "topology preset ("+strings.Join(topology.PresetNames(), ", ")+") or YAML/JSON file (tcc: one datacenter)")
	fs.StringVar(&f.protocols, "protocols", strings.Join(def.Protocols, ","), "comma-separated protocols ("+strings.Join(registry.Names(), ", ")+")")
	fs.StringVar(&f.workload, "workload", "tycsb", "tycsb (read-write transactions), tcc (read-only and write-only transactions on a partitioned store), tpcc or bank (interactive read-write transactions, retried until they commit), log (512-byte appends to the Chariots shared log; --set its stage counts), hyksos (puts, gets and GET_TXNs of the Hyksos key-value store on the log: --keys, --read-ratio, --ops keys per GET_TXN; in the simulator, or with --cluster on a running flstore or chariots cluster); default: the one the protocols' family runs")
	fs.IntVar(&f.clients, "clients-per-dc", def.ClientsPerDC, "clients per datacenter, one outstanding transaction each (tcc: 32)")
	fs.IntVar(&f.nodesPerDC, "nodes-per-dc", 1, "full-replication protocols in the simulator: full replicas per site of --topology, 0.5 ms apart (site S's node k is datacenter S_k; ALVIN spec's 1 or 3)")
	fs.IntVar(&f.partitions, "partitions", bench.TCCDefaults().Partitions, "tcc: partitions per datacenter; micro: partitions (2)")
	micro := workload.DefaultMicro()
	fs.IntVar(&f.replicas, "replicas", 3, "micro: replicas of every partition")
	fs.Float64Var(&f.globalFraction, "global-fraction", micro.GlobalFraction, "micro: share of global transactions (two partitions)")
	fs.Float64Var(&f.roFraction, "ro-fraction", micro.ReadOnlyFraction, "micro: share of snapshot read-only transactions")
	fs.IntVar(&f.itemsPerPartition, "items-per-partition", micro.ItemsPerPartition, "micro: items per partition")
	fs.DurationVar(&f.duration, "duration", time.Duration(def.DurationUs)*time.Microsecond, "how long clients start transactions, virtual time in the simulator (tcc: 20s)")
	fs.DurationVar(&f.warmup, "warmup", time.Duration(def.WarmupUs)*time.Microsecond, "time at the start excluded from the measurements (tcc: 5s)")
	fs.DurationVar(&f.cooldown, "cooldown", 0, "time at the end excluded from the measurements (tcc: 5s)")
	fs.Uint64Var(&f.seed, "seed", def.Seed, "seed of the run's pseudo-random numbers")
	tycsb, tcc := workload.DefaultTYCSB(), workload.DefaultTCC()
	fs.IntVar(&f.keys, "keys", tycsb.Keys, "tycsb: number of keys")
	fs.StringVar(&f.distribution, "distribution", tycsb.Distribution, "key distribution: tycsb zipfian or uniform; tcc gaussian (its default) or uniform")
	fs.Float64Var(&f.theta, "theta", tycsb.Theta, "tycsb: Zipfian skew in (0,1)")
	fs.IntVar(&f.ops, "ops", tycsb.OpsPerTxn, "tycsb: operations per transaction (distinct keys)")
	fs.Float64Var(&f.readRatio, "read-ratio", tycsb.ReadRatio, "tycsb: probability that an operation is a read")
	fs.IntVar(&f.roClients, "ro-clients-per-dc", 0, "tycsb: read-only clients per datacenter besides the read-write ones, on protocols with serializable snapshots (ogre)")
	fs.IntVar(&f.roKeys, "ro-keys", 50, "tycsb: distinct keys per read-only transaction")
	fs.Float64Var(&f.roRate, "ro-rate", 0, "tycsb: read-only transactions per second per read-only client (0: back to back)")
	fs.IntVar(&f.keysPerROT, "keys-per-rot", tcc.KeysPerROT, "tcc: keys per read-only transaction")
	fs.IntVar(&f.keysPerWOT, "keys-per-wot", tcc.KeysPerWOT, "tcc: keys per write-only transaction")
	fs.IntVar(&f.valueBytes, "value-size", tcc.ValueBytes, "tcc: value size in bytes")
	fs.Float64Var(&f.writeFraction, "write-fraction", tcc.WriteFraction, "tcc: share of transactions that are write-only")
	fs.Float64Var(&f.moveFraction, "move-fraction", 0, "tcc: chance that a client moves to another datacenter before a transaction, waiting until that datacenter covers its past (fastccs-geo)")
	fs.IntVar(&f.keysPerPartition, "keys-per-partition", tcc.KeysPerPartition, "tcc: key space per partition")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: transactions per second per client (0: closed loop)")
	fs.BoolVar(&f.retry, "retry", false, "re-run an aborted transaction (same operations, same keys) until it commits; the table adds end-to-end latency and attempts per commit (on by default for tpcc and bank, with a 10ms backoff base)")
	fs.DurationVar(&f.retryBackoff, "retry-backoff", 0, "with --retry: base of the exponential backoff with full jitter before each new attempt (the n-th waits up to base·2^(n-1), at most 10s)")
	fs.Float64Var(&f.jitter, "jitter", def.Jitter, "scale of the topology's RTT standard deviations (0: exact delays)")
	fs.DurationVar(&f.jitterCorrelation, "jitter-correlation", time.Duration(def.JitterCorrelationUs)*time.Microsecond,
		"correlation time of each inter-datacenter link's jitter (0: independent per message)")
	fs.StringVar(&f.skew, "skew", "", "clock offsets per datacenter, e.g. V=+100ms,O=-60ms (positive: ahead)")
	fs.DurationVar(&f.cpuPerMessage, "cpu-per-message", 0, "service-time model: CPU per received peer message")
	fs.DurationVar(&f.cpuPerRequest, "cpu-per-request", 0, "service-time model: CPU per client request")
	fs.DurationVar(&f.cpuPerCommit, "cpu-per-commit", 0, "service-time model: extra CPU per commit request")
	fs.StringArrayVar(&f.faults, "fault", nil, "scheduled fault, repeatable: crash:DC@10s-20s, partition:A-B@5s-8s, slow:A-B+100ms@5s-8s; a single node: crash-node:3@1s-2s, cut-nodes:2-5@1s-3s")
	fs.StringArrayVar(&f.params, "set", nil, "protocol parameter, repeatable: name=value (e.g. gt=500ms, interval=10ms, interval.C=50ms)")
	fs.StringVar(&f.jsonFile, "json", "", "write the results as JSON to this file (docs/RESULTS.md)")
	fs.StringVar(&f.historyFile, "history", "", "write the recorded history as JSON Lines to this file (docs/HISTORY.md)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress line (there is none unless stderr is a terminal)")
	fs.IntVar(&f.heapBudgetMiB, "heap-budget-mib", 0, fmt.Sprintf("soft bound on the heap, in MiB: the garbage collector's headroom shrinks as the live heap nears it, and runs side by side (--parallel) pause while the live heap is above a quarter of it; 0: %d for --workload tcc, %d otherwise", tccHeapBudgetMiB, defaultHeapBudgetMiB))
	fs.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "simulate up to this many protocols at once (results are the same; 1: one after the other)")
	fs.StringVar(&f.cluster, "cluster", "", "run against the running cluster of this file instead of the simulator (its protocol, topology, partitions and parameters)")
	fs.StringVar(&f.nemesis, "nemesis", "", "with --cluster: faults to inject during the run, comma-separated KIND:TARGET@START-END: kill:A@2s-4s (SIGKILL, restart), pause:B@5s-6s (SIGSTOP, SIGCONT), cut:A-B@1s-3s, skew:C+200ms@2s-5s (cut and skew need cluster up --admin); then every acknowledged commit must be installed")
	fs.StringVar(&f.cert, "cert", "", "with --cluster on a TLS cluster: client certificate (PEM) signed by the cluster CA")
	fs.StringVar(&f.key, "key", "", "with --cluster on a TLS cluster: the client certificate's key (PEM)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.BoolVar(&f.logCapacity, "capacity", false, "log, hyksos: the calibrated capacity model: each stage machine's measured CPU cost per record, a 1 Gb/s interface per machine (logsim.Calibrated)")
	addSMRFlags(fs, &f.smr)
	_ = cmd.RegisterFlagCompletionFunc("protocols", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return registry.Names(), cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("workload", cobra.FixedCompletions(workload.Names(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// runBench builds the run's options from the flags, runs every protocol and reports.
func runBench(fs *pflag.FlagSet, f *benchFlags, stdout, stderr io.Writer) error {
	if f.workload == logWorkload || f.workload == hyksosWorkload {
		return runLogBench(fs, f, stdout, stderr)
	}
	var cfg *cluster.Config
	if f.cluster != "" {
		for _, name := range []string{"protocols", "topology", "partitions", "set", "fault", "skew", "jitter", "jitter-correlation", "calibrate"} {
			if fs.Changed(name) {
				return usagef("bench: --%s does not apply to --cluster: the cluster file and its running nodes decide it", name)
			}
		}
		var err error
		if cfg, err = cluster.Load(f.cluster); err != nil {
			return usageError{err}
		}
	}
	protocols := splitList(f.protocols)
	if cfg != nil {
		protocols = []string{cfg.Protocol}
	}
	wl, err := pickWorkload(fs, f.workload, protocols)
	if err != nil {
		return err
	}
	for _, other := range slices.Sorted(maps.Keys(workloadOnlyFlags)) {
		for _, name := range workloadOnlyFlags[other] {
			if other != wl && fs.Changed(name) && !slices.Contains(workloadOnlyFlags[wl], name) {
				return usagef("bench: --%s does not apply to --workload %s", name, wl)
			}
		}
	}
	opts, err := benchOptions(fs, f, wl, protocols, stderr)
	if err != nil {
		return err
	}
	if f.parallel < 1 {
		return usagef("bench: --parallel must be at least 1, got %d", f.parallel)
	}
	if !f.quiet && isTerminal(stderr) {
		opts.Progress = progressPrinter(stderr, len(opts.Protocols))
	}
	budgetMiB := f.heapBudgetMiB
	switch {
	case budgetMiB < 0:
		return usagef("bench: --heap-budget-mib must not be negative, got %d", budgetMiB)
	case budgetMiB == 0 && wl == "tcc":
		budgetMiB = tccHeapBudgetMiB
	case budgetMiB == 0:
		budgetMiB = defaultHeapBudgetMiB
	}
	tuneSimulationGC(int64(budgetMiB) << 20)
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	runOne := func(p string, pace func()) (*bench.Result, error) {
		opts := opts
		opts.Pace = pace
		res, err := runSim(&f.smr, opts, p)
		if err != nil {
			return nil, usageError{err} // a simulated run fails only on its configuration
		}
		return res, nil
	}
	var nemesisReport *nemesis.Report
	if cfg != nil {
		cert, err := clusterCertificate(cfg, f.cert, f.key)
		if err != nil {
			return err
		}
		runOne = func(string, func()) (*bench.Result, error) {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.RunCluster(ctx, opts, cfg, cert)
		}
		if f.nemesis != "" {
			faults, err := nemesis.ParseSchedule(f.nemesis, cfg, opts.DurationUs)
			if err != nil {
				return usageError{err}
			}
			binary, err := os.Executable()
			if err != nil {
				return fmt.Errorf("cannot find the meridian binary to restart nodes: %w", err)
			}
			runOne = func(string, func()) (*bench.Result, error) {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				report, err := nemesis.Run(ctx, nemesis.Options{Cluster: cfg, Binary: binary, Bench: opts, Faults: faults, ClientCert: cert, Log: stderr})
				if err != nil {
					return nil, err
				}
				nemesisReport = report
				return report.Result, nil
			}
		}
	} else if f.nemesis != "" {
		return usagef("bench: --nemesis needs --cluster: it injects faults into a running cluster")
	}
	parallel := f.parallel
	if cfg != nil {
		parallel = 1 // one cluster, one run
	}
	results := make([]*bench.Result, 0, len(opts.Protocols))
	gate := newMemoryGate(uint64(budgetMiB) << 20 / 4)
	err = runInOrder(len(opts.Protocols), parallel, func(i int) (*bench.Result, error) {
		gate.start(i)
		defer gate.finish(i)
		return runOne(opts.Protocols[i], func() { gate.pace(i) })
	},
		func(res *bench.Result) {
			if opts.Progress != nil {
				fmt.Fprint(stderr, "\r\033[K")
			}
			results = append(results, res)
			if res.TCC() == nil {
				printResult(stdout, res, opts, cfg != nil)
				printSMRMetrics(stdout, res)
			}
		})
	if err != nil {
		return err
	}
	if results[0].TCC() != nil {
		printTCCResults(stdout, results, opts, cfg != nil)
	}
	if f.jsonFile != "" {
		if err := writeFile(f.jsonFile, func(w io.Writer) error { return bench.WriteJSON(w, results) }); err != nil {
			return err
		}
	}
	if f.historyFile != "" {
		for _, r := range results {
			path := f.historyFile
			if len(results) > 1 {
				ext := filepath.Ext(path)
				path = strings.TrimSuffix(path, ext) + "." + r.Protocol + ext
			}
			if err := writeFile(path, func(w io.Writer) error { return history.WriteJSONL(w, r.History) }); err != nil {
				return err
			}
		}
	}
	if nemesisReport != nil {
		fmt.Fprintf(stdout, "nemesis: %d actions, %d failed, %d acknowledged commits lost\n",
			len(nemesisReport.Injected), len(nemesisReport.Failed), len(nemesisReport.LostCommits))
		if err := nemesisReport.Problem(); err != nil {
			return err
		}
	}
	for _, r := range results {
		if err := r.Problem(); err != nil {
			return fmt.Errorf("%w\nreplay with: %s", err, r.Replay)
		}
	}
	return nil
}

// runInOrder runs run(0) … run(n-1) on up to parallel goroutines and hands each result to
// report in index order, as soon as it and every earlier one are done. Simulated runs are
// independent and deterministic, so running them side by side changes nothing but the wall
// time. It returns the first error in index order.
func runInOrder(n, parallel int, run func(i int) (*bench.Result, error), report func(*bench.Result)) error {
	type outcome struct {
		res *bench.Result
		err error
	}
	done := make([]chan outcome, n)
	for i := range done {
		done[i] = make(chan outcome, 1)
	}
	slots := make(chan struct{}, max(parallel, 1))
	go func() {
		for i := range n {
			slots <- struct{}{}
			go func() {
				res, err := run(i)
				done[i] <- outcome{res, err}
				<-slots
			}()
		}
	}()
	var first error
	for i := range n {
		o := <-done[i]
		switch {
		case first != nil:
		case o.err != nil:
			first = o.err
		default:
			report(o.res)
		}
	}
	return first
}

// pickWorkload returns the name of the run's workload: --workload if given, else the one the
// protocols' family runs.
func pickWorkload(fs *pflag.FlagSet, name string, protocols []string) (string, error) {
	if fs.Changed("workload") || len(protocols) == 0 {
		if _, err := workload.Lookup(name); err != nil {
			return "", usagef("bench: --workload: %v", err)
		}
		return name, nil
	}
	var family registry.Family
	for _, p := range protocols {
		e, err := registry.Lookup(p)
		if err != nil {
			return "", usagef("bench: %v", err)
		}
		if family != "" && e.Family != family {
			return "", usagef("bench: %s is a %s protocol and %s a %s one: no workload runs on both", protocols[0], family, p, e.Family)
		}
		family = e.Family
	}
	if family == registry.Log {
		return "", usagef("bench: %s is a shared log: bench it with --workload log in the simulator (chariots), or with `meridian log bench --cluster FILE` on a real cluster", protocols[0])
	}
	w, err := workload.ForFamily(family)
	if err != nil {
		return "", usagef("bench: %v", err)
	}
	return w.Name(), nil
}

// benchOptions turns the flags into the run's options: the workload's defaults, overridden by
// every flag given.
func benchOptions(fs *pflag.FlagSet, f *benchFlags, wl string, protocols []string, stderr io.Writer) (bench.Options, error) {
	opts := bench.Defaults()
	if smr, ok := smrDefaults(&f.smr, wl); ok {
		opts = smr
	} else if wl == "tcc" {
		opts = bench.TCCDefaults()
		w := opts.Workload.(workload.TCC)
		w.KeysPerROT, w.KeysPerWOT, w.ValueBytes, w.WriteFraction, w.KeysPerPartition = f.keysPerROT, f.keysPerWOT, f.valueBytes, f.writeFraction, f.keysPerPartition
		w.MoveFraction = f.moveFraction
		if fs.Changed("distribution") {
			w.Distribution = f.distribution
		}
		opts.Workload, opts.Partitions = w, f.partitions
	} else if wl == "micro" || wl == "social" {
		opts = bench.MicroDefaults()
		opts.Workload = workload.Micro{ItemsPerPartition: f.itemsPerPartition, GlobalFraction: f.globalFraction,
			ReadOnlyFraction: f.roFraction, ValueBytes: workload.DefaultMicro().ValueBytes}
		if wl == "social" {
			opts.Workload = workload.DefaultSocial()
		}
		if fs.Changed("partitions") {
			opts.Partitions = f.partitions
		}
		opts.Replicas = f.replicas
	} else {
		opts.Workload = workload.TYCSB{Keys: f.keys, Distribution: f.distribution, Theta: f.theta, OpsPerTxn: f.ops, ReadRatio: f.readRatio,
			ReadOnlyClientsPerDC: f.roClients, ReadOnlyKeys: f.roKeys, ReadOnlyRate: f.roRate}
	}
	if fs.Changed("protocols") || fs.Changed("cluster") || !fs.Changed("workload") {
		opts.Protocols = protocols
	}
	if len(opts.Protocols) == 0 {
		return opts, usagef("bench: no protocols")
	}
	if wl != "tcc" || fs.Changed("topology") {
		topo, err := loadTopology(f.topology, stderr)
		if err != nil {
			return opts, err
		}
		opts.Topology = topo
	}
	if fs.Changed("nodes-per-dc") {
		if opts.Topology == nil || opts.Partitions > 1 || opts.Replicas > 0 || f.cluster != "" {
			return opts, usagef("bench: --nodes-per-dc is for full-replication protocols in the simulator")
		}
		topo, err := topology.PerSite(opts.Topology, f.nodesPerDC)
		if err != nil {
			return opts, usageError{err}
		}
		opts.Topology = topo
	}
	if wl != "tcc" || fs.Changed("clients-per-dc") {
		opts.ClientsPerDC = f.clients
	}
	if wl != "tcc" || fs.Changed("duration") || fs.Changed("warmup") || fs.Changed("cooldown") {
		opts.DurationUs, opts.WarmupUs, opts.CooldownUs = f.duration.Microseconds(), f.warmup.Microseconds(), f.cooldown.Microseconds()
	}
	if wl != "tcc" || fs.Changed("jitter-correlation") {
		opts.JitterCorrelationUs = f.jitterCorrelation.Microseconds()
	}
	opts.Seed, opts.Jitter, opts.RatePerClient = f.seed, f.jitter, f.rate
	if fs.Changed("retry") { // tpcc and bank retry by default
		opts.Retry = f.retry
	}
	if fs.Changed("retry-backoff") {
		if !opts.Retry {
			return opts, usagef("bench: --retry-backoff needs --retry")
		}
		opts.RetryBackoffUs = f.retryBackoff.Microseconds()
	}
	opts.Service = sim.Service{PerMessageUs: f.cpuPerMessage.Microseconds(), PerRequestUs: f.cpuPerRequest.Microseconds(), PerCommitUs: f.cpuPerCommit.Microseconds()}
	opts.KeepHistory = f.historyFile != ""
	var err error
	if f.skew != "" {
		if opts.Topology == nil {
			return opts, usagef("bench: --skew needs a --topology with named datacenters")
		}
		if opts.ClockOffsetUs, err = parseSkew(f.skew, opts.Topology); err != nil {
			return opts, usageError{err}
		}
	}
	for _, spec := range f.faults {
		fault, err := sim.ParseFault(spec)
		if err != nil {
			return opts, usageError{err}
		}
		opts.Faults = append(opts.Faults, fault)
	}
	if opts.Params, err = parseParams(f.params); err != nil {
		return opts, usageError{err}
	}
	if !fs.Changed("cluster") {
		if err := opts.Validate(); err != nil {
			return opts, usageError{err}
		}
	}
	return opts, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseSkew reads "V=+100ms,O=-60ms" into per-datacenter clock offsets.
func parseSkew(s string, topo *topology.Topology) ([]int64, error) {
	offsets := make([]int64, topo.N())
	for _, item := range splitList(s) {
		name, val, ok := strings.Cut(item, "=")
		dc, known := topo.Index(name)
		if !ok || !known {
			return nil, fmt.Errorf("--skew %q: want DC=OFFSET with a datacenter of %s", item, topo.Name)
		}
		d, err := time.ParseDuration(strings.TrimPrefix(val, "+"))
		if err != nil {
			return nil, fmt.Errorf("--skew %q: %q is not a duration", item, val)
		}
		offsets[dc] = d.Microseconds()
	}
	return offsets, nil
}

// parseParams reads name=value items into protocol parameters.
func parseParams(items []string) (protocol.Params, error) {
	if len(items) == 0 {
		return nil, nil
	}
	p := protocol.Params{}
	for _, item := range items {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want name=value", item)
		}
		p[k] = v
	}
	return p, nil
}

// progressPrinter rewrites one status line on a terminal; runs side by side share it.
func progressPrinter(w io.Writer, total int) func(string, int64, int64) {
	var mu sync.Mutex
	started := map[string]bool{}
	return func(p string, virtualUs, totalUs int64) {
		mu.Lock()
		defer mu.Unlock()
		started[p] = true
		fmt.Fprintf(w, "\r\033[Krunning %s [%d/%d]: %d/%d s", p, len(started), total, virtualUs/1e6, totalUs/1e6)
	}
}

// printResult prints a read-write run: one row per datacenter.
func printResult(w io.Writer, r *bench.Result, opts bench.Options, real bool) {
	wallS := r.WallTime.Seconds()
	if real {
		fmt.Fprintf(w, "%s on %s (real cluster): %d clients/DC, %s, seed %d\n",
			r.Protocol, r.Topology, opts.ClientsPerDC, time.Duration(opts.DurationUs)*time.Microsecond, r.Seed)
	} else {
		fmt.Fprintf(w, "%s on %s: %d clients/DC, %s virtual, seed %d (simulated in %.1fs: %.0fx real time, %.0fk events/s)\n",
			r.Protocol, r.Topology, opts.ClientsPerDC, time.Duration(opts.DurationUs)*time.Microsecond, r.Seed, wallS,
			float64(r.VirtualUs)/1e6/wallS, float64(r.Sim.Events)/wallS/1e3)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "DC\tmean ms\tp50 ms\tp99 ms\tbound ms\ttxn/s\tops/s\taborts\t"
	if opts.Retry {
		header += "e2e mean ms\te2e p50 ms\te2e p99 ms\tattempts\t"
	}
	fmt.Fprintln(tw, header+"  abort reasons")
	var sum bench.DCResult
	for _, d := range r.DCs {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f%%\t", d.Name, d.Latency.Mean, d.Latency.P50, d.Latency.P99,
			d.LowerBoundMs, d.CommittedTPS, d.OpsPerSec, 100*d.AbortRate)
		if opts.Retry {
			fmt.Fprintf(tw, "%.1f\t%.1f\t%.1f\t%.2f\t", d.EndToEnd.Mean, d.EndToEnd.P50, d.EndToEnd.P99, d.AttemptsPerCommit)
		}
		fmt.Fprintln(tw, "  "+abortReasons(d))
		sum.Latency.Mean += d.Latency.Mean
		sum.LowerBoundMs += d.LowerBoundMs
		sum.CommittedTPS += d.CommittedTPS
		sum.OpsPerSec += d.OpsPerSec
		sum.Committed += d.Committed
		sum.Aborted += d.Aborted
	}
	n := float64(len(r.DCs))
	abortRate := 0.0
	if total := sum.Committed + sum.Aborted; total > 0 {
		abortRate = float64(sum.Aborted) / float64(total)
	}
	fmt.Fprintf(tw, "avg/total\t%.1f\t\t\t%.1f\t%.1f\t%.0f\t%.1f%%\t\n", sum.Latency.Mean/n, sum.LowerBoundMs/n, sum.CommittedTPS, sum.OpsPerSec, 100*abortRate)
	tw.Flush()
	printOrdering(w, r.Ordering)

	if m, ok := r.Metrics.(*workload.MicroMetrics); ok {
		fmt.Fprintf(w, "local: %.0f txn/s, mean %.1f p50 %.1f p99 %.1f ms, aborts %.1f%%; global: %.0f txn/s, mean %.1f p50 %.1f p99 %.1f ms, aborts %.1f%%; read-only: mean %.1f p99 %.1f ms\n",
			m.LocalTPS, m.Local.Mean, m.Local.P50, m.Local.P99, 100*m.LocalAbortRate, m.GlobalTPS, m.Global.Mean, m.Global.P50, m.Global.P99,
			100*m.GlobalAbortRate, m.ReadOnly.Mean, m.ReadOnly.P99)
	}
	if m, ok := r.Metrics.(*workload.SocialMetrics); ok {
		for _, name := range slices.Sorted(maps.Keys(m.Ops)) {
			o := m.Ops[name]
			fmt.Fprintf(w, "%s: %.0f txn/s, mean %.1f p50 %.1f p99 %.1f ms, aborts %.1f%%\n", name, o.TPS, o.Latency.Mean, o.Latency.P50, o.Latency.P99, 100*o.AbortRate)
		}
	}
	verdict := "checker: " + r.Checker.Summary()
	for _, warning := range r.Warnings() {
		verdict += "; " + warning
	}
	fmt.Fprintf(w, "%s\n\n", verdict)
}

// printOrdering prints a run's ordering figures, if its replicas report them: the fast-path
// share of decisions and the executed components with more than one command.
func printOrdering(w io.Writer, o *protocol.OrderingStats) {
	if o == nil {
		return
	}
	fmt.Fprintf(w, "ordering: fast path %.1f%% of %d decisions", 100*o.FastShare(), o.FastDecisions+o.SlowDecisions)
	if count, multi, largest := o.Components(); count > 0 {
		fmt.Fprintf(w, "; %d components executed over all replicas, %.2f%% with more than one command, largest %d", count, 100*multi, largest)
	}
	fmt.Fprintln(w)
}

// abortReasons renders a datacenter's aborts by reason, most frequent first, as shares of its
// aborts: "stale-read 81%, remote-conflict 19%".
func abortReasons(d bench.DCResult) string {
	reasons := slices.Collect(maps.Keys(d.AbortReasons))
	slices.SortFunc(reasons, func(a, b string) int {
		if c := cmp.Compare(d.AbortReasons[b], d.AbortReasons[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(reasons))
	for i, reason := range reasons {
		parts[i] = fmt.Sprintf("%s %.0f%%", reason, 100*float64(d.AbortReasons[reason])/float64(d.Aborted))
	}
	return strings.Join(parts, ", ")
}

// printTCCResults prints TCC runs: one row per protocol, throughput also relative to ec when
// it ran.
func printTCCResults(w io.Writer, results []*bench.Result, opts bench.Options, real bool) {
	topo := "one datacenter"
	if opts.Topology != nil {
		topo = opts.Topology.Name
	}
	where := fmt.Sprintf("%s virtual (measured %s), seed %d", time.Duration(opts.DurationUs)*time.Microsecond,
		time.Duration(opts.DurationUs-opts.WarmupUs-opts.CooldownUs)*time.Microsecond, opts.Seed)
	if real {
		topo = results[0].Topology
		where = fmt.Sprintf("%s on a real cluster (measured %s)", time.Duration(opts.DurationUs)*time.Microsecond,
			time.Duration(opts.DurationUs-opts.WarmupUs-opts.CooldownUs)*time.Microsecond)
	}
	wl := opts.Workload.(workload.TCC)
	fmt.Fprintf(w, "TCC workload on %s: %d partitions, %d clients/DC, %d+%d keys per ROT+WOT, %d-byte values, %.0f%% writes, %s\n",
		topo, results[0].Partitions, opts.ClientsPerDC, wl.KeysPerROT, wl.KeysPerWOT, wl.ValueBytes, 100*wl.WriteFraction, where)
	ecTPS := 0.0
	if i := slices.IndexFunc(results, func(r *bench.Result) bool { return r.Protocol == "ec" }); i >= 0 {
		ecTPS = results[i].TCC().ThroughputTPS
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\ttxn/s\tvs ec\tROT p50 ms\tROT p99 ms\tWOT p50 ms\tWOT p99 ms\tvisible ms p50/p99\t1 round\t2 rounds\t3 rounds\tcommit checks\tchecker\t")
	for _, r := range results {
		m := r.TCC()
		rel := "-"
		if ecTPS > 0 {
			rel = fmt.Sprintf("%.2f", m.ThroughputTPS/ecTPS)
		}
		pct := func(k string) string {
			if m.ROTs == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f%%", 100*float64(m.RotRounds[k])/float64(m.ROTs))
		}
		verdict := r.Checker.Summary()
		for _, warning := range r.Warnings() {
			verdict += "; " + warning
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%d\t%s\t\n", r.Protocol, m.ThroughputTPS, rel,
			m.ROTLatency.P50, m.ROTLatency.P99, m.WOTLatency.P50, m.WOTLatency.P99, visibleCell(m), pct("1"), pct("2"), pct("3"), m.CommitChecks,
			strings.ReplaceAll(verdict, "\t", " "))
	}
	tw.Flush()
	for _, r := range results {
		if m := r.TCC(); m.VisibilityDropped > 0 {
			fmt.Fprintf(w, "%s: %d visibility events dropped (bounded buffers); its visibility lag is a sample\n", r.Protocol, m.VisibilityDropped)
		}
		if m := r.TCC(); m.Moves+m.MovesFailed > 0 {
			fmt.Fprintf(w, "%s: %d client moves to another datacenter, each waiting until it covered the session's past (mean %.2f ms, p99 %.2f ms); %d failed\n",
				r.Protocol, m.Moves, m.MoveWait.Mean, m.MoveWait.P99, m.MovesFailed)
		}
	}
}

// visibleCell is the "visible ms p50/p99" column: the per-partition visibility lag (from a
// partition's local commit of a WOT until round-1 reads there return it), "0 (on commit)" for
// the protocols that make versions visible as they commit them, "-" when not measured (a real
// cluster, or no WOT committed in the window).
func visibleCell(m *workload.TCCMetrics) string {
	switch {
	case m.VisibilityMeasured > 0:
		return fmt.Sprintf("%.2f/%.2f", m.VisibilityLag.P50, m.VisibilityLag.P99)
	case m.VisibleOnCommit:
		return "0 (on commit)"
	}
	return "-"
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return usageError{fmt.Errorf("cannot write %s: %w", path, err)}
	}
	if err := write(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("cannot write %s: %w", path, err)}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// clusterCertificate loads the client certificate a bench presents to a cluster with mutual
// TLS; nil for a cluster without TLS.
func clusterCertificate(cfg *cluster.Config, certFile, keyFile string) (*tls.Certificate, error) {
	if cfg.TLS == nil {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, usagef("cluster %s uses mutual TLS: give --cert and --key of a client certificate signed by %s", cfg.Path, cfg.TLS.CA)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usagef("--cert/--key: %v", err)
	}
	return &cert, nil
}
