package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
)

// fourNodes places nodes 0 and 1 in datacenter A, 2 in B and 3 in C.
func fourNodes() []protocol.Node {
	return []protocol.Node{{ID: 0, DC: dcA}, {ID: 1, DC: dcA}, {ID: 2, DC: dcB}, {ID: 3, DC: dcC}}
}

func TestNodeCrashFreezesOneNode(t *testing.T) {
	cfg := Config{Seed: 1, ClientHopUs: 500, IntraDCUs: 250, Nodes: fourNodes(),
		Faults: []Fault{{Kind: NodeCrash, Node: 1, StartUs: faultStart, EndUs: faultEnd}}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 100_000, size: 1})
	c, err := s.Connect(7, 0) // a client in datacenter A, calling the crashed node
	if err != nil {
		t.Fatal(err)
	}
	var replies []entry
	for i, callAt := range []int64{1_200_000, 1_400_000} {
		s.After(-1, callAt, func() {
			if !s.NodeDown(1) || s.NodeDown(0) || s.Down(dcA) {
				t.Errorf("at %d: node 1 down %v, node 0 down %v, datacenter A down %v; want only node 1", s.NowUs(), s.NodeDown(1), s.NodeDown(0), s.Down(dcA))
			}
			c.CallNode(1, protocol.Request{Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) {
				replies = append(replies, entry{AtUs: s.NowUs(), Seq: r.Seq})
			})
			if i == 0 {
				c.CallNode(0, protocol.Request{Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) {
					replies = append(replies, entry{AtUs: s.NowUs(), Seq: r.Seq})
				})
			}
		})
	}
	s.RunUntil(3_000_000)

	// Node 1 runs nothing during its crash; its deferred timer and requests run at recovery, in
	// order. Node 0, in the same datacenter, answers at once.
	var atRecovery []string
	for _, e := range rec.entries {
		if e.Node == 1 && inWindow(e.AtUs) {
			t.Fatalf("node 1 ran during its crash: %v", e)
		}
		if e.Node == 1 && e.AtUs == faultEnd {
			atRecovery = append(atRecovery, fmt.Sprintf("%s/%d", e.Kind, e.Seq))
		}
	}
	if want := []string{"timer/1", "req/1", "req/3"}; !slices.Equal(atRecovery, want) {
		t.Fatalf("node 1 ran %v at recovery, want %v", atRecovery, want)
	}
	want := []entry{{AtUs: 1_201_000, Seq: 2}, {AtUs: faultEnd + 500, Seq: 1}, {AtUs: faultEnd + 500, Seq: 3}}
	if fmt.Sprint(replies) != fmt.Sprint(want) {
		t.Fatalf("replies %v, want %v", replies, want)
	}

	// Peer messages to node 1 are lost if sent or due during the crash; node 1 sends nothing
	// then; node 0, in the same datacenter, keeps talking.
	topo := s.Config().Topology
	delay := func(from, to protocol.NodeID) int64 {
		a, b := s.Nodes()[from].DC, s.Nodes()[to].DC
		if a == b {
			return cfg.IntraDCUs
		}
		return oneWay(topo, a, b)
	}
	arrived := map[linkSeq]bool{}
	for _, a := range rec.allArrivals() {
		arrived[linkSeq{a.From, a.To, a.Seq}] = true
	}
	var dropped uint64
	talked := 0
	for _, sd := range rec.sends {
		if sd.From == 1 && inWindow(sd.AtUs) {
			t.Fatalf("node 1 sent a ping at %d, during its crash", sd.AtUs)
		}
		due := sd.AtUs + delay(sd.From, sd.To)
		if due > 3_000_000 {
			continue
		}
		lost := sd.To == 1 && (inWindow(sd.AtUs) || inWindow(due))
		if lost {
			dropped++
		}
		if arrived[linkSeq{sd.From, sd.To, sd.Seq}] == lost {
			t.Fatalf("ping %d→%d sent at %d (due %d): arrived=%v, want %v", sd.From, sd.To, sd.AtUs, due, !lost, !lost)
		}
		if sd.From == 0 && inWindow(due) {
			talked++
		}
	}
	if dropped < 20 || talked < 20 {
		t.Fatalf("%d pings lost to node 1, %d sent by node 0 during the crash: scenario broken", dropped, talked)
	}
	if got := s.Stats().MessagesDropped; got != dropped {
		t.Fatalf("Stats.MessagesDropped = %d, want %d", got, dropped)
	}
}

func TestNodeCrashFromTimeZeroDelaysStart(t *testing.T) {
	cfg := Config{Seed: 1, Nodes: fourNodes(), IntraDCUs: 250,
		Faults: []Fault{{Kind: NodeCrash, Node: 2, StartUs: 0, EndUs: faultStart}}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 100_000, size: 1})
	s.RunUntil(2 * faultStart)
	for _, e := range rec.entries {
		if e.Node == 2 && e.AtUs < faultStart {
			t.Fatalf("node 2 ran during its crash [0, %d): %v", faultStart, e)
		}
		if e.Node == 2 && e.Kind == "start" && e.AtUs != faultStart {
			t.Fatalf("node 2 started at %d, want %d", e.AtUs, faultStart)
		}
	}
}

