// Package bench is Meridian's one run path: it runs any workload (package workload) on any
// protocol of the workload's family, in the simulator (Run) or against a running cluster
// (RunCluster), and summarises the run in one Result: per-datacenter commit latency,
// throughput and aborts, the latency lower bound, the workload's own figures, and the checker's
// verdict over the recorded history. `meridian bench` and `meridian repro` are thin layers over
// it.
package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// Options describe a benchmark run; Defaults and TCCDefaults give the two workloads' settings.
type Options struct {
	// Topology gives the datacenters; nil means one datacenter without delays (the FastCCS
	// thesis's setting).
	Topology  *topology.Topology
	Protocols []string
	// Workload is what the clients run; every protocol must be of its family.
	Workload     workload.Workload
	ClientsPerDC int
	// ClientDCs, if set, names the only datacenters that run clients (E3.7: only C issues).
	ClientDCs []string
	// Partitions is the number of partitions per datacenter for the partitioned families
	// (registry.Family.Partitioned); the others run one full replica per datacenter.
	Partitions int
	// Replicas is the number of replicas of every partition for the PartitionedReadWrite family
	// (partitioned.PlacementFor places them; 0 means 3, the spec's); the others ignore it.
	Replicas int
	// LatencyIncludesAborts averages the latency of aborted transactions too (Chapter 3's
	// convention, spec GAP-E2); by default only committed ones count (Chapter 4's).
	LatencyIncludesAborts bool
	// RatePerClient > 0 makes clients open-loop: each starts a transaction every
	// 1/RatePerClient seconds, or at once when the previous one overran its slot (spec
	// GAP-E13). 0 means closed loop, back to back.
	RatePerClient float64
	// Retry makes a client re-run an aborted transaction (the same operations on the same keys,
	// as a new attempt) until it commits or the run's duration is over, after an exponential
	// backoff with full jitter from RetryBackoffUs (0: at once; see worker.backoffUs). Off by
	// default: T-YCSB's clients move on (spec GAP-E4).
	Retry          bool
	RetryBackoffUs int64
	// DurationUs is how long clients start transactions; the measurement window is [WarmupUs,
	// DurationUs-CooldownUs): a transaction is measured if it starts and ends inside it.
	DurationUs, WarmupUs, CooldownUs int64
	Seed                             uint64
	Jitter                           float64 // scale of the topology's RTT standard deviations (1 = as measured)
	// JitterCorrelationUs is the correlation time of each link's jitter
	// (sim.Config.JitterCorrelationUs); 0 draws every message's jitter independently.
	JitterCorrelationUs int64
	ClockOffsetUs       []int64   // per datacenter; nil = synchronised
	ClockDriftPPM       []float64 // per datacenter; nil = no drift
	Faults              []sim.Fault
	Params              protocol.Params
	// Service is the optional CPU cost model of every node (the zero value: none).
	Service sim.Service
	Chaos   sim.Chaos
	// AlignedTimers starts every node's periodic timers in phase at time 0
	// (sim.Config.AlignedTimers); by default each starts at a seeded random phase.
	AlignedTimers bool
	// ClientHopUs is the client-to-node delay, IntraDCUs the delay between the nodes of one
	// datacenter (partitioned families), both varied and bandwidth-limited by LAN.
	ClientHopUs, IntraDCUs int64
	LAN                    sim.LAN
	// KeepHistory keeps the recorded history in the Result (for --history).
	KeepHistory bool
	// Progress, if set, is called about once per virtual (or real) second.
	Progress func(protocolName string, virtualUs, totalUs int64)
	// Pace, if set, is called by a simulated run before each virtual second it simulates, on the
	// run's goroutine, which waits for it to return: `meridian bench` pauses a run there while
	// runs side by side would use too much memory. It cannot change a run's results.
	Pace func()
}

// Defaults returns the main job: aws-helios, 12 closed-loop clients per datacenter, T-YCSB
// (50,000 keys, Zipfian 0.99, 5 ops, 50% reads), the five core protocols, 60 virtual seconds,
// the topology's jitter with a correlation time of topology.DefaultJitterCorrelationUs.
func Defaults() Options {
	topo, _ := topology.Preset("aws-helios")
	return Options{
		Topology:            topo,
		Protocols:           []string{"helios-0", "helios-1", "helios-2", "helios-b", "mf"},
		Workload:            workload.DefaultTYCSB(),
		ClientsPerDC:        12,
		Partitions:          1,
		DurationUs:          60_000_000,
		WarmupUs:            2_000_000,
		Seed:                1,
		Jitter:              1,
		JitterCorrelationUs: topology.DefaultJitterCorrelationUs,
		ClientHopUs:         sim.DefaultClientHopUs,
	}
}

