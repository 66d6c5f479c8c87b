package logsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// Draw draws seed's swarm run: two or three datacenters with jitter, random stage counts with a
// spare of each role, range sizes, token carrying, garbage collection, clients, node crashes of
// any stage, datacenter outages, partitions between datacenters, duplication, loss, reordering, elasticity
// events, batchers, filters, senders, receivers and queues restarting empty, and in some runs Hyksos clients (puts, gets, GET_TXNs) instead of appenders.
func Draw(seed uint64) Options { return draw(seed, "chariots") }

// SwarmNames are the names `meridian swarm` runs through the shared log's swarm (DrawFor).
var SwarmNames = []string{"chariots", "flstore", "hyksos"}

// DrawFor draws seed's swarm run for name, one of SwarmNames: "chariots" is Draw; "flstore" the
// same draws on one datacenter (the shared log of one datacenter, FLStore's maintainers behind
// Chariots' pipeline; partitions between datacenters become outages); "hyksos" the same draws
// with Hyksos clients in every run instead of a quarter of them.
func DrawFor(name string, seed uint64) (Options, error) {
	if !slices.Contains(SwarmNames, name) {
		return Options{}, fmt.Errorf("logsim: no swarm for %q (one of %s)", name, strings.Join(SwarmNames, ", "))
	}
	return draw(seed, name), nil
}

// draw is Draw and DrawFor. The variants take the same random draws as chariots, in the same
// order, so that a seed's faults and parameters stay alike across them.
func draw(seed uint64, name string) Options {
	r := rand.New(rand.NewPCG(seed, 0x737761726d))
	topo, _ := topology.Preset("table4.1")
	if r.IntN(2) == 0 || name == "flstore" {
		topo, _ = topology.Subset(topo, topo.DCs[:2])
	}
	if name == "flstore" {
		topo, _ = topology.Subset(topo, topo.DCs[:1])
	}
	p := protocol.Params{
		"maintainers": fmt.Sprint(1 + r.IntN(3)), "batchers": fmt.Sprint(1 + r.IntN(2)), "filters": fmt.Sprint(1 + r.IntN(3)),
		"queues": fmt.Sprint(1 + r.IntN(2)), "senders": fmt.Sprint(1 + r.IntN(2)), "receivers": fmt.Sprint(1 + r.IntN(2)),
		"spare_queues": "1", "spare_maintainers": "1", "spare_batchers": "1", "spare_filters": "1",
		"b": fmt.Sprint([]int{1, 4, 50}[r.IntN(3)]), "carry_max": fmt.Sprint([]int{1, 1000}[r.IntN(2)]),
		"gc": fmt.Sprint(r.IntN(2) == 0), "hold": fmt.Sprintf("%dms", 1+r.IntN(3)), "gossip": fmt.Sprintf("%dms", 1+r.IntN(3)),
	}
	o := Options{Topology: topo, Params: p, Seed: seed, Jitter: r.Float64(), ClientsPerDC: 1 + r.IntN(3),
		DurationUs: 600_000, ThinkUs: int64(1000 + r.IntN(10_000)), RetryUs: 200_000, ReadProb: 0.3, BodyBytes: 16,
		SettleUs: 10_000_000, CheckEveryUs: 20_000}
	cfg, err := chariots.ParseConfig(topo.N(), p, 40)
	if err != nil {
		panic(err)
	}
	l := cfg.Layout
	for range r.IntN(4) {
		start := int64(r.IntN(500_000))
		end := start + int64(20_000+r.IntN(300_000))
		switch r.IntN(5) {
		case 0, 1, 2:
			o.Faults = append(o.Faults, sim.Fault{Kind: sim.NodeCrash, Node: protocol.NodeID(r.IntN(len(l.Nodes))), StartUs: start, EndUs: end})
		case 3:
			o.Faults = append(o.Faults, sim.Fault{Kind: sim.Outage, DC: topo.DCs[r.IntN(topo.N())], StartUs: start, EndUs: end})
		default:
			if topo.N() == 1 {
				o.Faults = append(o.Faults, sim.Fault{Kind: sim.Outage, DC: topo.DCs[0], StartUs: start, EndUs: end})
				continue
			}
			a := r.IntN(topo.N())
			b := (a + 1 + r.IntN(topo.N()-1)) % topo.N()
			o.Faults = append(o.Faults, sim.Fault{Kind: sim.Partition, DC: topo.DCs[a], Peer: topo.DCs[b], StartUs: start, EndUs: end})
		}
	}
	if r.IntN(2) == 0 {
		o.Chaos = sim.Chaos{DuplicateProb: 0.05 * r.Float64(), LossProb: 0.02 * r.Float64()}
		if r.IntN(2) == 0 {
			o.Chaos.Reorder, o.Chaos.ExtraDelayMaxUs = true, int64(r.IntN(3000))
		}
	}
	for range r.IntN(4) {
		// elasticity, or a restart of a batcher, filter, sender, receiver or queue
		e := Event{Kind: EventKind(1 + r.IntN(10)), DC: r.IntN(topo.N()), AtUs: int64(50_000 + r.IntN(500_000))}
		e.Host = (e.DC + 1) % topo.N()
		o.Events = append(o.Events, e)
	}
	// A quarter of the runs run Hyksos clients, with Hyksos's garbage collection if collection
	// was drawn (the log's plain collection drops current values).
	if r.IntN(4) == 0 || name == "hyksos" {
		o.Hyksos = &HyksosWorkload{Keys: 10, PutProb: 0.5, TxnProb: 0.3, TxnKeys: 3}
		if p["gc"] == "true" {
			p["gc"], p["gc_keep_latest"] = "false", "true"
		}
	}
	return o
}
