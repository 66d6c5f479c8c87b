package twopc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// world drives one replica per datacenter by hand: exact RTT/2 delays, FIFO, timers honoured,
// a drop rule for messages, and crashes (as the simulator's outages: a down datacenter's timers
// and requests wait, messages to it are lost).
type world struct {
	t       *testing.T
	topo    *topology.Topology
	reps    []protocol.Replica
	envs    []*tenv
	nowUs   int64
	seq     uint64
	events  []event
	drop    func(from, to int, m protocol.Message) bool
	replies []reply
	down    map[int]bool
}

type event struct {
	at, seq  int64
	from, to int
	msg      protocol.Message // nil: timer
	timer    protocol.TimerID
	req      *protocol.Request
}

type reply struct {
	dc   int
	atUs int64
	protocol.Reply
}

type tenv struct {
	w     *world
	dc    int
	store *store.Store
	rand  *rand.Rand
}

func (e *tenv) NowUs() int64        { return e.w.nowUs }
func (e *tenv) Rand() *rand.Rand    { return e.rand }
func (e *tenv) Store() *store.Store { return e.store }
func (e *tenv) Reply(r protocol.Reply) {
	e.w.replies = append(e.w.replies, reply{dc: e.dc, atUs: e.w.nowUs, Reply: r})
}
func (e *tenv) SetTimer(afterUs int64, id protocol.TimerID) {
	e.w.push(event{at: e.w.nowUs + afterUs, from: e.dc, to: e.dc, timer: id})
}
func (e *tenv) Send(to protocol.NodeID, m protocol.Message) {
	w := e.w
	if w.drop != nil && w.drop(e.dc, int(to), m) {
		return
	}
	w.push(event{at: w.nowUs + int64(w.topo.RTTMs[e.dc][to]*500), from: e.dc, to: int(to), msg: m})
}

func (w *world) push(e event) {
	w.seq++
	e.seq = int64(w.seq)
	w.events = append(w.events, e)
}

func newWorld(t *testing.T, params protocol.Params) *world {
	t.Helper()
	topo, ok := topology.Preset("aws-helios")
	if !ok {
		t.Fatal("no preset aws-helios")
	}
	w := &world{t: t, topo: topo, down: map[int]bool{}}
	var nodes []protocol.Node
	for dc := range topo.N() {
		nodes = append(nodes, protocol.Node{ID: protocol.NodeID(dc), DC: dc})
	}
	for dc := range topo.N() {
		e := &tenv{w: w, dc: dc, store: store.New(), rand: rand.New(rand.NewPCG(1, uint64(dc)))}
		r, err := New(protocol.Config{Self: protocol.NodeID(dc), Nodes: nodes, Topology: topo, Params: params}, e)
		if err != nil {
			t.Fatal(err)
		}
		w.envs, w.reps = append(w.envs, e), append(w.reps, r)
	}
	for _, r := range w.reps {
		r.Start()
	}
	return w
}

func (w *world) dc(name string) int {
	i, ok := w.topo.Index(name)
	if !ok {
		w.t.Fatalf("no datacenter %s", name)
	}
	return i
}

// at schedules a client request at datacenter dc at time ms.
func (w *world) at(ms int64, dc int, req protocol.Request) {
	w.push(event{at: ms * 1000, to: dc, req: &req})
}

