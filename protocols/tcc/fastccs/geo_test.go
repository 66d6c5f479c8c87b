package fastccs

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// TestGeoSwarm runs the geo extension on 2–5 datacenters over 200 random seeds (20 with
// -short), with WAN jitter, cut links, crashed partition servers, WAN partitions between
// datacenters and clients that move between datacenters, and checks every history with the TCC
// checker (which also compares the datacenters' version orders).
func TestGeoSwarm(t *testing.T) {
	swarm.RunTCC(t, "fastccs-geo", "go test ./protocols/tcc/fastccs -run 'TestGeoSwarm$'", nil)
}

// TestGeoMoveWaitsUntilCovered: sessions that move between datacenters over a slow WAN wait
// until the new datacenter covers their past (the checker finds no session missing its own
// writes, and the waits are not zero), and without the wait (unsafe_skip_cover_wait) the
// checker catches sessions that miss their own past in some seeds.
func TestGeoMoveWaitsUntilCovered(t *testing.T) {
	opts := func(seed uint64) bench.Options {
		o := swarm.TCCOptions("fastccs-geo", seed, nil)
		o.Faults = nil
		w := o.Workload.(workload.TCC)
		w.MoveFraction, w.WriteFraction = 0.3, 0.5
		o.Workload = w
		return o
	}
	res, err := swarm.Check("fastccs-geo", opts(1))
	if err != nil {
		t.Fatal(err)
	}
	if m := res.TCC(); m.Moves == 0 || m.MoveWait.Mean == 0 {
		t.Fatalf("no move waited: %d moves, mean wait %g ms", m.Moves, m.MoveWait.Mean)
	}
	swarm.CatchesBroken(t, "fastccs-geo", 4, 1, opts, protocol.Params{ParamUnsafeSkipCoverWait: "true"})
}

// fakeEnv is a protocol.Env that queues what a replica sends, for hand-driven tests of two
// datacenters (tccscript drives one).
type fakeEnv struct {
	nowUs int64
	sent  []sentMsg
	store *store.Store
}

type sentMsg struct {
	to protocol.NodeID
	m  protocol.Message
}

func (e *fakeEnv) NowUs() int64     { return e.nowUs }
func (e *fakeEnv) Rand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
func (e *fakeEnv) Send(to protocol.NodeID, m protocol.Message) {
	e.sent = append(e.sent, sentMsg{to, m})
}
func (e *fakeEnv) SetTimer(int64, protocol.TimerID) {}
func (e *fakeEnv) Reply(protocol.Reply)             {}
func (e *fakeEnv) Store() *store.Store              { return e.store }

// TestGeoStreamRepairsLoss: a lost Replicate makes the other datacenter refuse what follows;
// although commits go on, the origin resends from the acknowledged point once acknowledgements
// stop progressing for geo_resend, and the stream catches up. The receiver's svc entry for the
// origin is how far it applied, and it is gossiped as part of its column.
func TestGeoStreamRepairsLoss(t *testing.T) {
	topo, _ := topology.Preset("aws-mf")
	topo, _ = topology.Subset(topo, topo.DCs[:2])
	nodes := tcc.PartitionedNodes(2, 1)
	envs := []*fakeEnv{{store: store.New()}, {store: store.New()}}
	var reps []*Replica
	for i := range 2 {
		r, err := NewGeo(protocol.Config{Self: protocol.NodeID(i), Nodes: nodes, Topology: topo}, envs[i])
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r.(*Replica))
	}
	origin, peer := reps[0], reps[1]
	slot := origin.slots.Of(0, 0)
	// flush delivers what each replica sent to the other, dropping the first Replicate if lose.
	flush := func(lose bool) {
		for moved := true; moved; {
			moved = false
			for i, e := range envs {
				msgs := e.sent
				e.sent = nil
				for _, s := range msgs {
					if _, ok := s.m.(*Replicate); ok && lose {
						lose = false
						continue
					}
					moved = true
					reps[s.to].HandleMessage(protocol.NodeID(i), s.m)
				}
			}
		}
	}
	for i := range 20 {
		envs[0].nowUs += 100_000
		envs[1].nowUs += 100_000
		tx := txn.NewID(1, uint32(i+1))
		origin.HandleRequest(protocol.Request{Client: 1, Seq: uint64(i), Kind: protocol.Operation,
			Op: &WriteReq{Tx: tx, Writes: []txn.Write{{Key: "k", Value: []byte(fmt.Sprint(i))}}, Coordinator: 0, Size: 1}})
		origin.HandleTimer(timerGossip)
		flush(i == 2)
	}
	if got := peer.svc[slot]; got != 20 {
		t.Fatalf("the other datacenter applied the stream up to %d of 20", got)
	}
	if g := peer.ownEntry(); g.Base != 0 || len(g.Values) != 2 || g.Values[0] != 20 {
		t.Fatalf("the receiver's gossip column %+v", g)
	}
	if order := peer.VersionOrder()["k"]; len(order) != 20 || order[19] != txn.NewID(1, 20) {
		t.Fatalf("version order at the other datacenter: %v", order)
	}
	// A backlog longer than one message (the other datacenter unreachable for 2500 commits)
	// goes in batches of maxStreamBatch, each sent once the previous one is acknowledged.
	for i := 20; i < 2520; i++ {
		origin.HandleRequest(protocol.Request{Client: 1, Seq: uint64(i), Kind: protocol.Operation,
			Op: &WriteReq{Tx: txn.NewID(1, uint32(i+1)), Writes: []txn.Write{{Key: "k", Value: []byte(fmt.Sprint(i))}}, Coordinator: 0, Size: 1}})
	}
	envs[0].sent = nil
	envs[0].nowUs += 1_000_000
	origin.HandleTimer(timerGossip)
	for _, s := range envs[0].sent {
		if m, ok := s.m.(*Replicate); ok && len(m.Entries) > maxStreamBatch {
			t.Fatalf("a Replicate of %d entries", len(m.Entries))
		}
	}
	flush(false)
	if got := peer.svc[slot]; got != 2520 || len(origin.geo.log) != 0 {
		t.Fatalf("after the backlog: applied %d of 2520, %d entries unacknowledged", got, len(origin.geo.log))
	}
}
