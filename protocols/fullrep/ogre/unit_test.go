package ogre

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// unitWorld drives three datacenters' replicas and one RoT unit each (nodes 0–2, 3–5) by hand:
// messages are delivered in send order, timers only when the script says.
type unitWorld struct {
	nodes   []protocol.Replica
	envs    []*unitEnv
	queue   []unitMsg
	drop    func(to protocol.NodeID, m protocol.Message) bool
	replies map[txn.ClientID]protocol.Reply
	nowUs   int64
}

type unitMsg struct {
	from, to protocol.NodeID
	m        protocol.Message
}

type unitEnv struct {
	w     *unitWorld
	id    protocol.NodeID
	store *store.Store
}

func (e *unitEnv) NowUs() int64                     { return e.w.nowUs }
func (e *unitEnv) Rand() *rand.Rand                 { return rand.New(rand.NewPCG(1, uint64(e.id))) }
func (e *unitEnv) SetTimer(int64, protocol.TimerID) {}
func (e *unitEnv) Store() *store.Store              { return e.store }
func (e *unitEnv) Reply(r protocol.Reply)           { e.w.replies[r.Client] = r }
func (e *unitEnv) Send(to protocol.NodeID, m protocol.Message) {
	if e.w.drop == nil || !e.w.drop(to, m) {
		e.w.queue = append(e.w.queue, unitMsg{e.id, to, m})
	}
}

func newUnitWorld(t *testing.T) *unitWorld {
	t.Helper()
	topo := &topology.Topology{Name: "abc", DCs: []string{"A", "B", "C"},
		RTTMs: [][]float64{{0, 10, 10}, {10, 0, 10}, {10, 10, 0}}, StdDevMs: [][]float64{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}}
	w := &unitWorld{replies: map[txn.ClientID]protocol.Reply{}}
	nodes := UnitNodes(3, 1)
	for _, nd := range nodes {
		env := &unitEnv{w: w, id: nd.ID, store: store.New()}
		r, err := New(true)(protocol.Config{Self: nd.ID, Nodes: nodes, Topology: topo, Params: protocol.Params{ParamRoTUnits: "1"}}, env)
		if err != nil {
			t.Fatal(err)
		}
		w.nodes, w.envs = append(w.nodes, r), append(w.envs, env)
	}
	return w
}

// run delivers every queued message, and those they cause, in order.
func (w *unitWorld) run() {
	for len(w.queue) > 0 {
		m := w.queue[0]
		w.queue = w.queue[1:]
		w.nodes[m.to].HandleMessage(m.from, m.m)
	}
}

// commit has client c commit a transaction at datacenter dc's replica and runs to quiescence,
// then ticks every unit (which acknowledges the stream) and delivers the acknowledgements.
func (w *unitWorld) commit(t *testing.T, dc int, c txn.ClientID, reads []txn.Read, writes ...string) txn.ID {
	t.Helper()
	tx := &txn.Txn{ID: txn.NewID(c, 1), Reads: reads}
	for _, k := range writes {
		tx.Writes = append(tx.Writes, txn.Write{Key: k, Value: []byte(tx.ID.String())})
	}
	w.nodes[dc].HandleRequest(protocol.Request{Client: c, Seq: 1, Kind: protocol.Commit, Txn: tx})
	w.run()
	w.tickUnits()
	if r := w.replies[c]; r.Status != txn.Committed {
		t.Fatalf("%v: %+v", tx.ID, r)
	}
	return tx.ID
}

// tickUnits runs every unit's housekeeping and delivers what it sends.
func (w *unitWorld) tickUnits() {
	for _, n := range w.nodes {
		if u, ok := n.(*Unit); ok {
			u.HandleTimer(timerTick)
		}
	}
	w.run()
}

// readOnly runs a read-only transaction of client c at node id and renders it "x=writer ...".
func (w *unitWorld) readOnly(id protocol.NodeID, c txn.ClientID, keys ...string) string {
	w.nodes[id].HandleRequest(protocol.Request{Client: c, Seq: 1, Kind: protocol.ReadSnapshot, Keys: keys})
	r := w.replies[c]
	if r.Err != "" {
		return "error: " + r.Err
	}
	var parts []string
	for _, read := range r.Snapshot {
		parts = append(parts, read.Key+"="+read.Version.String())
	}
	return strings.Join(parts, " ")
}

