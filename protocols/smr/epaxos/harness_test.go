package epaxos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// world drives EPaxos replicas by hand for the scenario tests: every message a replica sends
// waits in a queue until the test delivers, drops or duplicates it; time moves only when the test
// says; timers fire only through tick. A crashed replica receives nothing. Every input a replica
// handles is recorded with its clock reading, and restart rebuilds a crashed replica by
// replaying them into a fresh one with its effects suppressed, as the network server does from
// its input log (server/loop.go), so that tests exercise the durability our drivers provide.
// After every event (a request, a delivered message, a tick) checkStep checks agreement and the
// dependency invariant at every replica.
type world struct {
	t       *testing.T
	topo    *topology.Topology
	params  protocol.Params
	reps    []*Replica
	envs    []*testEnv
	nowUs   int64
	queue   []envelope
	down    []bool
	names   map[string]txn.ID
	replies map[txn.ID][]protocol.Reply
	// decided is the first committed value seen of each instance, for checkStep.
	decided map[Instance]decision
}

// decision is a committed value.
type decision struct {
	noop bool
	cmd  txn.ID
	seq  uint64
	deps string
}

// envelope is one message in flight.
type envelope struct {
	from, to int
	m        protocol.Message
}

// input is one recorded replica input.
type input struct {
	atUs  int64
	from  int // message sender, or -1
	m     protocol.Message
	req   *protocol.Request
	timer protocol.TimerID // a timer that fired (0: the input is no timer)
}

type testEnv struct {
	w         *world
	dc        int
	st        *store.Store
	rng       *rand.Rand
	replaying bool
	inputs    []input
}

func (e *testEnv) NowUs() int64                     { return e.w.nowUs }
func (e *testEnv) Rand() *rand.Rand                 { return e.rng }
func (e *testEnv) Store() *store.Store              { return e.st }
func (e *testEnv) SetTimer(int64, protocol.TimerID) {}
func (e *testEnv) Send(to protocol.NodeID, m protocol.Message) {
	if !e.replaying {
		e.w.queue = append(e.w.queue, envelope{from: e.dc, to: int(to), m: m})
	}
}
func (e *testEnv) Reply(r protocol.Reply) {
	if e.replaying {
		return
	}
	for _, id := range e.w.names {
		if id.Client() == r.Client {
			e.w.replies[id] = append(e.w.replies[id], r)
		}
	}
}

// newWorld builds n replicas, 20 ms apart, with params.
func newWorld(t *testing.T, n int, params protocol.Params) *world {
	topo := &topology.Topology{Name: fmt.Sprintf("flat-%d", n)}
	for a := range n {
		topo.DCs = append(topo.DCs, fmt.Sprintf("R%d", a))
		topo.RTTMs = append(topo.RTTMs, make([]float64, n))
		topo.StdDevMs = append(topo.StdDevMs, make([]float64, n))
		for b := range n {
			if a != b {
				topo.RTTMs[a][b] = 20
			}
		}
	}
	w := &world{t: t, topo: topo, params: params, down: make([]bool, n), names: map[string]txn.ID{}, replies: map[txn.ID][]protocol.Reply{},
		decided: map[Instance]decision{}}
	for dc := range n {
		w.envs = append(w.envs, nil)
		w.reps = append(w.reps, nil)
		w.build(dc)
	}
	return w
}

// build makes a fresh replica (and store) for datacenter dc.
func (w *world) build(dc int) {
	var nodes []protocol.Node
	for i := range w.topo.N() {
		nodes = append(nodes, protocol.Node{ID: protocol.NodeID(i), DC: i})
	}
	env := &testEnv{w: w, dc: dc, st: store.New(), rng: rand.New(rand.NewPCG(1, uint64(dc)))}
	r, err := New(protocol.Config{Self: protocol.NodeID(dc), Nodes: nodes, Topology: w.topo, Params: w.params}, env)
	if err != nil {
		w.t.Fatal(err)
	}
	w.reps[dc], w.envs[dc] = r.(*Replica), env
}

func (w *world) record(dc int, in input) {
	in.atUs = w.nowUs
	w.envs[dc].inputs = append(w.envs[dc].inputs, in)
}

