package swarm

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TCCOptions draws one seed's random run of proto, a transactional-causal protocol (package
// tcc): 2–8 partitions, a small key space for contention, short and long transactions, a
// write-heavy mix, the protocol's random parameters (registry.Entry.RandomParams) overridden by
// extra, and a fault schedule (crashed partitions, cut links between partitions) that ends
// before the run does, so that every transaction must finish. A protocol that spans datacenters
// (registry.Entry.SpansDatacenters) runs on 2 to 5 of aws-mf's, with WAN jitter, and may also
// see a WAN partition between two of them.
func TCCOptions(proto string, seed uint64, extra protocol.Params) bench.Options {
	entry := lookup(proto)
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
	if entry.RandomParams != nil {
		opts.Params = entry.RandomParams(r, nil, 0)
	}
	if len(extra) > 0 {
		if opts.Params == nil {
			opts.Params = protocol.Params{}
		}
		maps.Copy(opts.Params, extra)
	}
	if entry.SpansDatacenters {
		spreadOverDatacenters(seed, &opts)
	}
	return opts
}

// spreadOverDatacenters moves a one-datacenter TCC run to 2 to 5 of aws-mf's datacenters with
// WAN jitter and 1 to 3 clients per datacenter, spreads its node faults over every datacenter's
// nodes, for half the seeds adds a WAN partition between two datacenters, healed before the
// end, and for two seeds in three makes clients move between datacenters (2–22% of their
// transactions start with a move). It draws from a stream of its own, so that the one-datacenter draws stay as they are.
func spreadOverDatacenters(seed uint64, opts *bench.Options) {
	r := rand.New(rand.NewPCG(seed, 0x6e0))
	opts.Jitter = 1
	topo := preset("aws-mf")
	opts.Topology = topo
	if n := 2 + r.IntN(topo.N()-1); n < topo.N() {
		opts.Topology, _ = topology.Subset(topo, topo.DCs[:n])
	}
	opts.ClientsPerDC = 1 + r.IntN(3)
	nodes := opts.Topology.N() * opts.Partitions
	for i := range opts.Faults {
		f := &opts.Faults[i]
		f.Node, f.PeerNode = protocol.NodeID(r.IntN(nodes)), protocol.NodeID(r.IntN(nodes))
		if f.Node == f.PeerNode {
			f.Kind = sim.NodeCrash
		} else {
			f.Kind = sim.NodeCut
		}
	}
	if r.IntN(2) == 0 {
		a, b := r.IntN(opts.Topology.N()), r.IntN(opts.Topology.N()-1)
		if b >= a {
			b++
		}
		start := r.Int64N(opts.DurationUs / 2)
		opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Partition, DC: opts.Topology.DCs[a], Peer: opts.Topology.DCs[b],
			StartUs: start, EndUs: start + 100_000 + r.Int64N(opts.DurationUs/3)})
	}
	if r.IntN(3) > 0 { // two seeds in three have clients that move between datacenters
		w := opts.Workload.(workload.TCC)
		w.MoveFraction = 0.02 + 0.2*r.Float64()
		opts.Workload = w
	}
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

// RunTCC runs proto over SeedsPerProtocol random seeds (TCCOptions with extra) in test t and
// requires every run to be good (Check: no anomaly the protocol's consistency forbids, every
// read's value matching its version, every transaction finished once the faults are over). A
// failing seed prints everything needed to replay it (see Run for replayCmd and MERIDIAN_SEED).
// A protocol that promises only eventual consistency (registry.Eventual, ec) may show the
// causality anomalies C2 and C3, which RunTCC counts and returns.
func RunTCC(t *testing.T, proto, replayCmd string, extra protocol.Params) (expectedAnomalies int) {
	t.Helper()
	return runTCCSeeds(t, proto, replayCmd, seedsToRun(t), extra)
}

// RunTCCVariant is RunTCC for a variant of proto's plain swarm (RunTCC with no extra, which the
// protocol's tests must also run): every seed with extra's parameters forced. It skips the seeds
// whose random draw (registry.Entry.RandomParams) already holds every value of extra: forcing
// them changes nothing, so those runs are byte for byte the plain swarm's, already checked there.
// Together the two swarms still run every seed of 1..SeedsPerProtocol with the variant's
// parameters once. A seed named by MERIDIAN_SEED always runs.
func RunTCCVariant(t *testing.T, proto, replayCmd string, extra protocol.Params) (expectedAnomalies int) {
	t.Helper()
	all := seedsToRun(t)
	seeds := all[:0:0]
	for _, seed := range all {
		if drawn := TCCOptions(proto, seed, nil).Params; len(all) == 1 || !holdsAll(drawn, extra) {
			seeds = append(seeds, seed)
		}
	}
	t.Logf("%d of %d seeds differ from the plain swarm's with %v", len(seeds), len(all), extra)
	return runTCCSeeds(t, proto, replayCmd, seeds, extra)
}

// holdsAll reports whether params has every key of want with want's value.
func holdsAll(params, want protocol.Params) bool {
	for k, v := range want {
		if got, ok := params[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// runTCCSeeds is RunTCC over seeds.
func runTCCSeeds(t *testing.T, proto, replayCmd string, seeds []uint64, extra protocol.Params) (expectedAnomalies int) {
	t.Helper()
	// Each seed keeps only its counts, not its Result, as in runSeeds.
	anomalies, finished := make([]int, len(seeds)), make([]int, len(seeds))
	seed, err := ForSeeds(seeds, func(i int, seed uint64) error {
		res, err := Check(proto, TCCOptions(proto, seed, extra))
		if err == nil {
			anomalies[i], finished[i] = res.ExpectedAnomalies(), res.TCC().ROTs+res.TCC().WOTs
		}
		return err
	})
	if err != nil {
		t.Fatalf("seed %d: %v\nreplay: MERIDIAN_SEED=%d %s", seed, err, seed, replayCmd)
	}
	expectedAnomalies, checked := sum(anomalies), sum(finished)
	if checked == 0 {
		t.Fatalf("no transaction finished over %d seeds: the property test checks nothing", len(seeds))
	}
	t.Logf("%d seeds, %d transactions checked, %d anomalies an eventually consistent protocol may show", len(seeds), checked, expectedAnomalies)
	return expectedAnomalies
}
