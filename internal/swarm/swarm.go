// Package swarm generates randomized simulation runs for property tests, in the style of
// TigerBeetle's VOPR: every seed picks its own topology, jitter, clock skew and drift, protocol
// parameters, contention, fault schedule and network chaos, and a failing seed prints everything
// needed to replay it. Tests of every protocol use it (see Run).
package swarm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// SeedsPerProtocol is how many random seeds Run tries per protocol (spec §7.3 asks for many;
// the issues for at least 200).
const SeedsPerProtocol = 200

// Options draws one seed's random parameters, TigerBeetle-VOPR style: topology, jitter, clock
// offsets and drifts, propagation intervals, grace time, valid random commit offsets, a small key
// space for contention, a fault schedule (outages of up to f datacenters — one for f = 0 —,
// partitions, slow links) that ends before the run does so that the replicas must converge, and
// for half the seeds a chaotic network (random loss, duplication, reordering, extra delay).
func Options(proto string, seed uint64) bench.Options {
	r := rand.New(rand.NewPCG(seed, 0x737761726d))
	entry, err := registry.Lookup(proto)
	if err != nil {
		panic(fmt.Sprintf("swarm: %v", err))
	}
	f := entry.ToleratesOutages
	var topo *topology.Topology
	choices := topologiesFor(f)
	switch pick := choices[r.IntN(len(choices))]; pick {
	case "two":
		topo, _ = topology.Subset(preset("aws-mf"), []string{"C", "O"})
	default:
		topo = preset(pick)
	}
	n := topo.N()
	for a := range n {
		for b := range a {
			sd := r.Float64() * 0.3 * topo.RTTMs[a][b]
			topo.StdDevMs[a][b], topo.StdDevMs[b][a] = sd, sd
		}
	}
	opts := bench.Defaults()
	opts.Topology = topo
	opts.Seed = seed
	opts.ClientsPerDC = 1 + r.IntN(3)
	keys := 4 + r.IntN(60)
	opts.Workload = workload.TYCSB{Keys: keys, Distribution: workload.DistUniform, OpsPerTxn: 1 + r.IntN(min(4, keys)), ReadRatio: 0.2 + 0.6*r.Float64()}
	opts.DurationUs, opts.WarmupUs = 3_000_000, 0
	opts.Jitter = 1
	opts.ClockOffsetUs = make([]int64, n)
	opts.ClockDriftPPM = make([]float64, n)
	for dc := range n {
		opts.ClockOffsetUs[dc] = r.Int64N(200_001) - 100_000
		opts.ClockDriftPPM[dc] = r.Float64()*200 - 100
	}
	// Parameters for the protocols that take them (registry.Entry.RandomParams); others (the
	// baselines) run with defaults. The interval is drawn for every protocol, so that each
	// protocol's later draws stay where they were.
	intervalMs := 1 + r.IntN(20)
	if entry.RandomParams != nil {
		opts.Params = entry.RandomParams(r, topo, intervalMs)
	}
	opts.Faults = randomFaults(r, topo, max(f, 1), opts.DurationUs)
	if r.IntN(2) == 0 { // spec §7.3: loss, duplication up to 20%, reordering, delays up to 5×RTT
		maxRTTUs := int64(0)
		for dc := range n {
			maxRTTUs = max(maxRTTUs, int64(topo.MaxRTTMs(dc)*1000))
		}
		opts.Chaos = sim.Chaos{LossProb: 0.1 * r.Float64(), DuplicateProb: 0.2 * r.Float64(),
			Reorder: r.IntN(2) == 0, ExtraDelayMaxUs: r.Int64N(5*maxRTTUs + 1)}
	}
	addReadOnlyClients(r, entry, &opts) // after every other draw: other protocols' seeds stay as they were
	return opts
}

// addReadOnlyClients gives the protocols with serializable snapshots (Ogre) a read-only client
// per datacenter, reading 1 to 8 keys per transaction at up to 200 transactions per second.
func addReadOnlyClients(r *rand.Rand, e registry.Entry, opts *bench.Options) {
	if !e.SerializableSnapshotsPerDC {
		return
	}
	w := opts.Workload.(workload.TYCSB)
	w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 1, 1+r.IntN(min(8, w.Keys)), float64(1+r.IntN(200))
	opts.Workload = w
}

