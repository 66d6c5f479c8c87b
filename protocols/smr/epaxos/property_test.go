package epaxos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// TestPropertySafety runs EPaxos over the swarm's random seeds (skew, jitter, contention,
// outages, partitions, slow links, lossy, duplicating and reordering networks) plus two crashes
// aimed at recovery per seed (crashDuringRecovery), and requires the checker to find no anomaly
// and every transaction to be decided once faults end. -short runs 20 seeds, the default 200.
func TestPropertySafety(t *testing.T) {
	swarm.RunWith(t, "epaxos", "go test ./protocols/smr/epaxos -run TestPropertySafety", crashDuringRecovery)
}

// crashDuringRecovery adds two replica crashes aimed at recovery to a seed's options, drawn from
// a stream of its own so that the swarm's draws stay as they were: a command leader crashes with
// its instances in flight, and about recover_after later (plus up to two of its largest RTTs)
// another replica, possibly one recovering the leader's instances, crashes too. recover_after is
// drawn from [20 ms, 1 s], so recoveries are frequent and race leaders that are still alive.
// Node crashes compose with the swarm's datacenter outages (a replica stays down until both end).
func crashDuringRecovery(seed uint64, opts *bench.Options) {
	r := rand.New(rand.NewPCG(seed, 0x65706178))
	topo := opts.Topology
	n := topo.N()
	recoverMs := 20 + r.Int64N(981)
	opts.Params = protocol.Params{ParamRecoverAfter: fmt.Sprintf("%dms", recoverMs)}
	leader := r.IntN(n)
	other := (leader + 1 + r.IntN(n-1)) % n
	start := 200_000 + r.Int64N(1_000_000)
	second := start + recoverMs*1000 + r.Int64N(int64(2*topo.MaxRTTMs(leader)*1000)+1)
	opts.Faults = append(opts.Faults,
		sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(leader), StartUs: start, EndUs: start + 300_000 + r.Int64N(700_000)},
		sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(other), StartUs: second, EndUs: second + 200_000 + r.Int64N(500_000)})
}

// TestPropertySafetySevenSites runs seeds on the spec's 7-site table, where the fast quorum (5)
// exceeds the classic one (4), so the fast-path timeout, the slow path with a classic quorum only
// and recovery's FQ−1 = 4 > f = 3 evidence threshold (and with it TryPreAccept) are exercised,
// with network batching as registered: each seed keeps the swarm's workload, chaos and
// parameters, replaces the faults by up to three replica crashes (f = 3) and
// crashDuringRecovery's two, and requires a clean checker and every transaction finished. 40
// seeds (10 with -short).
func TestPropertySafetySevenSites(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 10
	}
	runOn(t, "epaxos", paper7(), seeds, func(seed uint64, r *rand.Rand, opts *bench.Options) {
		n := opts.Topology.N()
		for _, dc := range r.Perm(n)[:r.IntN(4)] {
			start := r.Int64N(opts.DurationUs / 2)
			opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(dc), StartUs: start, EndUs: start + 100_000 + r.Int64N(opts.DurationUs/3)})
		}
		crashDuringRecovery(seed, opts)
	})
}

// TestPropertyTryPreAccept aims at recovery's TryPreAccept (step 4) on 5 sites (aws-5: FQ = CQ =
// 3, FQ−1 = 2 > ⌊(f+1)/2⌋ = 1) and the spec's 7 (FQ−1 = 4 > 2): per seed, a command leader and
// a second replica crash within 50 ms of each other and stay down for 1–2 s, with recover_after
// 20–300 ms, so the survivors recover the leader's instances while a replica that may hold the
// evidence of a fast commit is unheard. It requires a clean checker, every transaction finished,
// and TryPreAccept to have run. 10 seeds per topology; MERIDIAN_LONG=1 runs 200.
func TestPropertyTryPreAccept(t *testing.T) {
	seeds := uint64(10)
	if os.Getenv("MERIDIAN_LONG") != "" {
		seeds = swarm.SeedsPerProtocol
	}
	aws5, _ := topology.Preset("aws-5")
	tries := 0
	for _, topo := range []*topology.Topology{aws5, paper7()} {
		tries += runOn(t, "epaxos-inspect", topo, seeds, crashTwoTogether)
	}
	if tries == 0 {
		t.Fatal("no recovery sent TryPreAccept: the test exercised nothing")
	}
}

