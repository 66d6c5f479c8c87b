package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// oneDC is a topology of a single datacenter, for partitioned stores.
func oneDC() *topology.Topology {
	return &topology.Topology{Name: "lan", DCs: []string{"D"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
}

// lanNodes places n nodes in datacenter 0.
func lanNodes(n int) []protocol.Node {
	nodes := make([]protocol.Node, n)
	for i := range nodes {
		nodes[i] = protocol.Node{ID: protocol.NodeID(i), Partition: i}
	}
	return nodes
}

// wl7 is spec WL7's network: uniform [0, 1] ms inside the datacenter, 1 Gb/s per interface.
func wl7(nodes int) Config {
	return Config{Topology: oneDC(), Nodes: lanNodes(nodes), Seed: 9, IntraDCUs: 500, ClientHopUs: 500,
		LAN: LAN{JitterUs: 500, BandwidthBitsPerSec: 1_000_000_000}}
}

// sized is a test operation of a given size, carried in Request.Op.
type sized int

func (s sized) SizeBytes() int { return int(s) }

func TestLANJitterIsUniformOverTheRange(t *testing.T) {
	s, _ := newSim(t, wl7(2), pingOpts{})
	const samples = 100_000
	var counts [10]int
	var sum float64
	lo, hi := int64(math.MaxInt64), int64(0)
	for range samples {
		d := s.lanHopUs(500)
		if d < 0 || d > 1000 {
			t.Fatalf("delay %d µs outside [0, 1000]", d)
		}
		lo, hi = min(lo, d), max(hi, d)
		sum += float64(d)
		counts[min(d/100, 9)]++
	}
	if lo != 0 || hi != 1000 {
		t.Errorf("delays span [%d, %d], want [0, 1000]", lo, hi)
	}
	if mean := sum / samples; math.Abs(mean-500) > 5 {
		t.Errorf("mean delay %.1f µs, want 500", mean)
	}
	for i, c := range counts {
		if math.Abs(float64(c)-samples/10) > 0.05*samples/10 {
			t.Errorf("decile %d holds %d of %d draws, want ≈ %d", i, c, samples, samples/10)
		}
	}
}

func TestLANJitterKeepsNodeLinksFIFO(t *testing.T) {
	cfg := wl7(4)
	cfg.LAN.BandwidthBitsPerSec = 0 // jitter alone: the spacing is 100 µs, the range 1 ms
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 100, burst: 2, size: 10})
	s.RunUntil(200_000)
	held, early := 0, 0
	for from := range protocol.NodeID(4) {
		for to := range protocol.NodeID(4) {
			if from == to {
				continue
			}
			arr := rec.arrivalsOn(from, to)
			if len(arr) < 3000 {
				t.Fatalf("link %d→%d: only %d arrivals", from, to, len(arr))
			}
			for i, a := range arr {
				if a.Seq != uint64(i+1) {
					t.Fatalf("link %d→%d: arrival #%d is seq %d: not FIFO", from, to, i+1, a.Seq)
				}
				d := a.AtUs - a.SentUs
				if d < 0 || d > 1000 { // holding back for FIFO never exceeds the range either
					t.Fatalf("link %d→%d: seq %d took %d µs", from, to, a.Seq, d)
				}
				if i > 0 && a.AtUs == arr[i-1].AtUs {
					held++
				}
				if d < 100 {
					early++
				}
			}
		}
	}
	if held == 0 || early == 0 {
		t.Fatalf("%d messages held back for FIFO, %d under 100 µs: the jitter did not act", held, early)
	}
	if st := s.Stats(); st.MessagesDropped != 0 {
		t.Fatalf("the LAN lost %d messages", st.MessagesDropped)
	}
}