func topologiesFor(f int) []string {
	switch f {
	case 0:
		return []string{"two", "table4.1", "aws-helios", "aws-mf"}
	case 1:
		return []string{"table4.1", "aws-helios", "aws-mf"}
	}
	return []string{"aws-helios", "aws-mf"}
}

func preset(name string) *topology.Topology {
	t, ok := topology.Preset(name)
	if !ok {
		panic("no preset " + name)
	}
	return t
}

func randomFaults(r *rand.Rand, topo *topology.Topology, maxDown int, durationUs int64) []sim.Fault {
	var faults []sim.Fault
	window := func() (int64, int64) {
		start := r.Int64N(durationUs / 2)
		return start, start + 100_000 + r.Int64N(durationUs/3)
	}
	pair := func() (string, string) {
		a := r.IntN(topo.N())
		b := (a + 1 + r.IntN(topo.N()-1)) % topo.N()
		return topo.DCs[a], topo.DCs[b]
	}
	if r.IntN(2) == 0 {
		for _, dc := range r.Perm(topo.N())[:1+r.IntN(maxDown)] {
			start, end := window()
			faults = append(faults, sim.Fault{Kind: sim.Outage, DC: topo.DCs[dc], StartUs: start, EndUs: end})
		}
	}
	if r.IntN(3) == 0 {
		a, b := pair()
		start, end := window()
		faults = append(faults, sim.Fault{Kind: sim.Partition, DC: a, Peer: b, StartUs: start, EndUs: end})
	}
	if r.IntN(3) == 0 {
		a, b := pair()
		start, end := window()
		faults = append(faults, sim.Fault{Kind: sim.Slow, DC: a, Peer: b, StartUs: start, EndUs: end, ExtraUs: 50_000 + r.Int64N(250_000)})
	}
	return faults
}

// Run runs proto over SeedsPerProtocol random seeds (Options) in test t and requires the checker
// to find no anomaly and every transaction to finish once the faults are over. A failing seed
// prints everything needed to replay it: replayCmd is the command that reruns this test (e.g.
// "go test ./conformance -run 'TestPropertySafety/mf$'"), to which MERIDIAN_SEED=N is prefixed;
// MERIDIAN_SEED=N runs just that seed, and -short runs 20 seeds.
func Run(t *testing.T, proto, replayCmd string) {
	t.Helper()
	runSeeds(t, proto, replayCmd, seedsToRun(t), Options)
}

// runSeeds is Run over seeds, each run's options drawn by options.
func runSeeds(t *testing.T, proto, replayCmd string, seeds []uint64, options func(proto string, seed uint64) bench.Options) {
	t.Helper()
	committed := 0
	for _, seed := range seeds {
		opts := options(proto, seed)
		res, err := bench.Run(opts, proto)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := res.Problem(); err != nil || res.Unfinished > 0 {
			t.Fatalf("seed %d: %v; %s; %d transactions unfinished\nreplay: MERIDIAN_SEED=%d %s\nparameters: %s",
				seed, err, res.Checker.Summary(), res.Unfinished, seed, replayCmd, res.Replay)
		}
		committed += res.Checker.Committed
	}
	if committed == 0 {
		t.Fatalf("no transaction committed over %d seeds: the property test checks nothing", len(seeds))
	}
	t.Logf("%d seeds, %d committed transactions checked", len(seeds), committed)
}

// seedsToRun is the seed MERIDIAN_SEED names, or 1..SeedsPerProtocol (1..20 with -short).
func seedsToRun(t *testing.T) []uint64 {
	t.Helper()
	if s := os.Getenv("MERIDIAN_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MERIDIAN_SEED=%q is not a number", s)
		}
		return []uint64{seed}
	}
	count := uint64(SeedsPerProtocol)
	if testing.Short() {
		count = 20
	}
	seeds := make([]uint64, count)
	for i := range seeds {
		seeds[i] = uint64(i) + 1
	}
	return seeds
}