// runTo processes every event due at or before ms.
func (w *world) runTo(ms int64) {
	for {
		i := -1
		for j, e := range w.events {
			if w.down[e.to] && e.msg == nil {
				continue // waits for the datacenter to return
			}
			if e.at <= ms*1000 && (i < 0 || e.at < w.events[i].at || (e.at == w.events[i].at && e.seq < w.events[i].seq)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		e := w.events[i]
		w.events = slices.Delete(w.events, i, i+1)
		w.nowUs = e.at
		if w.down[e.to] {
			continue // a message to a crashed datacenter is lost
		}
		switch {
		case e.req != nil:
			w.reps[e.to].HandleRequest(*e.req)
		case e.msg != nil:
			w.reps[e.to].HandleMessage(protocol.NodeID(e.from), e.msg)
		default:
			w.reps[e.to].HandleTimer(e.timer)
		}
	}
	w.nowUs = ms * 1000
}

// crash freezes datacenter dc from now on.
func (w *world) crash(dc int) { w.down[dc] = true }

// restart resumes datacenter dc: its waiting timers and requests run now.
func (w *world) restart(dc int) {
	w.down[dc] = false
	for i := range w.events {
		if w.events[i].to == dc && w.events[i].at < w.nowUs {
			w.events[i].at = w.nowUs
		}
	}
}

// find returns the reply to client c's request seq.
func (w *world) find(c txn.ClientID, seq uint64) (reply, bool) {
	for _, r := range w.replies {
		if r.Client == c && r.Seq == seq {
			return r, true
		}
	}
	return reply{}, false
}

func get(c txn.ClientID, seq uint64, id txn.ID, key string) protocol.Request {
	return protocol.Request{Client: c, Seq: seq, Kind: protocol.Get, Key: key, TxnID: id}
}

func commit(c txn.ClientID, seq uint64, t *txn.Txn) protocol.Request {
	return protocol.Request{Client: c, Seq: seq, Kind: protocol.Commit, Txn: t}
}

// TestCrossingLocksDeadlock is spec §7.4: t1 (at O) reads a then writes b, t2 (at C) reads b
// then writes a. t1's exclusive request on b waits for t2's shared lock; t2's on a closes the
// cycle, so t2 aborts at once (GAP-B2) and t1 commits.
func TestCrossingLocksDeadlock(t *testing.T) {
	w := newWorld(t, nil)
	o, c := w.dc("O"), w.dc("C")
	t1, t2 := txn.NewID(1, 1), txn.NewID(2, 1)
	w.at(0, o, get(1, 1, t1, "a"))
	w.at(0, c, get(2, 1, t2, "b"))
	w.runTo(99)
	for _, cl := range []txn.ClientID{1, 2} {
		if r, ok := w.find(cl, 1); !ok || r.Err != "" {
			t.Fatalf("read of client %d: %+v, %v", cl, r, ok)
		}
	}
	w.at(100, o, commit(1, 2, &txn.Txn{ID: t1, Reads: []txn.Read{{Key: "a"}}, Writes: []txn.Write{{Key: "b", Value: []byte("t1")}}}))
	w.at(100, c, commit(2, 2, &txn.Txn{ID: t2, Reads: []txn.Read{{Key: "b"}}, Writes: []txn.Write{{Key: "a", Value: []byte("t2")}}}))
	w.runTo(2000)
	// t1's commit reaches V at 133 and waits for b; t2's reaches V at 139 and closes the cycle:
	// aborted at once, answered at C at 139 + 39 = 178. t1 then takes b: chosen at 139 + 78,
	// answered at O at 250.
	r2, ok := w.find(2, 2)
	if !ok || r2.Status != txn.Aborted || r2.Reason != ReasonDeadlock || r2.atUs != 178_000 {
		t.Errorf("t2: %+v (found %v), want aborted for deadlock at 178 ms", r2, ok)
	}
	r1, ok := w.find(1, 2)
	if !ok || r1.Status != txn.Committed || r1.atUs != 250_000 {
		t.Errorf("t1: %+v (found %v), want committed at 250 ms", r1, ok)
	}
	for dc, e := range w.envs {
		if got := e.store.Get("b").Writer; got != t1 {
			t.Errorf("%s: b written by %s, want %s", w.topo.DCs[dc], got, t1)
		}
		if got := e.store.Get("a").Writer; got != txn.None {
			t.Errorf("%s: a written by %s, want the initial version", w.topo.DCs[dc], got)
		}
	}
}

// TestGetOfDeadlockedTxn: a read that closes a cycle is answered with Reply.Err, and the
// transaction's Commit then aborts at once with the reason, without a round trip.
func TestGetOfDeadlockedTxn(t *testing.T) {
	w := newWorld(t, nil)
	v := w.dc("V")
	t1, t2 := txn.NewID(1, 1), txn.NewID(2, 1)
	// Both read k at V (shared), then both try to write it: t1's upgrade waits for t2, t2's
	// closes the cycle.
	w.at(0, v, get(1, 1, t1, "k"))
	w.at(0, v, get(2, 1, t2, "k"))
	w.at(1, v, commit(1, 2, &txn.Txn{ID: t1, Reads: []txn.Read{{Key: "k"}}, Writes: []txn.Write{{Key: "k"}}}))
	w.at(1, v, commit(2, 2, &txn.Txn{ID: t2, Reads: []txn.Read{{Key: "k"}}, Writes: []txn.Write{{Key: "k"}}}))
	// t3 waits for a shared lock on k behind t1's exclusive one, then t1 commits.
	t3 := txn.NewID(3, 1)
	w.at(2, v, get(3, 1, t3, "k"))
	w.runTo(500)
	if r, _ := w.find(2, 2); r.Status != txn.Aborted || r.Reason != ReasonDeadlock || r.atUs != 1000 {
		t.Errorf("t2: %+v, want aborted for deadlock at 1 ms", r)
	}
	if r, _ := w.find(1, 2); r.Status != txn.Committed || r.atUs != 79_000 {
		t.Errorf("t1: %+v, want committed at 79 ms", r)
	}
	if r, _ := w.find(3, 1); r.Err != "" || r.Version != t1 || r.atUs != 79_000 {
		t.Errorf("t3's read: %+v, want t1's version once t1 released k at 79 ms", r)
	}
	// A deadlocked read: t4 holds x shared and asks for y; t5 holds y exclusively (committing,
	// waiting for x); t4's wait closes the cycle.
	t4, t5 := txn.NewID(4, 1), txn.NewID(5, 1)
	w.at(600, v, get(4, 1, t4, "x"))
	w.at(601, v, get(5, 1, t5, "y"))
	w.at(602, v, commit(5, 2, &txn.Txn{ID: t5, Reads: []txn.Read{{Key: "y"}}, Writes: []txn.Write{{Key: "y"}, {Key: "x"}}}))
	w.at(603, v, get(4, 2, t4, "y"))
	w.at(604, v, commit(4, 3, &txn.Txn{ID: t4, Reads: []txn.Read{{Key: "x"}}}))
	w.runTo(1500)
	if r, _ := w.find(4, 2); r.Err == "" || r.atUs != 603_000 {
		t.Errorf("t4's read of y: %+v, want an error at once", r)
	}
	if r, _ := w.find(4, 3); r.Status != txn.Aborted || r.Reason != ReasonDeadlock || r.atUs != 604_000 {
		t.Errorf("t4's commit: %+v, want aborted for deadlock at once", r)
	}
	if r, _ := w.find(5, 2); r.Status != txn.Committed {
		t.Errorf("t5: %+v, want committed", r)
	}
}

// TestCommitNeedsMajorityOfAccepts is spec §7.4: the commit is acknowledged only after two
// other datacenters' accepts reached V (78 ms at V, not O's 66), and never while fewer can.
func TestCommitNeedsMajorityOfAccepts(t *testing.T) {
	w := newWorld(t, nil)
	v := w.dc("V")
	t1 := txn.NewID(1, 1)
	w.at(0, v, commit(1, 1, &txn.Txn{ID: t1, Writes: []txn.Write{{Key: "x", Value: []byte("1")}}}))
	w.runTo(77)
	if r, ok := w.find(1, 1); ok {
		t.Fatalf("acknowledged at %d µs with one accept: %+v", r.atUs, r)
	}
	w.runTo(78)
	if r, ok := w.find(1, 1); !ok || r.Status != txn.Committed {
		t.Fatalf("not committed at 78 ms: %+v", r)
	}

	// Only O's accepts reach V: no majority, no acknowledgement and nothing installed at V.
	w = newWorld(t, nil)
	o := w.dc("O")
	cut := true
	w.drop = func(from, to int, m protocol.Message) bool {
		_, ack := m.(*Ack)
		return cut && ack && to == v && from != o
	}
	t2 := txn.NewID(2, 1)
	w.at(0, w.dc("S"), commit(2, 1, &txn.Txn{ID: t2, Writes: []txn.Write{{Key: "x", Value: []byte("2")}}}))
	w.runTo(5000) // past the timeout: the abort request finds the commit decided and waits too
	if r, ok := w.find(2, 1); ok {
		t.Fatalf("acknowledged without a majority: %+v", r)
	}
	if got := w.envs[v].store.Get("x").Writer; got != txn.None {
		t.Fatalf("V installed %s without a majority", got)
	}
	cut = false // retransmissions now gather the majority
	w.runTo(7000)
	if r, ok := w.find(2, 1); !ok || r.Status != txn.Committed {
		t.Fatalf("not committed after the acks could flow: %+v", r)
	}
	for dc, e := range w.envs {
		if got := e.store.Get("x").Writer; got != t2 {
			t.Errorf("%s: x written by %s, want %s", w.topo.DCs[dc], got, t2)
		}
	}
}

// TestTimeoutAbortsAndReleases: the coordinator's answers to O are lost; the Get times out with
// an error, the Commit aborts at once with "timeout", and the coordinator releases the lock so
// that another transaction can write the key.
func TestTimeoutAbortsAndReleases(t *testing.T) {
	w := newWorld(t, protocol.Params{ParamTimeout: "500ms"})
	o, v := w.dc("O"), w.dc("V")
	lose := true
	w.drop = func(from, to int, m protocol.Message) bool {
		_, rr := m.(*ReadResp)
		return lose && rr && from == v && to == o
	}
	t1, t2 := txn.NewID(1, 1), txn.NewID(2, 1)
	w.at(0, o, get(1, 1, t1, "k"))
	w.runTo(600)
	if r, ok := w.find(1, 1); !ok || r.Err == "" || r.atUs > 520_000 {
		t.Fatalf("Get: %+v, want an error after the 500 ms timeout", r)
	}
	w.at(600, o, commit(1, 2, &txn.Txn{ID: t1, Writes: []txn.Write{{Key: "k"}}}))
	w.runTo(600)
	if r, ok := w.find(1, 2); !ok || r.Status != txn.Aborted || r.Reason != ReasonTimeout {
		t.Fatalf("Commit: %+v, want aborted (timeout) at once", r)
	}
	w.at(700, v, commit(2, 1, &txn.Txn{ID: t2, Writes: []txn.Write{{Key: "k"}}}))
	w.runTo(1000)
	if r, ok := w.find(2, 1); !ok || r.Status != txn.Committed {
		t.Fatalf("t2: %+v, want committed once t1's lock is released", r)
	}
	// Duplicates of old requests change nothing.
	w.reps[v].HandleMessage(protocol.NodeID(o), &ReadReq{From: o, Txn: t1, Key: "z", Rid: 1})
	w.reps[v].HandleMessage(protocol.NodeID(o), &CommitReq{From: o, Txn: &txn.Txn{ID: t1, Writes: []txn.Write{{Key: "z"}}}})
	w.runTo(2000)
	if got := w.envs[v].store.Get("z").Writer; got != txn.None {
		t.Errorf("a duplicated commit of aborted %s installed z", t1)
	}
}

func TestNewValidatesParams(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	nodes := []protocol.Node{}
	for dc := range topo.N() {
		nodes = append(nodes, protocol.Node{ID: protocol.NodeID(dc), DC: dc})
	}
	for _, p := range []protocol.Params{{"coordinator": "X"}, {"timeout": "0s"}, {"timeout": "x"}, {"bogus": "1"},
		{"lease": "10ms"}, {"lease": "x"}, {"max_drift_ppm": "-1"}, {"max_drift_ppm": "200000"}, {"failover_order": "V,X"}} {
		if _, err := New(protocol.Config{Nodes: nodes, Topology: topo, Params: p}, nil); err == nil {
			t.Errorf("params %v accepted", p)
		}
	}
	ok := protocol.Params{"coordinator": "S", "lease": "2s", "max_drift_ppm": "50", "failover_order": "S,I"}
	if _, err := New(protocol.Config{Nodes: nodes, Topology: topo, Params: ok}, nil); err != nil {
		t.Errorf("params %v: %v", ok, err)
	}
}
