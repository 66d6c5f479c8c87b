package swarm

import (
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// partitionedOptions draws one seed's random run of a partitioned read-write protocol (S-DUR):
// the spec's WAN 1 or WAN 2 deployment, or 2–3 partitions of 1 or 3 replicas spread over
// table4.1 or aws-mf; random jitter; the micro workload on a small key space (contention) with
// random shares of global and snapshot read-only transactions; the protocol's random parameters
// (short timeouts, frequent snapshots); crashes of partition leaders and other nodes, cut links
// between nodes, datacenter partitions and slow links, all over by three quarters of the run;
// and for half the seeds a lossy, duplicating, reordering network.
func partitionedOptions(entry registry.Entry, seed uint64) bench.Options {
	r := rand.New(rand.NewPCG(seed, 0x73647572))
	opts := bench.MicroDefaults()
	opts.Seed = seed
	switch pick := r.IntN(4); pick {
	case 0, 1:
		opts.Topology = preset([]string{"sdur-wan1", "sdur-wan2"}[pick])
	default:
		opts.Topology = preset([]string{"table4.1", "aws-mf"}[pick-2])
		opts.Partitions, opts.Replicas = 2+r.IntN(2), []int{1, 3}[r.IntN(2)]
	}
	topo := opts.Topology
	for a := range topo.N() {
		for b := range a {
			sd := r.Float64() * 0.2 * topo.RTTMs[a][b]
			topo.StdDevMs[a][b], topo.StdDevMs[b][a] = sd, sd
		}
	}
	opts.ClientsPerDC = 1 + r.IntN(4)
	opts.Workload = workload.Micro{ItemsPerPartition: 2 + r.IntN(30), GlobalFraction: 0.6 * r.Float64(),
		ReadOnlyFraction: 0.3 * r.Float64(), ValueBytes: 4}
	opts.DurationUs, opts.WarmupUs, opts.CooldownUs = 3_000_000, 0, 0
	opts.Params = entry.RandomParams(r, topo, 0)
	placement, err := partitioned.PlacementFor(topo, opts.Partitions, opts.Replicas)
	if err != nil {
		panic("swarm: " + err.Error())
	}
	opts.Faults = partitionedFaults(r, topo, placement, opts.DurationUs)
	if r.IntN(2) == 0 {
		opts.Chaos = sim.Chaos{LossProb: 0.1 * r.Float64(), DuplicateProb: 0.2 * r.Float64(), Reorder: r.IntN(2) == 0,
			ExtraDelayMaxUs: r.Int64N(200_001)}
	}
	return opts
}

// partitionedFaults draws up to two crashes of partition leaders (preferred servers), then
// crashes of other nodes and cut links between nodes (randomNodeFaults), then maybe a
// datacenter partition and a slow link (linkFaults), all over by three quarters of the run.
func partitionedFaults(r *rand.Rand, topo *topology.Topology, pl *partitioned.Placement, durationUs int64) []sim.Fault {
	var faults []sim.Fault
	window := func() (int64, int64) {
		start := r.Int64N(durationUs / 2)
		return start, start + 100_000 + r.Int64N(durationUs/4)
	}
	for range r.IntN(3) {
		start, end := window()
		faults = append(faults, sim.Fault{Kind: sim.NodeCrash, Node: pl.Preferred(r.IntN(pl.Partitions())), StartUs: start, EndUs: end})
	}
	faults = append(faults, randomNodeFaults(r, len(pl.DC), durationUs)...)
	return append(faults, linkFaults(r, topo, window)...)
}