func TestNodeCrashLosesMessagesWaitingForItsInterface(t *testing.T) {
	// Three 125 KB pings reach node 0 at 1.5 ms and its interface delivers them at 1.5, 2.5 and
	// 3.5 ms. Node 0 is down over [2 ms, 3 ms): the ping due at 2.5 ms is lost, the one due after
	// the recovery arrives, and the interface's bookkeeping is clean again.
	cfg := wl7(4)
	cfg.LAN.JitterUs = 0
	cfg.AlignedTimers = true // every node pings at 0
	cfg.Faults = []Fault{{Kind: NodeCrash, Node: 0, StartUs: 2000, EndUs: 3000}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 10_000, size: 125_000})
	s.RunUntil(10_000)
	var got []string
	for _, a := range rec.allArrivals() {
		if a.To == 0 {
			got = append(got, fmt.Sprintf("%d@%d", a.From, a.AtUs))
		}
	}
	if fmt.Sprint(got) != "[1@1500 3@3500]" {
		t.Fatalf("node 0 received %v, want node 1's ping at 1.5 ms and node 3's at 3.5 ms", got)
	}
	if st := s.Stats(); st.MessagesDropped != 1 {
		t.Fatalf("%d messages dropped, want node 2's", st.MessagesDropped)
	}
	if n := s.nodes[0].nic.waiting; n != 0 {
		t.Fatalf("node 0's interface still counts %d waiting messages", n)
	}
}

func TestNodeCutDropsBothDirectionsOnlyDuringWindow(t *testing.T) {
	cfg := Config{Seed: 1, ClientHopUs: 500, IntraDCUs: 250, Nodes: fourNodes(),
		Faults: []Fault{{Kind: NodeCut, Node: 2, PeerNode: 1, StartUs: faultStart, EndUs: faultEnd}}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 50_000, size: 1})
	c, err := s.Connect(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	var served []int64
	s.After(-1, 1_500_000, func() {
		for _, to := range []protocol.NodeID{1, 2} {
			c.CallNode(to, protocol.Request{Kind: protocol.Get, Key: "k"}, func(protocol.Reply) { served = append(served, s.NowUs()) })
		}
	})
	s.RunUntil(3_000_000)
	arrived := map[linkSeq]bool{}
	for _, a := range rec.allArrivals() {
		arrived[linkSeq{a.From, a.To, a.Seq}] = true
	}
	cut := map[[2]protocol.NodeID]int{}
	for _, sd := range rec.sends {
		if sd.AtUs > 2_800_000 {
			continue
		}
		pair := [2]protocol.NodeID{min(sd.From, sd.To), max(sd.From, sd.To)}
		lost := pair == [2]protocol.NodeID{1, 2} && inWindow(sd.AtUs)
		if lost {
			cut[[2]protocol.NodeID{sd.From, sd.To}]++
		}
		if arrived[linkSeq{sd.From, sd.To, sd.Seq}] == lost {
			t.Fatalf("ping %d→%d sent at %d: arrived=%v, want %v", sd.From, sd.To, sd.AtUs, !lost, !lost)
		}
	}
	if cut[[2]protocol.NodeID{1, 2}] != 20 || cut[[2]protocol.NodeID{2, 1}] != 20 {
		t.Fatalf("cut pings per direction %v, want 20 each way", cut)
	}
	if got := s.Stats().MessagesDropped; got != 40 {
		t.Fatalf("Stats.MessagesDropped = %d, want 40", got)
	}
	if len(served) != 2 {
		t.Fatalf("the cut stopped client requests: %d replies of 2", len(served))
	}
}

func TestRequestToANodeInADownDatacenterWaits(t *testing.T) {
	cfg := Config{Seed: 1, ClientHopUs: 500, Nodes: fourNodes(),
		Faults: []Fault{{Kind: Outage, DC: "B", StartUs: faultStart, EndUs: faultEnd}}}
	s, rec := newSim(t, cfg, pingOpts{})
	c, err := s.Connect(5, 0) // in datacenter A
	if err != nil {
		t.Fatal(err)
	}
	s.After(-1, 1_500_000, func() { c.CallNode(2, protocol.Request{Kind: protocol.Get, Key: "k"}, func(protocol.Reply) {}) })
	s.RunUntil(3_000_000)
	for _, e := range rec.entries {
		if e.Kind == "req" && e.AtUs != faultEnd {
			t.Fatalf("node 2 handled the request at %d, want at its datacenter's recovery %d", e.AtUs, faultEnd)
		}
	}
}

