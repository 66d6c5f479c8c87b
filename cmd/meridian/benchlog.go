package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/meridian-kv/meridian/protocols/log/logsim"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/logbench"
)

// logWorkload is the --workload of the shared log (Chariots): 512-byte appends from every
// datacenter, closed loop or at --rate per client, with per-stage throughput.
const logWorkload = "log"

// hyksosWorkload is the --workload of Hyksos on the shared log: closed-loop clients put (a
// unique value), get or GET_TXN keys drawn uniformly; every read is checked at the end (CH-I9).
const hyksosWorkload = "hyksos"

// Hyksos workload defaults: keys, the share of reads (half of them GET_TXNs) and the keys of
// a GET_TXN.
const (
	hyksosKeys      = 1000
	hyksosReadRatio = 0.5
	hyksosTxnKeys   = 4
)

// runLogBench runs `meridian bench --workload log`: a Chariots deployment in the simulator
// (stage counts and other parameters with --set, e.g. --set batchers=2), clients appending
// 512-byte records closed loop (or --rate appends/s per client), and reports appends/s, append
// latency and every stage's records per sampling period (per second for runs of 3 s or more,
// per 100 ms below) in the JSON; --history writes every datacenter's log (logsim.HistoryLine).
func runLogBench(fs *pflag.FlagSet, f *benchFlags, stdout, stderr io.Writer) error {
	if f.workload == hyksosWorkload && fs.Changed("cluster") {
		return runHyksosClusterBench(fs, f, stdout)
	}
	notFor := []string{"cluster", "partitions"}
	if f.workload == logWorkload {
		notFor = append(notFor, "keys", "ops", "read-ratio")
	} else {
		notFor = append(notFor, "rate") // Hyksos clients run closed loop
	}
	for _, name := range notFor {
		if fs.Changed(name) {
			return usagef("bench: --%s does not apply to --workload %s", name, f.workload)
		}
	}
	if fs.Changed("protocols") && f.protocols != "chariots" {
		return usagef("bench: --workload log runs on chariots only")
	}
	topoName := "table4.1"
	if fs.Changed("topology") {
		topoName = f.topology
	}
	topo, err := loadTopology(topoName, stderr)
	if err != nil {
		return err
	}
	params, err := parseParams(f.params)
	if err != nil {
		return usageError{err}
	}
	o := logsim.Options{Topology: topo, Params: params, Seed: f.seed, Jitter: f.jitter, ClientsPerDC: f.clients,
		DurationUs: f.duration.Microseconds(), RetryUs: 1_000_000, BodyBytes: 512, SettleUs: 30_000_000,
		RatePerSec: f.rate * float64(f.clients*topo.N()),
		Service:    sim.Service{PerMessageUs: f.cpuPerMessage.Microseconds(), PerRequestUs: f.cpuPerRequest.Microseconds()}}
	if f.logCapacity {
		o.Capacity = &logsim.Calibrated
	}
	if f.workload == hyksosWorkload {
		h, err := hyksosFlags(fs, f)
		if err != nil {
			return err
		}
		o.Hyksos = &logsim.HyksosWorkload{Keys: h.Keys, TxnKeys: h.TxnKeys, PutProb: 1 - h.ReadRatio, TxnProb: h.ReadRatio / 2}
	}
	o.SampleEveryUs = 100_000
	if o.DurationUs >= 3_000_000 {
		o.SampleEveryUs = 1_000_000
	}
	for _, spec := range f.faults {
		fault, err := sim.ParseFault(spec)
		if err != nil {
			return usageError{err}
		}
		o.Faults = append(o.Faults, fault)
	}
	res, err := logsim.Run(o)
	if err != nil {
		return fmt.Errorf("bench: chariots: %w", err)
	}
	rep := logsim.NewReport(o, res)
	fmt.Fprintf(stdout, "chariots on %s, %d clients/DC, %s: %d appends, %.0f appends/s, latency p50 %.2f ms p99 %.2f ms, %d retries; every log holds %v records, checks passed\n",
		topo.Name, f.clients, f.duration, rep.Appends, rep.AppendsPerSec, rep.LatencyMsP50, rep.LatencyMsP99, rep.Retries, rep.RecordsPerDC)
	if o.Hyksos != nil {
		collected, records := res.Snapshot.Collected()
		fmt.Fprintf(stdout, "hyksos: %d puts (the appends above), %d gets and GET_TXNs (%d took a newer snapshot: a put they needed was collected), every read the latest put up to its head of log (CH-I9); %d of the logs' %d records collected\n",
			rep.Appends, res.Reads, res.HyksosRestarts, collected, records)
	}
	printStages(stdout, rep)
	if f.jsonFile != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if f.historyFile != "" {
		h, err := os.Create(f.historyFile)
		if err != nil {
			return err
		}
		if err := logsim.WriteHistory(h, res.Snapshot); err != nil {
			h.Close()
			return err
		}
		return h.Close()
	}
	return nil
}

