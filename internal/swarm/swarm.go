// Package swarm generates randomized simulation runs for property tests, in the style of
// TigerBeetle's VOPR: every seed picks its own topology, jitter, clock skew and drift, protocol
// parameters, contention, fault schedule and network chaos, and a failing seed prints everything
// needed to replay it. Tests of every protocol use it (see Run).
package swarm

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
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
	entry := lookup(proto)
	if entry.Family == registry.PartitionedReadWrite {
		return partitionedOptions(entry, seed)
	}
	f := entry.ToleratesOutages
	var topo *topology.Topology
	choices := topologiesFor(f)
	switch pick := choices[r.IntN(len(choices))]; pick {
	case "two":
		topo, _ = topology.Subset(preset("aws-mf"), []string{"C", "O"})
	case "binding":
		topo = BindingTopology()
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
	if topo.Name == "binding" {
		keys *= 8 // its 160 ms commit windows would abort nearly every transaction on 64 keys
	}
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
		return []string{"table4.1", "aws-helios", "aws-mf", "binding"}
	}
	return []string{"aws-helios", "aws-mf", "binding"}
}

// BindingTopology has two clusters of datacenters 160 ms apart (A, A2, A3 and B, B2, B3) with 4
// to 6 ms inside each. On the preset topologies a Helios-f transaction usually waits longer for its
// f acknowledgements (a round trip to the f-th nearest datacenter) than for its knowledge
// condition (kts_B(t) = q(t) + co[B], about its commit latency), so a commit rule that commits a
// few milliseconds early hides behind the acknowledgements. Here a cluster neighbour acknowledges
// within 6 ms (two do, for Helios-2) while knowledge of the far cluster takes tens of milliseconds: the knowledge
// condition decides, and an early commit shows as an anomaly.
func BindingTopology() *topology.Topology {
	const near, far = 5.0, 160.0
	dcs := []string{"A", "A2", "A3", "B", "B2", "B3"}
	cluster := []int{0, 0, 0, 1, 1, 1}
	rtt := make([][]float64, len(dcs))
	sd := make([][]float64, len(dcs))
	for a := range dcs {
		rtt[a], sd[a] = make([]float64, len(dcs)), make([]float64, len(dcs))
		for b := range dcs {
			switch {
			case a == b:
			case cluster[a] == cluster[b]:
				rtt[a][b] = near - 1 + float64((a+b)%3) // 4, 5 or 6 ms
			default:
				rtt[a][b] = far
			}
		}
	}
	return &topology.Topology{Name: "binding", DCs: dcs, RTTMs: rtt, StdDevMs: sd}
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
	if r.IntN(2) == 0 {
		for _, dc := range r.Perm(topo.N())[:1+r.IntN(maxDown)] {
			start, end := window()
			faults = append(faults, sim.Fault{Kind: sim.Outage, DC: topo.DCs[dc], StartUs: start, EndUs: end})
		}
	}
	return append(faults, linkFaults(r, topo, window)...)
}