// crashTwoTogether is TestPropertyTryPreAccept's faults: a command leader and a second replica
// crash within 50 ms of each other for 1–2 s, with recover_after 20–300 ms.
func crashTwoTogether(_ uint64, r *rand.Rand, opts *bench.Options) {
	n := opts.Topology.N()
	opts.Params = protocol.Params{ParamRecoverAfter: fmt.Sprintf("%dms", 20+r.Int64N(281))}
	leader := r.IntN(n)
	other := (leader + 1 + r.IntN(n-1)) % n
	start := 200_000 + r.Int64N(opts.DurationUs/2)
	second := start + r.Int64N(50_001)
	opts.Faults = append(opts.Faults,
		sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(leader), StartUs: start, EndUs: start + 1_000_000 + r.Int64N(1_000_001)},
		sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(other), StartUs: second, EndUs: second + 1_000_000 + r.Int64N(1_000_001)})
}

// TestCheckerCatchesTryPreAcceptWithoutConflictCheck is TryPreAccept's negative control: seed 45
// of TestPropertyTryPreAccept on aws-5, whose recoveries send TryPreAccept, is clean, and with
// unsafe_try_ignores_conflicts (every replica pre-accepts a tried value without looking for
// conflicting commands) the checker finds the replicas diverged.
func TestCheckerCatchesTryPreAcceptWithoutConflictCheck(t *testing.T) {
	aws5, _ := topology.Preset("aws-5")
	opts := onTopology("epaxos-inspect", 45, aws5, crashTwoTogether)
	if res, err := bench.Run(opts, "epaxos-inspect"); err != nil || res.Problem() != nil {
		t.Fatalf("the control run: %v %v", err, res.Problem())
	}
	opts.Params[ParamUnsafeTryIgnoresConflicts] = "true"
	res, err := bench.Run(opts, "epaxos-inspect")
	if err != nil {
		t.Fatal(err)
	}
	if res.Problem() == nil {
		t.Fatal("the checker found nothing wrong with TryPreAccept's conflict check turned off")
	}
	t.Logf("caught: %v", res.Problem())
}

// onTopology is seed's swarm run of proto moved to topo (moveTo).
func onTopology(proto string, seed uint64, topo *topology.Topology, faults func(seed uint64, r *rand.Rand, opts *bench.Options)) bench.Options {
	opts := swarm.Options(proto, seed)
	moveTo(seed, topo, faults, &opts)
	return opts
}

// moveTo moves seed's swarm run opts to topo: the swarm's workload, chaos and parameters stay,
// clock skew is redrawn for topo's datacenters and the faults are replaced by those faults adds.
func moveTo(seed uint64, topo *topology.Topology, faults func(seed uint64, r *rand.Rand, opts *bench.Options), opts *bench.Options) {
	r := rand.New(rand.NewPCG(seed, 0x37))
	opts.Topology = topo
	n := topo.N()
	opts.ClockOffsetUs, opts.ClockDriftPPM = make([]int64, n), make([]float64, n)
	for dc := range n {
		opts.ClockOffsetUs[dc] = r.Int64N(200_001) - 100_000
		opts.ClockDriftPPM[dc] = r.Float64()*200 - 100
	}
	opts.Faults = nil
	faults(seed, r, opts)
}

// runOn runs seeds 1..seeds of proto's swarm on topo (onTopology). It requires a clean checker
// and every transaction finished, and returns how many recoveries sent TryPreAccept (counted for
// epaxos-inspect, whose replicas the test can see).
func runOn(t *testing.T, proto string, topo *topology.Topology, seeds uint64, faults func(seed uint64, r *rand.Rand, opts *bench.Options)) (tries int) {
	t.Helper()
	committed := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		opts := onTopology(proto, seed, topo, faults)
		inspected = nil
		res, err := bench.Run(opts, proto)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Problem(); err != nil || res.Unfinished > 0 {
			t.Fatalf("%s seed %d: %v; %d unfinished\nparameters: %s", topo.Name, seed, err, res.Unfinished, res.Replay)
		}
		committed += res.Checker.Committed
		for _, r := range inspected {
			tries += r.stats.Tries
		}
	}
	if committed == 0 {
		t.Fatal("nothing committed")
	}
	t.Logf("%s: %d seeds, %d committed transactions checked", topo.Name, seeds, committed)
	if proto == "epaxos-inspect" {
		t.Logf("%d recoveries sent TryPreAccept", tries)
	}
	return tries
}