// TestOgreRoTUnitCatchesUp (spec §4.8, M6): a datacenter's RoT unit is fed by its replica's
// ingestion stream and serves its read-only transactions; the replica refuses them and the unit
// refuses everything else. While the stream to A's unit is lost, the unit serves its older
// snapshot — consistent, stale — and the replica is not quiescent; the retransmission brings it
// up to date in stream order, after which the replica forgets the stream.
func TestOgreRoTUnitCatchesUp(t *testing.T) {
	w := newUnitWorld(t)
	unitA := protocol.NodeID(3)
	t1 := w.commit(t, dcB, 1, nil, "x", "y")
	if got, want := w.readOnly(unitA, 100, "x", "y"), "x="+t1.String()+" y="+t1.String(); got != want {
		t.Fatalf("unit A after t1: %s; want %s", got, want)
	}
	w.drop = func(to protocol.NodeID, m protocol.Message) bool { _, ok := m.(*Ingest); return ok && to == unitA }
	t2 := w.commit(t, dcC, 2, []txn.Read{{Key: "x", Version: t1}}, "y")
	t3 := w.commit(t, dcA, 3, []txn.Read{{Key: "y", Version: t2}}, "x")
	if got, want := w.readOnly(unitA, 101, "x", "y"), "x="+t1.String()+" y="+t1.String(); got != want {
		t.Fatalf("unit A with its stream lost: %s; want the older snapshot %s", got, want)
	}
	if got, want := w.readOnly(4, 102, "x", "y"), "x="+t3.String()+" y="+t2.String(); got != want {
		t.Fatalf("unit B: %s; want %s", got, want)
	}
	replicaA := w.nodes[dcA].(*Replica)
	if replicaA.Quiescent() || len(replicaA.stream) != 2 {
		t.Fatalf("replica A quiescent %v with %d stream entries unacknowledged; want not, 2", replicaA.Quiescent(), len(replicaA.stream))
	}
	w.drop = nil
	w.nowUs = unitRetryUs
	w.nodes[dcA].HandleTimer(timerTick)
	w.run()
	w.tickUnits()
	if got, want := w.readOnly(unitA, 103, "x", "y"), "x="+t3.String()+" y="+t2.String(); got != want {
		t.Fatalf("unit A after the retransmission: %s; want %s", got, want)
	}
	if !replicaA.Quiescent() || len(replicaA.stream) != 0 || w.nodes[unitA].(*Unit).Ingested() != 3 {
		t.Fatalf("replica A quiescent %v, %d stream entries kept, unit ingested %d; want quiescent, 0, 3",
			replicaA.Quiescent(), len(replicaA.stream), w.nodes[unitA].(*Unit).Ingested())
	}
	if got := w.readOnly(protocol.NodeID(dcA), 104, "x"); !strings.Contains(got, "RoT unit nodes") {
		t.Errorf("replica A answered a read-only transaction: %s", got)
	}
	w.nodes[unitA].HandleRequest(protocol.Request{Client: 105, Seq: 1, Kind: protocol.Get, Key: "x"})
	if r := w.replies[105]; !strings.Contains(r.Err, "read-only transactions only") {
		t.Errorf("unit A answered a Get: %+v", r)
	}
	// The replicas record the version order by version number, the units in dependency order:
	// the same order of every key.
	for _, id := range []protocol.NodeID{0, 1, 2, 3, 4, 5} {
		if order := w.envs[id].store.VersionOrder(); len(order["x"]) != 2 || order["x"][1] != t3 || len(order["y"]) != 2 || order["y"][1] != t2 {
			t.Errorf("node %d's version order: %v", id, order)
		}
	}
}

// unitOptions adds RoT units to a swarm seed: one per datacenter on odd seeds, two on even ones,
// and on every third seed a crash of one datacenter's first unit (its stream is lost meanwhile,
// then retransmitted) or, on the others, a cut between a replica and its unit.
func unitOptions(seed uint64, opts *bench.Options) {
	units := 1 + int(seed%2)
	opts.Params = protocol.Params{ParamRoTUnits: string(rune('0' + units))}
	n := opts.Topology.N()
	unit := protocol.NodeID(n + int(seed)%n)
	start := int64(seed%7) * opts.DurationUs / 10
	end := start + opts.DurationUs/4
	if seed%3 == 0 {
		opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.NodeCrash, Node: unit, StartUs: start, EndUs: end})
	} else {
		opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.NodeCut, Node: unit - protocol.NodeID(n), PeerNode: unit, StartUs: start, EndUs: end})
	}
}

// TestPropertySafetyRoTUnits is TestPropertySafety with the RoT-Storage on unit nodes (the
// swarm's faults, plus unit crashes and replica–unit cuts): every seed's read-only transactions,
// served by the units, are checked with the read-write history per datacenter, the units'
// version orders with the replicas', and every unit must hold its whole stream at the end.
func TestPropertySafetyRoTUnits(t *testing.T) {
	swarm.RunWith(t, "ogre", "go test ./protocols/fullrep/ogre -run 'TestPropertySafetyRoTUnits$'", unitOptions)
}

// TestRoTUnitsServeReadOnly: on the main job with a read-only client per datacenter, the
// read-only transactions go to the RoT units (the replicas refuse them, so any that reached a
// replica would fail the run), and the run is clean.
func TestRoTUnitsServeReadOnly(t *testing.T) {
	opts := bench.Defaults()
	opts.ClientsPerDC, opts.DurationUs = 3, 10_000_000
	opts.Params = protocol.Params{ParamRoTUnits: "2"}
	w := opts.Workload.(workload.TYCSB)
	w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 2, 50, 30
	opts.Workload = w
	res, err := bench.Run(opts, "ogre")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Problem(); err != nil {
		t.Fatal(err)
	}
	m := res.Metrics.(*workload.TYCSBMetrics)
	if m.ReadOnly.Transactions == 0 || m.RoTBuffer.Ingested == 0 {
		t.Fatalf("read-only %+v, RoT buffer %+v", m.ReadOnly, m.RoTBuffer)
	}
}