// submit has datacenter dc's client commit transaction name, which read each key of reads at
// its initial version and writes each key of writes.
func (w *world) submit(dc int, name string, reads, writes []string) Instance {
	id := txn.NewID(txn.ClientID(len(w.names)+1), 1)
	w.names[name] = id
	t := &txn.Txn{ID: id}
	for _, k := range reads {
		t.Reads = append(t.Reads, txn.Read{Key: k})
	}
	for _, k := range writes {
		t.Writes = append(t.Writes, txn.Write{Key: k, Value: []byte(name)})
	}
	req := protocol.Request{Client: id.Client(), Seq: 1, Kind: protocol.Commit, Txn: t}
	w.record(dc, input{from: -1, req: &req})
	w.reps[dc].HandleRequest(req)
	w.checkStep()
	return Instance{Replica: uint32(dc), Slot: w.reps[dc].nextSlot}
}

// handle hands m from → to to the replica to, recording it.
func (w *world) handle(from, to int, m protocol.Message) {
	w.record(to, input{from: from, m: m})
	w.reps[to].HandleMessage(protocol.NodeID(from), m)
	w.checkStep()
}

// deliver delivers, in order, every queued message sel selects (all: nil), including those the
// deliveries send, until none is selected; messages to a crashed replica are lost.
func (w *world) deliver(sel func(envelope) bool) {
	for {
		i := slices.IndexFunc(w.queue, func(e envelope) bool { return sel == nil || sel(e) })
		if i < 0 {
			return
		}
		e := w.queue[i]
		w.queue = slices.Delete(w.queue, i, i+1)
		if !w.down[e.to] {
			w.handle(e.from, e.to, e.m)
		}
	}
}

// drop loses every queued message sel selects.
func (w *world) drop(sel func(envelope) bool) {
	w.queue = slices.DeleteFunc(w.queue, sel)
}

// tick advances time by us and fires every live replica's timer.
func (w *world) tick(us int64) {
	w.nowUs += us
	for dc, r := range w.reps {
		if !w.down[dc] {
			w.record(dc, input{from: -1, timer: timerTick})
			r.HandleTimer(timerTick)
		}
	}
	w.checkStep()
}

// fireBatch ends dc's batching window now (batch_mode=instance).
func (w *world) fireBatch(dc int) {
	w.record(dc, input{from: -1, timer: timerBatch})
	w.reps[dc].HandleTimer(timerBatch)
	w.checkStep()
}

// checkStep checks, after every event, the invariants that must hold at every moment: an
// instance committed anywhere has one value forever (agreement, and no late message changes an
// executed instance), and at every replica any two interfering committed commands are joined by
// a path of deps (so they execute in one order everywhere).
func (w *world) checkStep() {
	w.t.Helper()
	for _, r := range w.reps {
		for inst, e := range r.insts {
			if e.status < Committed {
				continue
			}
			d := decision{noop: e.noop, seq: e.Seq, deps: fmt.Sprint(e.Deps)}
			if !e.noop {
				d.cmd = e.cmd.ID
			}
			if first, ok := w.decided[inst]; !ok {
				w.decided[inst] = d
			} else if first != d {
				w.t.Fatalf("%v decided twice: %+v, then at R%d %+v", inst, first, r.self, d)
			}
		}
		checkPaths(w.t, r)
	}
}

// settle ticks and delivers everything until nothing is queued and every live replica is
// quiescent, failing the test if that takes more than a simulated minute.
func (w *world) settle() {
	for range 6000 {
		w.deliver(nil)
		quiet := true
		for dc, r := range w.reps {
			quiet = quiet && (w.down[dc] || r.Quiescent())
		}
		if quiet {
			return
		}
		w.tick(10_000)
	}
	w.t.Fatal("the replicas did not settle within a simulated minute")
}

// until ticks 10 ms at a time, delivering everything queued, until cond holds; the caller checks
// what it then expects. It gives up after three simulated seconds.
func (w *world) until(cond func() bool) {
	for range 300 {
		if cond() {
			return
		}
		w.tick(10_000)
		w.deliver(nil)
	}
}

// crash stops datacenter dc's replica: it receives nothing until restart.
func (w *world) crash(dc int) { w.down[dc] = true }