func TestLANKeepsClientLinksFIFO(t *testing.T) {
	cfg := wl7(3)
	cfg.LAN.BandwidthBitsPerSec = 0
	s, rec := newSim(t, cfg, pingOpts{})
	c, err := s.Connect(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 200
	replies := map[protocol.NodeID][]uint64{}
	s.After(-1, 0, func() {
		for i := range calls {
			to := protocol.NodeID(i % 3)
			c.CallNode(to, protocol.Request{Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) {
				replies[to] = append(replies[to], r.Seq)
			})
		}
	})
	s.RunUntil(10_000)
	handled := map[protocol.NodeID][]uint64{}
	for _, e := range rec.entries {
		if e.Kind == "req" {
			handled[e.Node] = append(handled[e.Node], e.Seq)
			if e.AtUs > 1000 {
				t.Errorf("request %d reached node %d at %d µs, after the 1 ms bound", e.Seq, e.Node, e.AtUs)
			}
		}
	}
	for to := range protocol.NodeID(3) {
		var want []uint64
		for i := range calls {
			if protocol.NodeID(i%3) == to {
				want = append(want, uint64(i+1))
			}
		}
		if fmt.Sprint(handled[to]) != fmt.Sprint(want) {
			t.Errorf("node %d handled requests %v, want %v (FIFO)", to, handled[to], want)
		}
		if fmt.Sprint(replies[to]) != fmt.Sprint(want) {
			t.Errorf("replies from node %d arrived as %v, want %v (FIFO)", to, replies[to], want)
		}
	}
	// Once the links are idle the client keeps no state for them.
	s.RunUntil(20_000)
	c.CallNode(2, protocol.Request{Kind: protocol.Get, Key: "k"}, func(protocol.Reply) {})
	if len(c.links) != 1 || c.links[0].node != 2 {
		t.Fatalf("client link state %+v, want only node 2's", c.links)
	}
}

func TestLANBandwidthQueuesASendersMessages(t *testing.T) {
	// Two 125 KB messages back to back at 1 Gb/s: 1 ms each on the sender's interface.
	cfg := wl7(2)
	cfg.LAN.JitterUs = 0
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 1_000_000, burst: 2, size: 125_000})
	s.RunUntil(100_000)
	arr := rec.arrivalsOn(0, 1)
	if len(arr) != 2 {
		t.Fatalf("%d arrivals on 0→1, want 2", len(arr))
	}
	if arr[0].AtUs != 1000+500 || arr[1].AtUs != 2000+500 {
		t.Fatalf("arrivals at %d and %d µs, want 1500 and 2500", arr[0].AtUs, arr[1].AtUs)
	}
	if gap := arr[1].AtUs - arr[0].AtUs; gap < 1000 {
		t.Fatalf("second message arrived %d µs after the first, want ≥ 1 ms", gap)
	}
}

func TestLANBandwidthQueuesAReceiversMessages(t *testing.T) {
	// Every node sends a 125 KB ping to every other at 0, to nodes in id order. Node 0 is every
	// other node's first destination: the three pings leave their senders in parallel, all
	// arrive at 1.5 ms without contention, and node 0's interface takes them one after another.
	cfg := wl7(4)
	cfg.LAN.JitterUs = 0
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 1_000_000, size: 125_000})
	s.RunUntil(100_000)
	var got []string
	for _, a := range rec.allArrivals() {
		if a.To == 0 {
			got = append(got, fmt.Sprintf("%d@%d", a.From, a.AtUs))
		}
	}
	if want := "[1@1500 2@2500 3@3500]"; fmt.Sprint(got) != want {
		t.Fatalf("node 0 received %v, want %s", got, want)
	}
	for _, nd := range s.nodes {
		if nd.nic.waiting != 0 {
			t.Fatalf("node %d: %d messages still counted as waiting", nd.id, nd.nic.waiting)
		}
	}
}

func TestLANBandwidthChargesClientRequestsAndReplies(t *testing.T) {
	cfg := wl7(2)
	cfg.LAN.JitterUs = 0
	s, rec := newSim(t, cfg, pingOpts{})
	c, err := s.Connect(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Two operations of 125 KB less the header: 1 ms each on the client's interface.
	var replyAt []int64
	s.After(-1, 0, func() {
		for range 2 {
			c.CallNode(1, protocol.Request{Kind: protocol.Operation, Op: sized(125_000 - clientHeaderBytes)}, func(protocol.Reply) {
				replyAt = append(replyAt, s.NowUs())
			})
		}
	})
	s.RunUntil(100_000)
	var reqAt []int64
	for _, e := range rec.entries {
		if e.Kind == "req" {
			reqAt = append(reqAt, e.AtUs)
		}
	}
	if fmt.Sprint(reqAt) != "[1500 2500]" {
		t.Fatalf("requests handled at %v, want [1500 2500]", reqAt)
	}
	// The replies are small errors: under a microsecond on the node's interface (rounded up to one),
	// plus the hop; the client's incoming side is idle.
	if len(replyAt) != 2 || replyAt[0] != 1500+1+500 || replyAt[1] != 2500+1+500 {
		t.Fatalf("replies at %v, want [2001 3001]", replyAt)
	}
}

func TestLANMessageSizes(t *testing.T) {
	cases := []struct {
		name string
		got  int
		want int
	}{
		{"get", requestBytes(&protocol.Request{Kind: protocol.Get, Key: "abc"}), clientHeaderBytes + 3},
		{"snapshot", requestBytes(&protocol.Request{Kind: protocol.ReadSnapshot, Keys: []string{"a", "bc"}}), clientHeaderBytes + 3 + 4},
		{"commit", requestBytes(&protocol.Request{Kind: protocol.Commit, Txn: &txn.Txn{Writes: []txn.Write{{Key: "k", Value: make([]byte, 100)}}}}),
			clientHeaderBytes + (&txn.Txn{Writes: []txn.Write{{Key: "k", Value: make([]byte, 100)}}}).SizeBytes()},
		{"operation", requestBytes(&protocol.Request{Kind: protocol.Operation, Op: sized(1000)}), clientHeaderBytes + 1000},
		{"get reply", replyBytes(&protocol.Reply{Value: make([]byte, 128)}), clientHeaderBytes + 128},
		{"snapshot reply", replyBytes(&protocol.Reply{Snapshot: []protocol.SnapshotRead{{Key: "k", Value: make([]byte, 10)}}}), clientHeaderBytes + 1 + 10 + 12},
		{"operation reply", replyBytes(&protocol.Reply{Op: sized(640)}), clientHeaderBytes + 640},
		{"error reply", replyBytes(&protocol.Reply{Err: "bad"}), clientHeaderBytes + 3},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, c.got, c.want)
		}
	}
}