// printStages prints each datacenter's stages' mean records per second over the run.
func printStages(w io.Writer, rep logsim.Report) {
	type stage struct {
		dc   int
		role string
	}
	sum := map[stage]uint64{}
	for _, s := range rep.Stages {
		for _, n := range s.Records {
			sum[stage{s.DC, s.Role}] += n
		}
	}
	keys := make([]stage, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].dc < keys[j].dc || (keys[i].dc == keys[j].dc && keys[i].role < keys[j].role)
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DC\tstage\trecords/s")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\n", rep.DCs[k.dc], k.role, float64(sum[k])*1e6/float64(rep.DurationUs))
	}
	tw.Flush()
}

// hyksosFlags returns the Hyksos workload's keys, read ratio and keys per GET_TXN: the
// defaults, overridden by --keys, --read-ratio and --ops.
func hyksosFlags(fs *pflag.FlagSet, f *benchFlags) (logbench.Hyksos, error) {
	h := logbench.Hyksos{Keys: hyksosKeys, ReadRatio: hyksosReadRatio, TxnKeys: hyksosTxnKeys}
	if fs.Changed("keys") {
		h.Keys = f.keys
	}
	if fs.Changed("ops") {
		h.TxnKeys = f.ops
	}
	if fs.Changed("read-ratio") {
		h.ReadRatio = f.readRatio
	}
	if h.Keys < 1 || h.TxnKeys < 1 || h.ReadRatio < 0 || h.ReadRatio > 1 {
		return h, usagef("bench: --workload hyksos needs --keys and --ops of at least 1 and --read-ratio in [0, 1]")
	}
	return h, nil
}

// hyksosClusterFlags are the flags `bench --workload hyksos --cluster` takes.
var hyksosClusterFlags = []string{"workload", "cluster", "cert", "key", "clients-per-dc", "duration", "keys", "ops", "read-ratio", "json"}

// runHyksosClusterBench runs `meridian bench --workload hyksos --cluster FILE`: Hyksos clients
// (--clients-per-dc in every datacenter, closed loop) on a running shared-log cluster through
// the log's Go client (tools/logbench), then every read checked (CH-I9) and every acknowledged
// put found in every datacenter's log. The transactional bench's cluster path
// (bench.RunCluster) drives transactions over rpc connections and cannot host a log client.
func runHyksosClusterBench(fs *pflag.FlagSet, f *benchFlags, stdout io.Writer) error {
	var bad string
	fs.Visit(func(fl *pflag.Flag) {
		if bad == "" && !slices.Contains(hyksosClusterFlags, fl.Name) {
			bad = fl.Name
		}
	})
	if bad != "" {
		return usagef("bench: --%s does not apply to --workload hyksos --cluster (it takes --%s)", bad, strings.Join(hyksosClusterFlags[2:], ", --"))
	}
	h, err := hyksosFlags(fs, f)
	if err != nil {
		return err
	}
	if f.clients < 1 || f.duration <= 0 {
		return usagef("bench: --clients-per-dc of at least 1 and a positive --duration")
	}
	lo := &logOptions{clusterFile: f.cluster, certFile: f.cert, keyFile: f.key, timeout: 10 * time.Second}
	return withLog(lo, func(ctx context.Context, s *logSession) error {
		res, err := logbench.Run(ctx, logbench.Options{Cluster: s.cfg, Clients: f.clients, Duration: f.duration, Timeout: lo.timeout,
			DialOpts: s.dialOpts, Hyksos: &h})
		if err != nil {
			return fmt.Errorf("bench: hyksos on %s: %s", s.cfg.Path, describe(err))
		}
		hr := res.Hyksos
		fmt.Fprintf(stdout, "hyksos on %s (%s), %d clients/DC, %.1f s: %d puts %.0f/s (p50 %.2f ms p99 %.2f ms), %d gets and GET_TXNs %.0f/s (p50 %.2f ms p99 %.2f ms), %d errors; %d reads checked (CH-I9), %d acknowledged puts in every log\n",
			s.cfg.Protocol, s.cfg.Path, f.clients, res.Seconds, res.Appends, res.AppendsPerSec, res.P50Ms, res.P99Ms,
			hr.Reads, hr.ReadsPerSec, hr.ReadP50Ms, hr.ReadP99Ms, res.Errors, hr.CheckedReads, hr.CheckedPuts)
		if f.jsonFile == "" {
			return nil
		}
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(f.jsonFile, append(b, '\n'), 0o644)
	}, true)
}