// restart rebuilds dc's replica from its recorded inputs (effects suppressed), as a restarted
// server does from its input log, and brings it back.
func (w *world) restart(dc int) {
	inputs := w.envs[dc].inputs
	now := w.nowUs
	w.build(dc)
	env := w.envs[dc]
	env.replaying = true
	for _, in := range inputs {
		w.nowUs = in.atUs
		switch {
		case in.req != nil:
			w.reps[dc].HandleRequest(*in.req)
		case in.timer != 0:
			w.reps[dc].HandleTimer(in.timer)
		default:
			w.reps[dc].HandleMessage(protocol.NodeID(in.from), in.m)
		}
	}
	env.replaying, env.inputs, w.nowUs, w.down[dc] = false, inputs, now, false
}

// is selects messages of type M.
func is[M protocol.Message](e envelope) bool { _, ok := e.m.(M); return ok }

// between selects messages from → to.
func between(from, to int) func(envelope) bool {
	return func(e envelope) bool { return e.from == from && e.to == to }
}

// and combines selectors.
func and(sels ...func(envelope) bool) func(envelope) bool {
	return func(e envelope) bool {
		for _, s := range sels {
			if !s(e) {
				return false
			}
		}
		return true
	}
}

// about selects messages about instance inst.
func about(inst Instance) func(envelope) bool {
	return func(e envelope) bool {
		i, ok := instanceOf(e.m)
		return ok && i == inst
	}
}

// outcome returns the only answer transaction name's client got, failing if it got none or
// several.
func (w *world) outcome(name string) txn.Status {
	w.t.Helper()
	rs := w.replies[w.names[name]]
	if len(rs) != 1 {
		w.t.Fatalf("%s: %d answers (%+v), want exactly one", name, len(rs), rs)
	}
	return rs[0].Status
}

// checkInvariants checks, over the live replicas: agreement (an instance committed at two
// replicas has one value), the dependency invariant (two interfering committed commands are
// joined by a path of committed deps, so every replica executes them in one order), that every
// committed instance was executed once the world settled, and that the stores are identical.
func (w *world) checkInvariants() {
	w.t.Helper()
	var ref *Replica
	for dc, r := range w.reps {
		if w.down[dc] {
			continue
		}
		for inst, e := range r.insts {
			if e.status == Committed {
				w.t.Errorf("R%d: %v committed but never executed", dc, inst)
			}
		}
		if ref == nil {
			ref = r
			checkPaths(w.t, r)
			continue
		}
		for inst, e := range r.insts {
			f := ref.insts[inst]
			if e.status < Committed || f == nil || f.status < Committed {
				continue
			}
			if e.noop != f.noop || e.Seq != f.Seq || !slices.Equal(e.Deps, f.Deps) || (!e.noop && e.cmd.ID != f.cmd.ID) {
				w.t.Errorf("%v committed differently: R%d %+v no-op %v, R%d %+v no-op %v", inst, ref.self, f.Attrs, f.noop, dc, e.Attrs, e.noop)
			}
		}
		a, b := fmt.Sprint(ref.env.Store().VersionOrder()), fmt.Sprint(r.env.Store().VersionOrder())
		if a != b {
			w.t.Errorf("stores differ: R%d %s, R%d %s", ref.self, a, dc, b)
		}
	}
}

// checkPaths checks the dependency invariant at r: every two interfering committed (or
// executed) commands are joined by a path of deps in one direction or the other.
func checkPaths(t *testing.T, r *Replica) {
	t.Helper()
	var done []Instance
	for inst, e := range r.insts {
		if e.status >= Committed && !e.noop {
			done = append(done, inst)
		}
	}
	slices.SortFunc(done, Instance.cmp)
	reach := func(from, to Instance) bool {
		seen := map[Instance]bool{from: true}
		for stack := []Instance{from}; len(stack) > 0; {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v == to {
				return true
			}
			if e := r.insts[v]; e != nil {
				for _, d := range e.Deps {
					if !seen[d] {
						seen[d] = true
						stack = append(stack, d)
					}
				}
			}
		}
		return false
	}
	for i, a := range done {
		for _, b := range done[i+1:] {
			if interferes(r.insts[a].cmd, r.insts[b].cmd) && !reach(a, b) && !reach(b, a) {
				t.Errorf("R%d: interfering %v %+v and %v %+v are joined by no path of deps", r.self, a, r.insts[a].Attrs, b, r.insts[b].Attrs)
			}
		}
	}
}
