package swarm

import (
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// TCCParams draws one seed's random parameters of a transactional-causal protocol (its
// stabilization period, timeouts short enough to fire, modes); nil draws none.
type TCCParams func(r *rand.Rand) protocol.Params

// TCCOptions draws one seed's random run of a transactional-causal protocol (package tcc): 2–8
// partitions, a small key space for contention, short and long transactions, a write-heavy mix,
// the protocol's parameters from params, and a fault schedule (crashed partitions, cut links
// between partitions) that ends before the run does, so that every transaction must finish.
func TCCOptions(seed uint64, params TCCParams) bench.Options {
	r := rand.New(rand.NewPCG(seed, 0x746363))
	opts := bench.TCCDefaults()
	opts.Seed = seed
	opts.Partitions = 2 + r.IntN(7)
	opts.ClientsPerDC = 2 + r.IntN(11)
	opts.DurationUs, opts.WarmupUs, opts.CooldownUs = 2_000_000, 0, 0
	w := opts.Workload.(workload.TCC)
	w.KeysPerPartition = 1 + r.IntN(8)
	keys := w.KeysPerPartition * opts.Partitions
	w.KeysPerROT = 1 + r.IntN(min(5, keys))
	w.KeysPerWOT = 1 + r.IntN(min(5, keys))
	w.WriteFraction = 0.1 + 0.4*r.Float64()
	w.ValueBytes = 16 + r.IntN(64)
	w.Distribution = workload.DistUniform
	opts.Workload = w
	opts.Faults = randomNodeFaults(r, opts.Partitions, opts.DurationUs)
	if params != nil {
		opts.Params = params(r)
	}
	return opts
}

// randomNodeFaults draws up to two crashed nodes and up to two cut links between nodes, among
// nodes 0 to nodes-1 (the partitions of the TCC swarm, every replica of the partitioned one),
// all over by three quarters of the run.
func randomNodeFaults(r *rand.Rand, nodes int, durationUs int64) []sim.Fault {
	var faults []sim.Fault
	window := func() (int64, int64) {
		start := r.Int64N(durationUs / 2)
		return start, start + 50_000 + r.Int64N(durationUs/4)
	}
	for range r.IntN(3) {
		start, end := window()
		faults = append(faults, sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(r.IntN(nodes)), StartUs: start, EndUs: end})
	}
	for range r.IntN(3) {
		a := r.IntN(nodes)
		b := (a + 1 + r.IntN(nodes-1)) % nodes
		start, end := window()
		faults = append(faults, sim.Fault{Kind: sim.NodeCut, Node: protocol.NodeID(a), PeerNode: protocol.NodeID(b), StartUs: start, EndUs: end})
	}
	return faults
}

// RunTCC runs proto over SeedsPerProtocol random seeds (TCCOptions with params) in test t and
// requires every run to be good (bench.Result.Problem: no anomaly the protocol's consistency
// forbids, every read's value matching its version) and every transaction to finish once the
// faults are over. A failing seed prints everything needed to replay it (see Run for replayCmd
// and MERIDIAN_SEED). A protocol that promises only eventual consistency (registry.Eventual, ec)
// may show the causality anomalies C2 and C3, which RunTCC counts and returns; any other finding
// (a dirty read, a cut-isolation violation, a version never visible at quiescence, a lost write)
// fails it too.
func RunTCC(t *testing.T, proto, replayCmd string, params TCCParams) (expectedAnomalies int) {
	t.Helper()
	seeds := seedsToRun(t)
	checked := 0
	for _, seed := range seeds {
		opts := TCCOptions(seed, params)
		res, err := bench.Run(opts, proto)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		expectedAnomalies += res.ExpectedAnomalies()
		if err := res.Problem(); err != nil || res.Unfinished > 0 {
			t.Fatalf("seed %d: %v; %s; %d transactions unfinished\nreplay: MERIDIAN_SEED=%d %s\nparameters: %s",
				seed, err, res.Checker.Summary(), res.Unfinished, seed, replayCmd, res.Replay)
		}
		checked += res.TCC().ROTs + res.TCC().WOTs
	}
	if checked == 0 {
		t.Fatalf("no transaction finished over %d seeds: the property test checks nothing", len(seeds))
	}
	t.Logf("%d seeds, %d transactions checked, %d anomalies an eventually consistent protocol may show", len(seeds), checked, expectedAnomalies)
	return expectedAnomalies
}
