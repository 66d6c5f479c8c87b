package logsim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// TestGeoDeployment runs three datacenters of the table4.1 preset (RTTs 20–40 ms) with two
// machines per stage and checks that every append reaches every log once, in causal order.
func TestGeoDeployment(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	o := Options{Topology: topo, Seed: 1, Jitter: 1, ClientsPerDC: 3, DurationUs: 500_000, ThinkUs: 2000, RetryUs: 300_000,
		ReadProb: 0.3, BodyBytes: 512, SettleUs: 5_000_000, CheckEveryUs: 5000,
		Params: protocol.Params{"maintainers": "2", "batchers": "2", "filters": "2", "queues": "2", "senders": "2", "receivers": "2", "b": "50"}}
	res, err := Run(o)
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	if res.Appends < 300 || res.Reads == 0 {
		t.Fatalf("%d appends and %d reads: too few to check anything", res.Appends, res.Reads)
	}
	t.Logf("%d appends, %d reads, %d retries, logs %v, end %d µs", res.Appends, res.Reads, res.Retries, res.Records, res.EndUs)
}

// Draw draws seed's swarm run: two or three datacenters with jitter, random stage counts with a
// spare of each role, range sizes, token carrying, garbage collection, clients, node crashes of
// any stage, datacenter outages, partitions between datacenters, duplication, loss, reordering, elasticity
// events, batchers, filters, senders, receivers and queues restarting empty, and in some runs Hyksos clients (puts, gets, GET_TXNs) instead of appenders.
func Draw(seed uint64) Options {
	r := rand.New(rand.NewPCG(seed, 0x737761726d))
	topo, _ := topology.Preset("table4.1")
	if r.IntN(2) == 0 {
		topo, _ = topology.Subset(topo, topo.DCs[:2])
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
	if r.IntN(4) == 0 {
		o.Hyksos = &HyksosWorkload{Keys: 10, PutProb: 0.5, TxnProb: 0.3, TxnKeys: 3}
		if p["gc"] == "true" {
			p["gc"], p["gc_keep_latest"] = "false", "true"
		}
	}
	return o
}

// TestSwarm runs seeds of Draw: 40 (20 with -short; the 200-seed campaign with
// MERIDIAN_LONG=1, about 2 minutes here; MERIDIAN_SEED=N replays one). Every run is checked
// during the run and at its end, with every record in every datacenter's log exactly once after
// the faults heal.
func TestSwarm(t *testing.T) {
	appends, restarts, queueRestarts, rebuilds := 0, 0, 0, 0
	seeds := swarm.Seeds(t)
	if os.Getenv("MERIDIAN_LONG") == "" && len(seeds) > 40 {
		seeds = seeds[:40]
	}
	for _, seed := range seeds {
		o := Draw(seed)
		res, err := Run(o)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s\nreplay: MERIDIAN_SEED=%d go test ./protocols/log/logsim -run 'TestSwarm$'", seed, err, o, seed)
		}
		appends += res.Appends
		restarts += res.Restarts
		rebuilds += res.TokenRebuilds
		for _, e := range o.Events {
			if e.Kind == RestartQueue || e.Kind == RestartLastQueue {
				queueRestarts++
			}
		}
	}
	if appends == 0 {
		t.Fatal("no append answered: the swarm checks nothing")
	}
	t.Logf("%d appends checked, %d stage machines restarted empty (%d queue restart events), %d token rebuilds (counted since each queue's last start)",
		appends, restarts, queueRestarts, rebuilds)
}

// TestSwarmCatchesBroken is the swarm's negative control: on the first seeds with more
// duplication, the correct pipeline must pass, and with a filter that does not deduplicate, or
// a queue that ignores dependencies, the checks must fail on one of the first three
// (duplicated batches and client retries; reads followed by appends across the WAN).
func TestSwarmCatchesBroken(t *testing.T) {
	for _, broken := range []string{chariots.UnsafeFilterNoDedupe, chariots.UnsafeQueueIgnoreDeps} {
		caught := 0
		for seed := uint64(1); seed <= 3 && caught == 0; seed++ {
			o := Draw(seed)
			o.Chaos.DuplicateProb = 0.1
			if _, err := Run(o); err != nil {
				t.Fatalf("seed %d, correct pipeline: %v\n%s", seed, err, o)
			}
			o.Params[broken] = "true"
			if _, err := Run(o); err != nil {
				caught++
				t.Logf("%s caught on seed %d: %v", broken, seed, firstLine(err))
			}
		}
		if caught == 0 {
			t.Errorf("%s: no seed caught", broken)
		}
	}
}

func firstLine(err error) string { return strings.SplitN(err.Error(), "\n", 2)[0] }

// TestSimulationIsDeterministic runs one faulty swarm seed twice and requires identical logs
// and counters, and different ones for another seed.
func TestSimulationIsDeterministic(t *testing.T) {
	var runs [3]string
	for i := range runs {
		o := Draw(7 + uint64(i/2))
		res, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = fmt.Sprintf("%+v %d %d", res.Sim, res.Appends, res.Retries)
		for _, log := range res.Snapshot.Logs {
			for l := uint64(1); log[l] != nil; l++ {
				runs[i] += fmt.Sprintf(" %d:%v", l, log[l].Key())
			}
		}
	}
	if runs[0] != runs[1] {
		t.Fatal("two runs of one seed differ")
	}
	if runs[0] == runs[2] {
		t.Fatal("two seeds gave the same run")
	}
}