// TCCDefaults is the FastCCS thesis's default configuration (spec §4.3) of the transactional-
// causal protocols: one datacenter of 8 partitions, 5 keys per transaction, 128-byte values, 5%
// writes. The thesis does not say how many clients it ran; spec WL4 suggests the knee of EC's
// throughput curve or a fixed number such as 32 per partition. We run 32 closed-loop clients,
// 4 per partition, our own choice (neither of WL4's). Trials last 20 virtual seconds, of which the middle 10 are measured
// (the thesis keeps the middle half of each trial).
func TCCDefaults() Options {
	return Options{Protocols: []string{"fastccs", "eiger", "wren", "ec"}, Workload: workload.DefaultTCC(),
		Partitions: 8, ClientsPerDC: 32, DurationUs: 20_000_000, WarmupUs: 5_000_000, CooldownUs: 5_000_000, Seed: 1,
		ClientHopUs: sim.DefaultClientHopUs, IntraDCUs: sim.DefaultClientHopUs, LAN: ThesisLAN}
}

// MicroDefaults is S-DUR's microbenchmark (spec sdur.md §7): the WAN 1 deployment (sdur-wan1,
// two partitions of three replicas), 10% globals, 8 closed-loop clients in each home datacenter,
// every S-DUR variant, 0.3 ms RTT inside a datacenter (spec §4.2), 20 virtual seconds of which
// the middle 10 are measured (the spec's runs last 80 s and keep the middle 60; --duration,
// --warmup and --cooldown give them).
func MicroDefaults() Options {
	topo, _ := topology.Preset("sdur-wan1")
	return Options{Topology: topo, Protocols: []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"},
		Workload: workload.DefaultMicro(), Partitions: 2, Replicas: 3, ClientsPerDC: 8, DurationUs: 20_000_000,
		WarmupUs: 5_000_000, CooldownUs: 5_000_000, Seed: 1, Jitter: 1, JitterCorrelationUs: topology.DefaultJitterCorrelationUs,
		ClientHopUs: sim.DefaultClientHopUs, IntraDCUs: 150}
}

// ThesisLAN is the FastCCS thesis simulator's network (spec §4.2, WL7): with 0.5 ms base
// delays, every message takes a delay uniform in [0, 1] ms, and every node and client has a
// 1 Gb/s network card.
var ThesisLAN = sim.LAN{JitterUs: 500, BandwidthBitsPerSec: 1_000_000_000}

