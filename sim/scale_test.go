package sim

import (
	"cmp"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
)

// gossip is the scale benchmark's message: one node's stabilization value (a scalar, as
// FastCCS's all-to-all stabilization sends).
type gossip struct{ value int64 }

func (*gossip) SizeBytes() int { return 64 }

// gossiper sends a gossip to every other node every intervalUs and keeps the minimum it hears:
// the cheapest protocol that loads the simulator with N² messages per interval.
type gossiper struct {
	cfg        protocol.Config
	env        protocol.Env
	intervalUs int64
	peers      []protocol.NodeID
	min        int64
}

func gossipFactory(intervalUs int64) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		g := &gossiper{cfg: cfg, env: env, intervalUs: intervalUs}
		for _, nd := range cfg.Nodes {
			if nd.ID != cfg.Self {
				g.peers = append(g.peers, nd.ID)
			}
		}
		return g, nil
	}
}

func (g *gossiper) Start() { g.HandleTimer(0) }

func (g *gossiper) HandleTimer(protocol.TimerID) {
	m := &gossip{value: g.env.NowUs()}
	for _, p := range g.peers {
		g.env.Send(p, m)
	}
	g.env.SetTimer(g.intervalUs, 0)
}

func (g *gossiper) HandleMessage(_ protocol.NodeID, m protocol.Message) {
	if v, ok := m.(*gossip); ok {
		g.min = min(g.min, v.value)
	}
}

func (g *gossiper) HandleRequest(protocol.Request) {}

// BenchmarkScale1024Nodes runs 1024 nodes of one datacenter gossiping all-to-all every 5 ms
// (about a million messages per interval) for 20 virtual ms, with the plain intra-datacenter
// model and with spec WL7's LAN, and reports simulator events per wall second and the live heap
// at the end of a run. 16 nodes do the same work over a longer run, for comparison. On the shared
// 2-vCPU development machine (load about 5, -cpu 1, 2026-11-22): plain 18.5M events/s at 16
// nodes, 4.9M at 1024; WL7 10.7M and 1.3M; 159 MB of live heap at 1024 nodes, nearly all of it
// the million events in flight (104 B each plus 24 B of queue), the N×N link table 8 MB. Nothing
// costs more per event with more nodes; what slows the big run is the event queue outgrowing the
// caches.
func BenchmarkScale1024Nodes(b *testing.B) {
	for _, tc := range []struct {
		name string
		lan  LAN
	}{
		{"plain", LAN{}},
		{"wl7", LAN{JitterUs: 500, BandwidthBitsPerSec: 1_000_000_000}},
	} {
		for _, n := range []int{16, 1024} {
			b.Run(tc.name+"/nodes="+strconv.Itoa(n), func(b *testing.B) { benchmarkGossip(b, n, tc.lan) })
		}
	}
}

func benchmarkGossip(b *testing.B, nodes int, lan LAN) {
	const intervalUs, runUs = 5_000, 20_000
	// Fewer nodes run longer, for the same work per iteration: intervals × N² messages.
	virtualUs := int64(runUs) * 1024 * 1024 / int64(nodes*nodes)
	var events uint64
	var heap uint64
	b.ReportAllocs()
	for b.Loop() {
		s, err := New(Config{Topology: oneDC(), Nodes: lanNodes(nodes), Factory: gossipFactory(intervalUs), Seed: 1,
			IntraDCUs: 500, ClientHopUs: 500, LAN: lan})
		if err != nil {
			b.Fatal(err)
		}
		s.RunUntil(virtualUs)
		events += s.Stats().Events
		b.StopTimer()
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapAlloc)
		runtime.KeepAlive(s)
		b.StartTimer()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
}

// TestEventQueuePopsByTimeThenSequence checks the queue against a sorted reference under random
// interleavings of pushes and pops, with many ties in time, half of the pushes through
// pushInOrder with a fixed delay (client hops) and some of those out of order.
func TestEventQueuePopsByTimeThenSequence(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var q eventQueue
	var seq uint64
	var ref []*event // what must come out, kept sorted by (at, seq)
	for range 200_000 {
		if q.len() > 0 && r.IntN(3) == 0 {
			got := q.pop()
			if got != ref[0] {
				t.Fatalf("popped (%d, %d), want (%d, %d)", got.at, got.seq, ref[0].at, ref[0].seq)
			}
			ref = ref[1:]
			continue
		}
		seq++
		now := int64(0)
		if len(ref) > 0 {
			now = ref[0].at
		}
		e := &event{at: now + r.Int64N(50), seq: seq}
		switch r.IntN(4) {
		case 0, 1:
			q.push(e)
		case 2:
			e.at = now + 20
			q.pushInOrder(e)
		case 3:
			q.pushInOrder(e)
		}
		i, _ := slices.BinarySearchFunc(ref, e, func(a, b *event) int {
			if a.at != b.at {
				return cmp.Compare(a.at, b.at)
			}
			return cmp.Compare(a.seq, b.seq)
		})
		ref = slices.Insert(ref, i, e)
	}
	for q.len() > 0 {
		if got := q.pop(); got != ref[0] {
			t.Fatalf("draining: popped (%d, %d), want (%d, %d)", got.at, got.seq, ref[0].at, ref[0].seq)
		}
		ref = ref[1:]
	}
}

// TestEventQueueFIFOReusesSpace: a FIFO that never empties (clients always have a hop in flight)
// reuses the space of the entries it popped, and still pops in order.
func TestEventQueueFIFOReusesSpace(t *testing.T) {
	var q eventQueue
	var seq uint64
	push := func(at int64) {
		seq++
		q.pushInOrder(&event{at: at, seq: seq})
	}
	for i := range 3000 {
		push(int64(i))
	}
	for i := range 2000 {
		if e := q.pop(); e.at != int64(i) {
			t.Fatalf("pop %d: at %d", i, e.at)
		}
	}
	for i := range 10 {
		push(int64(3000 + i))
	}
	if len(q.heap) != 0 || len(q.fifo) != 1010 || q.head != 0 {
		t.Fatalf("after 3010 pushes and 2000 pops: heap %d, FIFO %d from %d; want the 1010 left moved to the front",
			len(q.heap), len(q.fifo), q.head)
	}
	for i := range 1010 {
		if e := q.pop(); e.at != int64(2000+i) {
			t.Fatalf("pop %d after compaction: at %d", i, e.at)
		}
	}
}
