package multipaxos

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// observedTYCSB is T-YCSB whose runs note, at every tick, whether a replica other than the
// preferred leader leads: the proof that a seed exercised a fail-over.
type observedTYCSB struct {
	workload.TYCSB
	failedOver *bool
}

func (o observedTYCSB) NewRun(info workload.RunInfo) (workload.Run, error) {
	run, err := o.TYCSB.NewRun(info)
	return observedRun{Run: run, failedOver: o.failedOver}, err
}

type observedRun struct {
	workload.Run
	failedOver *bool
}

func (o observedRun) Tick(replicas []protocol.Replica, nowUs int64) {
	for dc, r := range replicas {
		if w, ok := r.(*batch.Replica); ok {
			r = w.Inner()
		}
		if mp, ok := r.(*Replica); ok && mp.IsLeader() && dc != mp.preferred {
			*o.failedOver = true
		}
	}
	o.Run.Tick(replicas, nowUs)
}

// leaderCrashOptions is swarm seed seed of proto with, in addition to the seed's own faults and
// chaos, an outage of the preferred leader twice as long as a lease drawn from 1.2 to 2.5 times
// the largest RTT (plus 200 ms), starting between 0.2 and 0.6 s: long enough that a follower
// takes over, and over before the run ends. In half the seeds the next replica in the fail-over
// order crashes too, for 0.1 to 0.6 s, while it runs (or is about to run) phase 1.
func leaderCrashOptions(proto string, seed uint64, failedOver *bool) bench.Options {
	opts := swarm.Options(proto, seed)
	r := rand.New(rand.NewPCG(seed, 0x6c6561646572))
	maxRTTMs := 0.0
	for dc := range opts.Topology.N() {
		maxRTTMs = max(maxRTTMs, opts.Topology.MaxRTTMs(dc))
	}
	leaseMs := int64(maxRTTMs * (1.2 + 1.3*r.Float64()))
	opts.Params[ParamLease] = fmt.Sprintf("%dms", leaseMs)
	p := LowestMeanRTT
	if proto == "multipaxos-hi" {
		p = HighestMeanRTT
	}
	start := 200_000 + r.Int64N(400_000)
	order := FailoverOrder(opts.Topology, p)
	opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Outage, DC: opts.Topology.DCs[order[0]],
		StartUs: start, EndUs: start + 2*leaseMs*1000 + 200_000})
	if r.IntN(2) == 0 { // the first in line crashes too, around when it runs phase 1
		mid := start + leaseMs*1000*5/4 + r.Int64N(int64(maxRTTMs*1000)+1)
		opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Outage, DC: opts.Topology.DCs[order[1]],
			StartUs: mid, EndUs: mid + 100_000 + r.Int64N(500_000)})
	}
	opts.Workload = observedTYCSB{TYCSB: opts.Workload.(workload.TYCSB), failedOver: failedOver}
	return opts
}

// TestPropertyLeaderCrash runs the swarm's seeds with an added crash of the leader (see
// leaderCrashOptions): the checker must find no anomaly, every transaction must finish once the
// leader is back, and most seeds must have failed over (a follower led at some point).
func TestPropertyLeaderCrash(t *testing.T) {
	seeds := uint64(swarm.SeedsPerProtocol)
	if testing.Short() {
		seeds = 20
	}
	for _, proto := range []string{"multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) {
			failovers := 0
			for seed := uint64(1); seed <= seeds; seed++ {
				failedOver := false
				opts := leaderCrashOptions(proto, seed, &failedOver)
				res, err := bench.Run(opts, proto)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if err := res.Problem(); err != nil || res.Unfinished > 0 {
					t.Fatalf("seed %d: %v; %s; %d transactions unfinished\nreplay: leaderCrashOptions(%q, %d)\nparameters: %s",
						seed, err, res.Checker.Summary(), res.Unfinished, proto, seed, res.Replay)
				}
				if failedOver {
					failovers++
				}
			}
			if failovers < int(seeds)*3/4 {
				t.Fatalf("only %d of %d seeds failed over", failovers, seeds)
			}
			t.Logf("%d seeds, %d failed over", seeds, failovers)
		})
	}
}