// singleDC is the one-datacenter topology of the FastCCS thesis's experiments.
func singleDC() *topology.Topology {
	return &topology.Topology{Name: "one-dc", DCs: []string{"dc0"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
}

// Validate reports the first invalid option.
func (o *Options) Validate() error {
	switch {
	case o.Workload == nil:
		return errors.New("bench: no workload")
	case len(o.Protocols) == 0:
		return errors.New("bench: no protocols")
	case o.ClientsPerDC < 1:
		return fmt.Errorf("bench: clients per datacenter must be at least 1, got %d", o.ClientsPerDC)
	case o.Partitions < 1:
		return fmt.Errorf("bench: partitions must be at least 1, got %d", o.Partitions)
	case o.DurationUs <= 0:
		return errors.New("bench: duration must be positive")
	case o.WarmupUs < 0 || o.CooldownUs < 0 || o.WarmupUs+o.CooldownUs >= o.DurationUs:
		return errors.New("bench: warm-up and cool-down must not be negative and must leave a measurement window")
	case o.RatePerClient < 0:
		return errors.New("bench: rate must not be negative")
	case o.RetryBackoffUs < 0:
		return errors.New("bench: the retry backoff must not be negative")
	case o.Jitter < 0:
		return errors.New("bench: jitter must not be negative")
	case o.JitterCorrelationUs < 0:
		return errors.New("bench: the jitter's correlation time must not be negative")
	case o.ClientHopUs < 0 || o.IntraDCUs < 0:
		return errors.New("bench: delays must not be negative")
	}
	for _, p := range o.Protocols {
		e, err := registry.Lookup(p)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if err := fits(o.Workload, e); err != nil {
			return err
		}
	}
	if o.Topology != nil {
		for _, dc := range o.ClientDCs {
			if _, ok := o.Topology.Index(dc); !ok {
				return fmt.Errorf("bench: client datacenter %q is not in topology %s", dc, o.Topology.Name)
			}
		}
	}
	return o.Workload.Validate()
}

// fits reports whether workload w can run on protocol e.
func fits(w workload.Workload, e registry.Entry) error {
	if e.Family != w.Family() {
		return fmt.Errorf("bench: workload %s runs on %s protocols, and %s is a %s protocol", w.Name(), w.Family(), e.Name, e.Family)
	}
	return nil
}

// Latency summarises latencies in milliseconds.
type Latency struct {
	Mean, P50, P99, StdDev float64
}

// DCResult is one datacenter's measurements.
type DCResult struct {
	Name    string
	Latency Latency
	// LowerBoundMs is the datacenter's lowest possible mean commit latency for a serializable
	// protocol (Helios's MAO bound); 0 for the protocols that commit without a cross-datacenter
	// round (the transactional-causal ones).
	LowerBoundMs float64
	CommittedTPS float64
	OpsPerSec    float64
	AbortRate    float64
	// ImmediateFraction is the share of measured transactions decided within 1 ms (plus the
	// client's round trip) of their commit request (Message Futures' Immediate Commit Zone).
	ImmediateFraction float64
	Committed         int
	Aborted           int
	// LatencyCDF samples the distribution of the latencies behind Latency (about 50 points,
	// finer in the tail), read from the run's histogram; empty when nothing was measured.
	LatencyCDF []workload.CDFPoint
	// EndToEnd is the latency of committed transactions from the start of their first attempt
	// to the commit (StdDev unset), and AttemptsPerCommit their mean number of attempts: with
	// Options.Retry an aborted transaction is re-run until it commits; without, every committed
	// transaction took one attempt and EndToEnd is its whole run, reads included.
	EndToEnd          Latency
	AttemptsPerCommit float64
	// AbortReasons counts the measured aborted attempts by reason (txn.AbortReason).
	AbortReasons map[string]int
}

// Result is one protocol's run.
type Result struct {
	Protocol string
	Workload string
	Topology string
	// Partitions per datacenter (1 for the full-replication families).
	Partitions int
	Seed       uint64
	DCs        []DCResult
	// Consistency is what the protocol promises, and Checker the checker's verdict on the
	// whole run (every transaction, measured or not, and the workload's final reads).
	Consistency registry.Consistency
	Checker     checker.Report
	Unfinished  int // transactions still waiting for a decision when the run stopped
	// Metrics are the workload's own figures (workload.TCCMetrics for the TCC workload).
	Metrics workload.Metrics
	// Ordering sums the replicas' ordering figures (fast-path decisions, executed components)
	// in a simulated run of a protocol whose replicas report them (protocol.OrderingReporter);
	// nil otherwise.
	Ordering *protocol.OrderingStats
	Sim      sim.Stats
	// OriginUnixUs is the wall-clock time (Unix µs) of the run's time 0 on a real cluster, to
	// which the history's times are relative; 0 for a simulated run.
	OriginUnixUs int64
	WallTime     time.Duration
	VirtualUs    int64
	History      *history.History // only with Options.KeepHistory
	Replay       string           // the run's configuration, for reproducing it
}

// Problem is the one decision of whether a run is good: nil if the checker found nothing the
// protocol's consistency forbids (an eventually consistent protocol may show the causality
// anomalies C2 and C3, nothing else) and the workload's own invariants held. Unfinished
// transactions are not a problem by themselves (a datacenter that never returns blocks Helios-0
// for good); callers that expect every transaction to finish check Unfinished too.
func (r *Result) Problem() error {
	if v := r.Metrics.Violations(); len(v) > 0 {
		return fmt.Errorf("%s: %s", r.Protocol, v[0])
	}
	if len(r.Checker.Anomalies) > r.ExpectedAnomalies() {
		return fmt.Errorf("checker found anomalies in %s: %s", r.Protocol, r.Checker.Summary())
	}
	return nil
}

// lowCommitFraction is the committed share of decided transactions below which a run's verdict
// says that the checker had little to check.
const lowCommitFraction = 0.01

// Warnings lists what makes a good run's figures and verdict weak: so few commits that the
// checker had almost nothing to check (a contended key space: 23 of 302,922 transactions
// committed with --keys 40), transactions that never finished.
func (r *Result) Warnings() []string {
	out := []string{}
	if decided := r.Checker.Committed + r.Checker.Aborted + r.Checker.ROTs; decided > 0 {
		if committed := r.Checker.Committed + r.Checker.ROTs; float64(committed) < lowCommitFraction*float64(decided) {
			out = append(out, fmt.Sprintf("only %d of %d decided transactions committed (%.2f%%): the checker had little to check",
				committed, decided, 100*float64(committed)/float64(decided)))
		}
	} else {
		out = append(out, "no transaction was decided: the checker had nothing to check")
	}
	if r.Unfinished > 0 {
		out = append(out, fmt.Sprintf("%d transactions never finished", r.Unfinished))
	}
	return out
}

// ExpectedAnomalies counts the checker's findings that the protocol's consistency allows (C2 and
// C3 for an eventually consistent protocol; none otherwise).
func (r *Result) ExpectedAnomalies() int {
	if r.Consistency != registry.Eventual {
		return 0
	}
	return r.Checker.Counts[checker.TCCSnapshot] + r.Checker.Counts[checker.TCCWriteOrder]
}

// TCC returns the TCC workload's figures of the run, or nil for another workload.
func (r *Result) TCC() *workload.TCCMetrics {
	m, _ := r.Metrics.(*workload.TCCMetrics)
	return m
}
