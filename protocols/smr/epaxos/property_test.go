package epaxos

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
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
// and recovery's FQ−1 = 4 > f = 3 evidence threshold are exercised: each seed keeps the swarm's
// workload, chaos and parameters, replaces the faults by up to three replica crashes (f = 3) and
// crashDuringRecovery's two, and requires a clean checker and every transaction finished. 40
// seeds (10 with -short).
func TestPropertySafetySevenSites(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 10
	}
	committed := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		opts := swarm.Options("epaxos", seed)
		r := rand.New(rand.NewPCG(seed, 0x37))
		opts.Topology = paper7()
		n := opts.Topology.N()
		opts.ClockOffsetUs, opts.ClockDriftPPM = make([]int64, n), make([]float64, n)
		for dc := range n {
			opts.ClockOffsetUs[dc] = r.Int64N(200_001) - 100_000
			opts.ClockDriftPPM[dc] = r.Float64()*200 - 100
		}
		opts.Faults = nil
		for _, dc := range r.Perm(n)[:r.IntN(4)] {
			start := r.Int64N(opts.DurationUs / 2)
			opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(dc), StartUs: start, EndUs: start + 100_000 + r.Int64N(opts.DurationUs/3)})
		}
		crashDuringRecovery(seed, &opts)
		res, err := bench.Run(opts, "epaxos")
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Problem(); err != nil || res.Unfinished > 0 {
			t.Fatalf("seed %d: %v; %d unfinished\nparameters: %s", seed, err, res.Unfinished, res.Replay)
		}
		committed += res.Checker.Committed
	}
	if committed == 0 {
		t.Fatal("nothing committed")
	}
	t.Logf("%d seeds, %d committed transactions checked", seeds, committed)
}