// TestCheckerCatchesCommitWithoutMajority is the negative control: a leader that counts a slot
// chosen on its own acceptance (unsafe_commit_without_majority), cut off from both followers
// for a second on aws-3, keeps committing its clients' transactions while the followers elect a
// new leader that fills the same slots differently. The checker must catch the divergence on
// most seeds, and the same runs without the unsafe switch must be clean.
func TestCheckerCatchesCommitWithoutMajority(t *testing.T) {
	swarm.CatchesBroken(t, "multipaxos-lo", 10, 8, func(seed uint64) bench.Options {
		opts := bench.Defaults()
		opts.Topology, _ = topology.Preset("aws-3")
		opts.Seed = seed
		opts.ClientsPerDC = 2
		opts.Workload = workload.TYCSB{Keys: 20, Distribution: workload.DistUniform, OpsPerTxn: 3, ReadRatio: 0.5}
		opts.DurationUs, opts.WarmupUs = 3_000_000, 0
		opts.Params = protocol.Params{ParamLease: "500ms"}
		for _, peer := range []string{"IE", "TK"} { // VA leads
			opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Partition, DC: "VA", Peer: peer, StartUs: 500_000, EndUs: 1_500_000})
		}
		return opts
	}, protocol.Params{ParamUnsafeCommitWithoutMajority: "true"})
}

// sevenSiteOptions is swarm seed seed of proto moved to aws-7 (the swarm's own topologies have
// at most five datacenters): the seed's workload, chaos and parameters, clocks redrawn for seven
// sites, and faults drawn here: the leader crashes, and so do up to two others (f = 3), at random
// times, and one random pair of sites is partitioned; all faults end by 2.5 s.
func sevenSiteOptions(proto string, seed uint64) bench.Options {
	opts := swarm.Options(proto, seed)
	r := rand.New(rand.NewPCG(seed, 0x736576656e))
	topo, _ := topology.Preset("aws-7")
	opts.Topology = topo
	opts.ClockOffsetUs, opts.ClockDriftPPM = make([]int64, topo.N()), make([]float64, topo.N())
	for dc := range topo.N() {
		opts.ClockOffsetUs[dc] = r.Int64N(200_001) - 100_000
		opts.ClockDriftPPM[dc] = r.Float64()*200 - 100
	}
	opts.Params = randomParams(r, topo, 0)
	p := LowestMeanRTT
	if proto == "multipaxos-hi" {
		p = HighestMeanRTT
	}
	order := FailoverOrder(topo, p)
	victims := append([]int{order[0]}, r.Perm(topo.N() - 1)[:r.IntN(3)]...)
	opts.Faults = nil
	for i, v := range victims {
		if i > 0 {
			v = order[1+v]
		}
		start := r.Int64N(1_500_000)
		opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Outage, DC: topo.DCs[v], StartUs: start, EndUs: start + 100_000 + r.Int64N(2_500_000-start-100_000)})
	}
	a, b := r.IntN(topo.N()), r.IntN(topo.N()-1)
	if b >= a {
		b++
	}
	start := r.Int64N(1_500_000)
	opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Partition, DC: topo.DCs[a], Peer: topo.DCs[b], StartUs: start, EndUs: start + 500_000})
	return opts
}

// TestPropertySevenSites runs 50 seeds (10 with -short) of each placement on aws-7 with crashes
// of the leader and of up to two more sites, a partition, and the seed's chaos: no anomaly, and
// every transaction finished once the faults are over.
func TestPropertySevenSites(t *testing.T) {
	seeds := uint64(50)
	if testing.Short() {
		seeds = 10
	}
	for _, proto := range []string{"multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) {
			committed := 0
			for seed := uint64(1); seed <= seeds; seed++ {
				res, err := bench.Run(sevenSiteOptions(proto, seed), proto)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if err := res.Problem(); err != nil || res.Unfinished > 0 {
					t.Fatalf("seed %d: %v; %s; %d transactions unfinished\nreplay: sevenSiteOptions(%q, %d)\nparameters: %s",
						seed, err, res.Checker.Summary(), res.Unfinished, proto, seed, res.Replay)
				}
				committed += res.Checker.Committed
			}
			t.Logf("%d seeds, %d committed transactions checked", seeds, committed)
		})
	}
}
