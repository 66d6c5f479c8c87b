package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runBench(args []string, stdout, stderr io.Writer) error {
	def := bench.Defaults()
	fs := newFlagSet("bench", stderr)
	topoFlag := fs.String("topology", "aws-helios", "topology preset ("+strings.Join(topology.PresetNames(), ", ")+") or YAML/JSON file")
	protocols := fs.String("protocols", strings.Join(def.Protocols, ","), "comma-separated protocols ("+strings.Join(registry.Names(), ", ")+")")
	clients := fs.Int("clients-per-dc", def.ClientsPerDC, "clients per datacenter (one outstanding transaction each)")
	duration := fs.Duration("duration", time.Duration(def.DurationUs)*time.Microsecond, "virtual duration of each run")
	warmup := fs.Duration("warmup", time.Duration(def.WarmupUs)*time.Microsecond, "virtual warm-up excluded from the measurements")
	seed := fs.Uint64("seed", def.Seed, "seed of the run's pseudo-random numbers")
	keys := fs.Int("keys", def.Workload.Keys, "number of keys")
	dist := fs.String("distribution", def.Workload.Distribution, "key distribution: zipfian or uniform")
	theta := fs.Float64("theta", def.Workload.Theta, "Zipfian skew in (0,1)")
	ops := fs.Int("ops", def.Workload.OpsPerTxn, "operations per transaction (distinct keys)")
	readRatio := fs.Float64("read-ratio", def.Workload.ReadRatio, "probability that an operation is a read")
	rate := fs.Float64("rate", 0, "open loop: transactions per second per client (0: closed loop)")
	jitter := fs.Float64("jitter", def.Jitter, "scale of the topology's RTT standard deviations (0: exact delays)")
	jitterCorr := fs.Duration("jitter-correlation", time.Duration(def.JitterCorrelationUs)*time.Microsecond,
		"correlation time of each inter-datacenter link's jitter (0: independent per message)")
	skew := fs.String("skew", "", "clock offsets per datacenter, e.g. V=+100ms,O=-60ms (positive: ahead)")
	cpuMsg := fs.Duration("cpu-per-message", 0, "service-time model: CPU per received peer message")
	cpuReq := fs.Duration("cpu-per-request", 0, "service-time model: CPU per client request")
	cpuCommit := fs.Duration("cpu-per-commit", 0, "service-time model: extra CPU per commit request")
	jsonFile := fs.String("json", "", "write the results as JSON to this file")
	historyFile := fs.String("history", "", "write the recorded history as JSON Lines (single protocol only)")
	quiet := fs.Bool("quiet", false, "no progress line")
	clusterFile := fs.String("cluster", "", "run against the running cluster of this file instead of the simulator (its topology and protocol)")
	certFile := fs.String("cert", "", "with --cluster on a TLS cluster: client certificate (PEM) signed by the cluster CA")
	keyFile := fs.String("key", "", "with --cluster on a TLS cluster: the client certificate's key (PEM)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the simulation to this file (go tool pprof)")
	var faults, params listFlag
	fs.Var(&faults, "fault", "scheduled fault, repeatable: crash:DC@10s-20s, partition:A-B@5s-8s, slow:A-B+100ms@5s-8s; a single node: crash-node:3@1s-2s, cut-nodes:2-5@1s-3s")
	fs.Var(&params, "set", "protocol parameter, repeatable: name=value (e.g. gt=500ms, interval=10ms, interval.C=50ms)")
	workloadName := fs.String("workload", "tycsb", "tycsb (read-write transactions, the default) or tcc (the FastCCS thesis's read-only/write-only transactions on a partitioned store; protocols fastccs, eiger, wren, ec)")
	tccf := addTCCFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := setFlags(fs)
	if *workloadName != "tycsb" && *workloadName != "tcc" {
		return usagef("bench: --workload must be tycsb or tcc, got %q", *workloadName)
	}
	if err := checkWorkloadFlags(set, *workloadName); err != nil {
		return err
	}
	if *workloadName == "tcc" && set["jitter-correlation"] {
		return usagef("bench: --jitter-correlation does not apply to --workload tcc")
	}
	if *workloadName == "tcc" {
		return runTCCBench(tccCommon{topology: *topoFlag, protocols: *protocols, distribution: *dist, jsonFile: *jsonFile,
			clients: *clients, duration: *duration, warmup: *warmup, seed: *seed, jitter: *jitter, quiet: *quiet,
			faults: faults, params: params, set: set, cluster: *clusterFile, cert: *certFile, key: *keyFile,
			service: sim.Service{PerMessageUs: cpuMsg.Microseconds(), PerRequestUs: cpuReq.Microseconds()}}, tccf, stdout, stderr)
	}
	opts := def
	topo, err := loadTopology(*topoFlag, stderr)
	if err != nil {
		return err
	}
	opts.Topology = topo
	opts.Protocols = splitList(*protocols)
	opts.ClientsPerDC = *clients
	opts.DurationUs, opts.WarmupUs = duration.Microseconds(), warmup.Microseconds()
	opts.Seed = *seed
	opts.Workload = workload.Config{Keys: *keys, Distribution: *dist, Theta: *theta, OpsPerTxn: *ops, ReadRatio: *readRatio}
	opts.RatePerClient = *rate
	opts.Jitter = *jitter
	opts.JitterCorrelationUs = jitterCorr.Microseconds()
	opts.Service = sim.Service{PerMessageUs: cpuMsg.Microseconds(), PerRequestUs: cpuReq.Microseconds(), PerCommitUs: cpuCommit.Microseconds()}
	if opts.ClockOffsetUs, err = parseSkew(*skew, topo); err != nil {
		return usageError{err}
	}
	for _, f := range faults {
		fault, err := sim.ParseFault(f)
		if err != nil {
			return usageError{err}
		}
		opts.Faults = append(opts.Faults, fault)
	}
	if opts.Params, err = parseParams(params); err != nil {
		return usageError{err}
	}
	if *historyFile != "" {
		if len(opts.Protocols) != 1 {
			return usagef("--history needs exactly one protocol, got %d", len(opts.Protocols))
		}
		opts.KeepHistory = true
	}
	if err := opts.Validate(); err != nil {
		return usageError{err}
	}
	if !*quiet {
		opts.Progress = progressPrinter(stderr, len(opts.Protocols))
	}
	if os.Getenv("GOGC") == "" {
		// A simulation is a batch job with a small, short-lived heap: trading memory for fewer
		// collections makes it about 15% faster (docs/BENCHMARKS.md).
		debug.SetGCPercent(400)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	runOne := func(p string) (*bench.Result, error) {
		res, err := bench.Run(opts, p)
		if err != nil {
			return nil, usageError{err} // a simulated run fails only on its configuration
		}
		return res, nil
	}
	if *clusterFile != "" {
		cfg, err := cluster.Load(*clusterFile)
		if err != nil {
			return usageError{err}
		}
		opts.Protocols = []string{cfg.Protocol}
		creds, err := clusterCredentials(cfg, *certFile, *keyFile)
		if err != nil {
			return err
		}
		runOne = func(string) (*bench.Result, error) {
			return bench.RunCluster(context.Background(), opts, cfg, dialCluster(creds))
		}
	}
	var results []*bench.Result
	for _, p := range opts.Protocols {
		res, err := runOne(p)
		if err != nil {
			return err
		}
		if opts.Progress != nil {
			fmt.Fprint(stderr, "\r\033[K")
		}
		printResult(stdout, res, opts)
		results = append(results, res)
	}
	if *jsonFile != "" {
		if err := writeJSON(*jsonFile, benchJSON(results)); err != nil {
			return err
		}
	}
	if *historyFile != "" {
		if err := writeHistory(*historyFile, results[0].History); err != nil {
			return err
		}
	}
	for _, r := range results {
		if !r.Checker.OK {
			return fmt.Errorf("checker found anomalies in %s: %s\nreplay with: %s", r.Protocol, r.Checker.Summary(), r.Replay)
		}
	}
	return nil
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
	if s == "" {
		return nil, nil
	}
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

// progressPrinter rewrites one status line on stderr.
func progressPrinter(w io.Writer, total int) func(string, int64, int64) {
	index, last := 0, ""
	return func(p string, virtualUs, totalUs int64) {
		if p != last {
			index, last = index+1, p
		}
		fmt.Fprintf(w, "\r\033[Krunning %s [%d/%d]: %d/%d virtual s", p, index, total, virtualUs/1e6, totalUs/1e6)
	}
}

func printResult(w io.Writer, r *bench.Result, opts bench.Options) {
	wallS := r.WallTime.Seconds()
	if r.Sim.Events == 0 { // a real cluster
		fmt.Fprintf(w, "%s on %s (real cluster): %d clients/DC, %s, seed %d\n",
			r.Protocol, r.Topology, opts.ClientsPerDC, time.Duration(opts.DurationUs)*time.Microsecond, r.Seed)
	} else {
		fmt.Fprintf(w, "%s on %s: %d clients/DC, %s virtual, seed %d (simulated in %.1fs: %.0fx real time, %.0fk events/s)\n",
			r.Protocol, r.Topology, opts.ClientsPerDC, time.Duration(opts.DurationUs)*time.Microsecond, r.Seed, wallS,
			float64(r.VirtualUs)/1e6/wallS, float64(r.Sim.Events)/wallS/1e3)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DC\tmean ms\tp50 ms\tp99 ms\tbound ms\ttxn/s\tops/s\taborts\t")
	var sum bench.DCResult
	for _, d := range r.DCs {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f%%\t\n", d.Name, d.Latency.Mean, d.Latency.P50, d.Latency.P99,
			d.LowerBoundMs, d.CommittedTPS, d.OpsPerSec, 100*d.AbortRate)
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
	verdict := "checker: " + r.Checker.Summary()
	if r.Unfinished > 0 {
		verdict += fmt.Sprintf("; %d transactions never finished", r.Unfinished)
	}
	fmt.Fprintf(w, "%s\n\n", verdict)
}

type runJSON struct {
	Protocol    string      `json:"protocol"`
	Topology    string      `json:"topology"`
	Seed        uint64      `json:"seed"`
	Datacenters []dcJSON    `json:"datacenters"`
	Checker     checkerJSON `json:"checker"`
}

type dcJSON struct {
	Name          string      `json:"name"`
	CommitLatency latencyJSON `json:"commit_latency_ms"`
	LowerBoundMs  float64     `json:"lower_bound_ms"`
	CommittedTPS  float64     `json:"committed_tps"`
	OpsPerSec     float64     `json:"ops_per_s"`
	AbortRate     float64     `json:"abort_rate"`
}

type latencyJSON struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

type checkerJSON struct {
	OK        bool `json:"ok"`
	Anomalies int  `json:"anomalies"`
}

func benchJSON(results []*bench.Result) map[string][]runJSON {
	runs := make([]runJSON, 0, len(results))
	for _, r := range results {
		rj := runJSON{Protocol: r.Protocol, Topology: r.Topology, Seed: r.Seed,
			Checker: checkerJSON{OK: r.Checker.OK, Anomalies: len(r.Checker.Anomalies)}}
		for _, d := range r.DCs {
			rj.Datacenters = append(rj.Datacenters, dcJSON{Name: d.Name,
				CommitLatency: latencyJSON{Mean: d.Latency.Mean, P50: d.Latency.P50, P99: d.Latency.P99},
				LowerBoundMs:  d.LowerBoundMs, CommittedTPS: d.CommittedTPS, OpsPerSec: d.OpsPerSec, AbortRate: d.AbortRate})
		}
		runs = append(runs, rj)
	}
	return map[string][]runJSON{"runs": runs}
}

func writeHistory(path string, h *history.History) error {
	f, err := os.Create(path)
	if err != nil {
		return usageError{fmt.Errorf("cannot write %s: %w", path, err)}
	}
	if err := history.WriteJSONL(f, h); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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

// dialCluster connects benchmark clients to a cluster's nodes with creds.
func dialCluster(creds credentials.TransportCredentials) bench.DialFunc {
	return func(ctx context.Context, addr string) (bench.Conn, txn.ClientID, error) {
		conn, id, err := rpc.Dial(ctx, addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return nil, 0, err
		}
		return conn, id, nil
	}
}