func TestLANRunsAreDeterministic(t *testing.T) {
	cfg := func() Config {
		c := busyConfig(42, 1)
		c.LAN = LAN{JitterUs: 100, BandwidthBitsPerSec: 100_000_000}
		c.Faults = append(c.Faults,
			Fault{Kind: NodeCrash, Node: 1, StartUs: 500_000, EndUs: 700_000},
			Fault{Kind: NodeCut, Node: 0, PeerNode: 3, StartUs: 600_000, EndUs: 900_000})
		return c
	}
	opts := pingOpts{intervalUs: 20_000, size: 3000, useRand: true}
	a, sa := runTrace(t, cfg(), opts)
	b, sb := runTrace(t, cfg(), opts)
	if len(a) < 1000 {
		t.Fatalf("only %d events: the scenario is too quiet to compare", len(a))
	}
	if sa != sb {
		t.Fatalf("stats differ: %+v vs %+v", sa, sb)
	}
	if i := firstDiff(a, b); i >= 0 {
		t.Fatalf("traces diverge at event %d:\n  %v\n  %v", i, at(a, i), at(b, i))
	}
	plain, _ := runTrace(t, busyConfig(42, 1), opts)
	if firstDiff(a, plain) < 0 {
		t.Fatal("the LAN model changed nothing")
	}
}

func TestLANValidation(t *testing.T) {
	for _, c := range []struct {
		lan  LAN
		want string
	}{
		{LAN{JitterUs: -1}, "must not be negative"},
		{LAN{BandwidthBitsPerSec: -1}, "must not be negative"},
		{LAN{JitterUs: 501}, "LAN jitter 501 µs exceeds"},
	} {
		cfg := wl7(2)
		cfg.Factory = pingFactory(&recorder{}, pingOpts{})
		cfg.LAN = c.lan
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LAN %+v: error %v, want %q", c.lan, err, c.want)
		}
	}
}

// burstThenControl is node 0 of TestControlPlaneOvertakesData: at start it sends node 1 three
// 125 KB pings (1 ms each on a 1 Gb/s interface), 2.5 ms later a small ping 4 and a large
// ping 5; node 1 records the order it handles them in.
type burstThenControl struct {
	env     protocol.Env
	self    protocol.NodeID
	handled *[]uint64
}

func (b *burstThenControl) Start() {
	if b.self == 0 {
		for seq := range uint64(3) {
			b.env.Send(1, &ping{Seq: seq + 1, Size: 125_000})
		}
		b.env.SetTimer(2500, 1)
	}
}

func (b *burstThenControl) HandleTimer(protocol.TimerID) {
	b.env.Send(1, &ping{Seq: 4, Size: 100})
	b.env.Send(1, &ping{Seq: 5, Size: 125_000})
}

func (b *burstThenControl) HandleMessage(_ protocol.NodeID, m protocol.Message) {
	*b.handled = append(*b.handled, m.(*ping).Seq)
}

func (b *burstThenControl) HandleRequest(protocol.Request) {}

// TestControlPlaneOvertakesData: ping 4, marked control plane (Service.Control), skips the
// sender's interface queue (it arrives at 3 ms, before ping 3 has left) and, at the busy
// receiver (2 ms per ping), goes ahead of ping 2 waiting there; unmarked, it is handled in
// arrival order, after ping 3.
func TestControlPlaneOvertakesData(t *testing.T) {
	for _, tc := range []struct {
		control bool
		want    string
	}{{true, "[1 4 2 3 5]"}, {false, "[1 2 3 4 5]"}} {
		var handled []uint64
		cfg := wl7(2)
		cfg.LAN.JitterUs, cfg.AlignedTimers = 0, true
		cfg.Service.PerInput = func(protocol.NodeID, protocol.Message) int64 { return 2000 }
		if tc.control {
			cfg.Service.Control = func(m protocol.Message) bool { return m.(*ping).Seq == 4 }
		}
		cfg.Factory = func(c protocol.Config, env protocol.Env) (protocol.Replica, error) {
			return &burstThenControl{env: env, self: c.Self, handled: &handled}, nil
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.RunUntil(100_000)
		if got := fmt.Sprint(handled); got != tc.want {
			t.Errorf("control plane %v: handled %s, want %s", tc.control, got, tc.want)
		}
	}
}