// linkFaults draws, each with probability 1/3, a partition between two datacenters and a slow
// link between two datacenters, in windows drawn by window.
func linkFaults(r *rand.Rand, topo *topology.Topology, window func() (int64, int64)) []sim.Fault {
	var faults []sim.Fault
	pair := func() (string, string) {
		a := r.IntN(topo.N())
		b := (a + 1 + r.IntN(topo.N()-1)) % topo.N()
		return topo.DCs[a], topo.DCs[b]
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

// Draw returns seed's random run of proto: Options for the read-write family, TCCOptions for
// the transactional-causal one. It panics on an unknown protocol.
func Draw(proto string, seed uint64) bench.Options {
	if lookup(proto).Family == registry.Causal {
		return TCCOptions(proto, seed, nil)
	}
	return Options(proto, seed)
}

// lookup returns proto's registry entry, or panics: the swarms name registered protocols.
func lookup(proto string) registry.Entry {
	entry, err := registry.Lookup(proto)
	if err != nil {
		panic(fmt.Sprintf("swarm: %v", err))
	}
	return entry
}

// Check runs proto with opts and judges the run as the property tests do: it fails if the run
// cannot start, if the checker finds an anomaly the protocol's consistency forbids (or a
// workload invariant breaks; bench.Result.Problem), or if a transaction is still unfinished
// after the faults healed. The error names the finding and ends with the run's parameters.
func Check(proto string, opts bench.Options) (*bench.Result, error) {
	res, err := bench.Run(opts, proto)
	if err != nil {
		return nil, err
	}
	if err := res.Problem(); err != nil {
		if summary := res.Checker.Summary(); !strings.Contains(err.Error(), summary) {
			err = fmt.Errorf("%w; %s", err, summary)
		}
		return res, fmt.Errorf("%w\nparameters: %s", err, res.Replay)
	}
	if res.Unfinished > 0 {
		return res, fmt.Errorf("%w: %d transactions unfinished after the faults healed\nparameters: %s", ErrUnfinished, res.Unfinished, res.Replay)
	}
	return res, nil
}

// ErrUnfinished is the finding of a run that left transactions unfinished (a liveness failure,
// where the checker's findings are safety failures).
var ErrUnfinished = errors.New("liveness")

// Run runs proto over SeedsPerProtocol random seeds (Options) in test t and requires each to
// pass Check. A failing seed prints everything needed to replay it: replayCmd is the command
// that reruns this test (e.g. "go test ./conformance -run 'TestPropertySafety/mf$'"), to which
// MERIDIAN_SEED=N is prefixed; MERIDIAN_SEED=N runs just that seed, and -short runs 20 seeds.
func Run(t *testing.T, proto, replayCmd string) {
	t.Helper()
	RunWith(t, proto, replayCmd, nil)
}

// RunWith is Run with adjust (if not nil) applied to every seed's options after all of
// Options' draws, for a protocol's own additions: faults aimed at its recovery, parameters.
// What adjust adds is part of the printed parameters, so a failing seed still replays.
func RunWith(t *testing.T, proto, replayCmd string, adjust func(seed uint64, opts *bench.Options)) {
	t.Helper()
	runSeeds(t, proto, replayCmd, seedsToRun(t), func(proto string, seed uint64) bench.Options {
		opts := Options(proto, seed)
		if adjust != nil {
			adjust(seed, &opts)
		}
		return opts
	})
}

// runSeeds is Run over seeds, each run's options drawn by options, on every core (ForSeeds).
func runSeeds(t *testing.T, proto, replayCmd string, seeds []uint64, options func(proto string, seed uint64) bench.Options) {
	t.Helper()
	// Each seed keeps only its count, not its Result (histograms per datacenter): the live heap,
	// which every collection marks, stays one run's.
	committed := make([]int, len(seeds))
	seed, err := ForSeeds(seeds, func(i int, seed uint64) error {
		res, err := Check(proto, options(proto, seed))
		if err == nil {
			committed[i] = res.Checker.Committed
		}
		return err
	})
	if err != nil {
		t.Fatalf("seed %d: %v\nreplay: MERIDIAN_SEED=%d %s", seed, err, seed, replayCmd)
	}
	if committed := sum(committed); committed == 0 {
		t.Fatalf("no transaction committed over %d seeds: the property test checks nothing", len(seeds))
	}
	t.Logf("%d seeds, %d committed transactions checked", len(seeds), sum(committed))
}

// sum returns the sum of xs.
func sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}

// seedsToRun is the seed MERIDIAN_SEED names, or 1..SeedsPerProtocol (1..20 with -short). It
// also sets the test's garbage collector up for simulations (SimulationGC).
func seedsToRun(t *testing.T) []uint64 {
	t.Helper()
	SimulationGC(t)
	if s := os.Getenv("MERIDIAN_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MERIDIAN_SEED=%q is not a number", s)
		}
		return []uint64{seed}
	}
	if testing.Short() {
		return SeedRange(20)
	}
	return SeedRange(SeedsPerProtocol)
}

// CatchesBroken is the negative control of a protocol's deliberately broken variant: for seeds
// 1 to seeds it runs proto with opts(seed), which must pass Check, and again with the broken
// parameters added, which the checker must fail on at least minCaught seeds. It proves that a
// test of the protocol can fail. The seeds run on every core (ForSeeds).
func CatchesBroken(t *testing.T, proto string, seeds, minCaught int, opts func(seed uint64) bench.Options, broken protocol.Params) {
	t.Helper()
	SimulationGC(t)
	findings := make([]string, seeds) // the checker's summary of each seed's broken run it failed
	seed, err := ForSeeds(SeedRange(seeds), func(i int, seed uint64) error {
		o := opts(seed)
		if _, err := Check(proto, o); err != nil {
			return fmt.Errorf("without %v: %w", broken, err)
		}
		o.Params = maps.Clone(o.Params)
		if o.Params == nil {
			o.Params = protocol.Params{}
		}
		maps.Copy(o.Params, broken)
		res, err := bench.Run(o, proto)
		if err != nil {
			return err
		}
		if !res.Checker.OK {
			findings[i] = res.Checker.Summary()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	caught := 0
	for i, f := range findings {
		if f != "" {
			if caught++; caught == 1 {
				t.Logf("seed %d: %s", i+1, f)
			}
		}
	}
	if caught < minCaught {
		t.Fatalf("the checker caught %s with %v on %d of %d seeds, want at least %d", proto, broken, caught, seeds, minCaught)
	}
	t.Logf("caught on %d of %d seeds", caught, seeds)
}

// SimulationGC runs the rest of test t with GOGC=400 (unless GOGC is set), as `meridian bench`
// runs simulations: their heaps are mostly short-lived, and collecting a fifth as often makes
// the swarms, most of `go test ./...`'s CPU time, about a tenth cheaper. The previous setting
// comes back when t ends. Run, RunTCC, CatchesBroken, RunEagerGC, CheckRecordsBounded and
// checkpointtest call it; a test of many simulations of its own may too.
func SimulationGC(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		return
	}
	previous := debug.SetGCPercent(400)
	t.Cleanup(func() { debug.SetGCPercent(previous) })
}