func TestNodeFaultParseAndRoundTrip(t *testing.T) {
	good := []struct {
		spec string
		want Fault
	}{
		{"crash-node:3@1s-2s", Fault{Kind: NodeCrash, Node: 3, StartUs: 1_000_000, EndUs: 2_000_000}},
		{"crash-node:0@0s-1ms", Fault{Kind: NodeCrash, Node: 0, StartUs: 0, EndUs: 1000}},
		{"cut-nodes:2-5@1s-3s", Fault{Kind: NodeCut, Node: 2, PeerNode: 5, StartUs: 1_000_000, EndUs: 3_000_000}},
		{"cut-nodes:1023-0@250ms-1m0s", Fault{Kind: NodeCut, Node: 1023, PeerNode: 0, StartUs: 250_000, EndUs: 60_000_000}},
	}
	for _, c := range good {
		f, err := ParseFault(c.spec)
		if err != nil || f != c.want {
			t.Errorf("ParseFault(%q) = %#v, %v; want %#v", c.spec, f, err, c.want)
			continue
		}
		if f.String() != c.spec {
			t.Errorf("%#v renders as %q, want %q", f, f.String(), c.spec)
		}
		if back, err := ParseFault(f.String()); err != nil || back != f {
			t.Errorf("round trip via %q: %#v, %v", f.String(), back, err)
		}
	}
	bad := []struct{ spec, why string }{
		{"crash-node:@1s-2s", "crash-node needs a node id"},
		{"crash-node:x@1s-2s", "crash-node needs a node id"},
		{"crash-node:-1@1s-2s", "crash-node needs a node id"},
		{"crash-node:+1@1s-2s", "crash-node needs a node id"},
		{"crash-node:99999999999@1s-2s", "crash-node needs a node id"},
		{"cut-nodes:3@1s-2s", "two different node ids"},
		{"cut-nodes:3-3@1s-2s", "two different node ids"},
		{"cut-nodes:3-@1s-2s", "two different node ids"},
		{"cut-nodes:a-b@1s-2s", "two different node ids"},
		{"crash-node:1@2s-1s", "0 ≤ START < END"},
	}
	for _, c := range bad {
		_, err := ParseFault(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.spec)) {
			t.Errorf("ParseFault(%q) error %v, want it to quote the spec and say %q", c.spec, err, c.why)
		}
	}
}

func TestNodeFaultValidation(t *testing.T) {
	for _, c := range []struct {
		fault Fault
		want  string
	}{
		{Fault{Kind: NodeCrash, Node: 4, StartUs: 0, EndUs: 10}, "node 4 does not exist (the run has nodes 0 to 3)"},
		{Fault{Kind: NodeCrash, Node: -1, StartUs: 0, EndUs: 10}, "node -1 does not exist"},
		{Fault{Kind: NodeCut, Node: 0, PeerNode: 9, StartUs: 0, EndUs: 10}, "node 9 does not exist"},
		{Fault{Kind: NodeCut, Node: 2, PeerNode: 2, StartUs: 0, EndUs: 10}, "two different nodes"},
		{Fault{Kind: NodeCrash, Node: 1, StartUs: 10, EndUs: 10}, "needs 0 ≤ start < end"},
	} {
		cfg := Config{Topology: threeDCs(), Nodes: fourNodes(), Factory: pingFactory(&recorder{}, pingOpts{}), Faults: []Fault{c.fault}}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fault %v: error %v, want %q", c.fault, err, c.want)
		}
	}
}

func TestOverlappingNodeFaultsCompose(t *testing.T) {
	// Two crashes of node 1 overlap: it stays down until the later ends. Two cuts of 0–2 overlap
	// the same way.
	cfg := Config{Seed: 1, IntraDCUs: 250, Nodes: fourNodes(), Faults: []Fault{
		{Kind: NodeCrash, Node: 1, StartUs: 1_000_000, EndUs: 2_000_000},
		{Kind: NodeCrash, Node: 1, StartUs: 1_500_000, EndUs: 2_500_000},
		{Kind: NodeCut, Node: 0, PeerNode: 2, StartUs: 1_000_000, EndUs: 2_000_000},
		{Kind: NodeCut, Node: 2, PeerNode: 0, StartUs: 1_500_000, EndUs: 2_500_000},
	}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 100_000, size: 1})
	s.RunUntil(4_000_000)
	for _, e := range rec.entries {
		if e.Node == 1 && e.AtUs >= 1_000_000 && e.AtUs < 2_500_000 {
			t.Fatalf("node 1 ran at %d, inside its crashes", e.AtUs)
		}
	}
	arrived := map[linkSeq]bool{}
	for _, a := range rec.allArrivals() {
		arrived[linkSeq{a.From, a.To, a.Seq}] = true
	}
	for _, sd := range rec.sends {
		pair := [2]protocol.NodeID{min(sd.From, sd.To), max(sd.From, sd.To)}
		if pair == [2]protocol.NodeID{0, 2} && sd.AtUs < 3_500_000 {
			if cut := sd.AtUs >= 1_000_000 && sd.AtUs < 2_500_000; arrived[linkSeq{sd.From, sd.To, sd.Seq}] == cut {
				t.Fatalf("0–2 ping sent at %d: arrived=%v, want %v", sd.AtUs, !cut, !cut)
			}
		}
	}
}
