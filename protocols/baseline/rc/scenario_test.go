package rc

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// world drives one RC replica per datacenter by hand with exact delays (RTT/2): messages,
// timers and requests are events in virtual time, and the test may drop messages.
type world struct {
	t        *testing.T
	topo     *topology.Topology
	replicas []protocol.Replica
	envs     []*testEnv
	nowUs    int64
	seq      uint64
	events   []event
	drop     func(from, to int, m protocol.Message) bool
	replies  map[txn.ClientID][]protocol.Reply
}

type event struct {
	atUs, seq int64
	dc        int
	from      int // message sender, or -1
	msg       protocol.Message
	timer     protocol.TimerID
}

type testEnv struct {
	w     *world
	dc    int
	store *store.Store
	rand  *rand.Rand
}

func (e *testEnv) NowUs() int64        { return e.w.nowUs }
func (e *testEnv) Rand() *rand.Rand    { return e.rand }
func (e *testEnv) Store() *store.Store { return e.store }
func (e *testEnv) Reply(r protocol.Reply) {
	e.w.replies[r.Client] = append(e.w.replies[r.Client], r)
}
func (e *testEnv) SetTimer(afterUs int64, id protocol.TimerID) {
	e.w.push(event{atUs: e.w.nowUs + afterUs, dc: e.dc, from: -1, timer: id})
}
func (e *testEnv) Send(to protocol.NodeID, m protocol.Message) {
	w := e.w
	if w.drop != nil && w.drop(e.dc, int(to), m) {
		return
	}
	w.push(event{atUs: w.nowUs + int64(w.topo.RTTMs[e.dc][to]*500), dc: int(to), from: e.dc, msg: m})
}

func (w *world) push(ev event) {
	w.seq++
	ev.seq = int64(w.seq)
	w.events = append(w.events, ev)
}

func newWorld(t *testing.T, topo *topology.Topology, params protocol.Params) *world {
	t.Helper()
	w := &world{t: t, topo: topo, replies: map[txn.ClientID][]protocol.Reply{}}
	var nodes []protocol.Node
	for dc := range topo.N() {
		nodes = append(nodes, protocol.Node{ID: protocol.NodeID(dc), DC: dc})
	}
	for dc := range topo.N() {
		e := &testEnv{w: w, dc: dc, store: store.New(), rand: rand.New(rand.NewPCG(1, uint64(dc)))}
		r, err := New(protocol.Config{Self: protocol.NodeID(dc), Nodes: nodes, Topology: topo, Params: params}, e)
		if err != nil {
			t.Fatal(err)
		}
		w.envs = append(w.envs, e)
		w.replicas = append(w.replicas, r)
	}
	for _, r := range w.replicas {
		r.Start()
	}
	return w
}

// runTo handles every event due at or before tMs, in (time, scheduling) order.
func (w *world) runTo(tMs int64) {
	tUs := tMs * 1000
	for {
		sort.Slice(w.events, func(i, j int) bool {
			a, b := w.events[i], w.events[j]
			return a.atUs < b.atUs || (a.atUs == b.atUs && a.seq < b.seq)
		})
		if len(w.events) == 0 || w.events[0].atUs > tUs {
			break
		}
		ev := w.events[0]
		w.events = w.events[1:]
		w.nowUs = ev.atUs
		if ev.msg != nil {
			w.replicas[ev.dc].HandleMessage(protocol.NodeID(ev.from), ev.msg)
		} else {
			w.replicas[ev.dc].HandleTimer(ev.timer)
		}
	}
	w.nowUs = tUs
}

func (w *world) get(dc int, c txn.ClientID, id txn.ID, key string) {
	w.replicas[dc].HandleRequest(protocol.Request{Client: c, Seq: uint64(len(w.replies[c]) + 1), Kind: protocol.Get, Key: key, TxnID: id})
}

func (w *world) commit(dc int, c txn.ClientID, t *txn.Txn) {
	w.replicas[dc].HandleRequest(protocol.Request{Client: c, Seq: uint64(len(w.replies[c]) + 1), Kind: protocol.Commit, Txn: t})
}

// last returns client c's latest reply and when the test saw it.
func (w *world) last(c txn.ClientID) (protocol.Reply, bool) {
	rs := w.replies[c]
	if len(rs) == 0 {
		return protocol.Reply{}, false
	}
	return rs[len(rs)-1], true
}

func writeTxn(c txn.ClientID, seq uint32, key string) *txn.Txn {
	id := txn.NewID(c, seq)
	return &txn.Txn{ID: id, Writes: []txn.Write{{Key: key, Value: []byte(id.String())}}}
}

func awsHelios(t *testing.T) *topology.Topology {
	topo, ok := topology.Preset("aws-helios")
	if !ok {
		t.Fatal("no preset aws-helios")
	}
	return topo
}

func three() *topology.Topology {
	return &topology.Topology{Name: "three", DCs: []string{"A", "B", "C"},
		RTTMs:    [][]float64{{0, 30, 20}, {30, 0, 40}, {20, 40, 0}},
		StdDevMs: [][]float64{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}}
}

// TestUncontendedCommitAtClosestMajority commits one write at each aws-helios datacenter in
// turn and checks the reply arrives after exactly the closest-majority RTT (§5.6, §7.4).
func TestUncontendedCommitAtClosestMajority(t *testing.T) {
	topo := awsHelios(t)
	w := newWorld(t, topo, nil)
	want := map[string]int64{"V": 78, "O": 66, "C": 78, "I": 175, "S": 194}
	start := int64(0)
	for dc, name := range topo.DCs {
		c := txn.ClientID(dc + 1)
		w.commit(dc, c, writeTxn(c, 1, "k"+name))
		var at int64 = -1
		for ms := start + 1; ms <= start+1000 && at < 0; ms++ {
			w.runTo(ms)
			if r, ok := w.last(c); ok {
				if r.Status != txn.Committed {
					t.Fatalf("%s: %v %s", name, r.Status, r.Reason)
				}
				at = ms - start
			}
		}
		if at != want[name] {
			t.Errorf("%s: committed after %d ms, want %d", name, at, want[name])
		}
		start += 1000
		w.runTo(start)
	}
	for dc := range topo.N() {
		if got := w.envs[dc].store.Seq(); got != 5 {
			t.Errorf("%s installed %d transactions, want 5", topo.DCs[dc], got)
		}
	}
}

// TestConflictingCommitsAtMostOneMajority submits, at the same instant, a write of the same key
// at every aws-helios datacenter: at most one may commit (§7.4), and every replica ends with the
// same versions.
func TestConflictingCommitsAtMostOneMajority(t *testing.T) {
	topo := awsHelios(t)
	w := newWorld(t, topo, nil)
	for dc := range topo.N() {
		c := txn.ClientID(dc + 1)
		w.commit(dc, c, writeTxn(c, 1, "x"))
	}
	w.runTo(5000)
	committed := 0
	for dc := range topo.N() {
		r, ok := w.last(txn.ClientID(dc + 1))
		if !ok {
			t.Fatalf("%s: no decision", topo.DCs[dc])
		}
		if r.Status == txn.Committed {
			committed++
		} else if r.Reason != ReasonRejected {
			t.Errorf("%s: aborted with %q, want %q", topo.DCs[dc], r.Reason, ReasonRejected)
		}
	}
	if committed > 1 {
		t.Fatalf("%d conflicting transactions committed", committed)
	}
	for dc := range topo.N() {
		if got := len(w.envs[dc].store.VersionOrder()["x"]); got != committed {
			t.Errorf("%s holds %d versions of x, want %d", topo.DCs[dc], got, committed)
		}
	}

	// Two at a time: A and B race for y in the three-datacenter topology; C is closer to A.
	w = newWorld(t, three(), nil)
	w.commit(0, 1, writeTxn(1, 1, "y"))
	w.commit(1, 2, writeTxn(2, 1, "y"))
	w.runTo(1000)
	a, _ := w.last(1)
	b, _ := w.last(2)
	if a.Status != txn.Committed || b.Status != txn.Aborted {
		t.Fatalf("A %v, B %v: want A to win C's lock (RTT 20 < 40) and B to abort", a.Status, b.Status)
	}
}

// TestReadFailsWhenMajorityRefuses holds an exclusive lock on x at a majority (B and C accepted
// T1 but its decision is lost), so a read of x fails (§7.4) and dooms its transaction, whose
// commit then aborts at once. Once the decision gets through (retransmitted), the locks are
// released and a read sees T1's version.
func TestReadFailsWhenMajorityRefuses(t *testing.T) {
	w := newWorld(t, three(), nil)
	w.drop = func(from, to int, m protocol.Message) bool {
		_, isDecision := m.(*Decision)
		return isDecision && from == 0
	}
	t1 := writeTxn(1, 1, "x")
	w.commit(0, 1, t1)
	w.runTo(100)
	if r, _ := w.last(1); r.Status != txn.Committed {
		t.Fatalf("T1: %v %s", r.Status, r.Reason)
	}
	t2 := txn.NewID(2, 1)
	w.get(2, 2, t2, "x") // at C: C and B refuse, A (which installed T1) grants
	w.runTo(200)
	r, ok := w.last(2)
	if !ok || !strings.Contains(r.Err, "denied") {
		t.Fatalf("read at C: %+v, want a denied read", r)
	}
	w.commit(2, 2, &txn.Txn{ID: t2, Writes: []txn.Write{{Key: "z", Value: []byte("v")}}})
	if r, _ := w.last(2); r.Status != txn.Aborted || r.Reason != ReasonReadLockDenied {
		t.Fatalf("commit of the doomed transaction: %v %q, want aborted %q at once", r.Status, r.Reason, ReasonReadLockDenied)
	}
	w.drop = nil
	w.runTo(3000) // the decision is retransmitted
	t3 := txn.NewID(3, 1)
	w.get(1, 3, t3, "x")
	w.runTo(3100)
	r, _ = w.last(3)
	if r.Err != "" || r.Version != t1.ID {
		t.Fatalf("read after the decision: %+v, want version %v", r, t1.ID)
	}
	for dc := range 3 {
		if got := w.envs[dc].store.VersionOrder()["x"]; len(got) != 1 || got[0] != t1.ID {
			t.Errorf("replica %d: versions of x %v, want [%v]", dc, got, t1.ID)
		}
	}
}

// TestReadUsesNewestVersionOfMajority: C never hears of T1 (its Accept and decision to C are
// lost), so C's own copy of x is the initial version; a read at C answered by {C, A} must still
// return T1's version, the newer one of the majority.
func TestReadUsesNewestVersionOfMajority(t *testing.T) {
	w := newWorld(t, three(), nil)
	w.drop = func(from, to int, m protocol.Message) bool {
		switch m.(type) {
		case *Accept, *Decision:
			return from == 0 && to == 2
		}
		return false
	}
	t1 := writeTxn(1, 1, "x")
	w.commit(0, 1, t1)
	w.runTo(100)
	if r, _ := w.last(1); r.Status != txn.Committed {
		t.Fatalf("T1: %v %q", r.Status, r.Reason)
	}
	if v := w.envs[2].store.Get("x").Writer; v != txn.None {
		t.Fatalf("C already installed %v", v)
	}
	w.get(2, 2, txn.NewID(2, 1), "x")
	w.runTo(120) // A's grant arrives after RTT(C, A) = 20 ms
	if r, _ := w.last(2); r.Err != "" || r.Version != t1.ID || string(r.Value) != t1.ID.String() {
		t.Fatalf("read at C: %+v, want T1's version", r)
	}
	w.drop = nil
	w.runTo(2000)
	if v := w.envs[2].store.Get("x").Writer; v != t1.ID {
		t.Fatalf("C has %v after retransmission, want %v", v, t1.ID)
	}
}

// TestStaleReadRejected: a commit whose read of x predates T1's committed write aborts, and one
// that read T1's version commits (§5.1 step 3's read validation).
func TestStaleReadRejected(t *testing.T) {
	w := newWorld(t, three(), nil)
	t1 := writeTxn(1, 1, "x")
	w.commit(0, 1, t1)
	w.runTo(1000)
	// T2 at C read the initial version of x (before T1) and writes x: stale, must abort.
	t2 := &txn.Txn{ID: txn.NewID(2, 1), Reads: []txn.Read{{Key: "x", Version: txn.None}}, Writes: []txn.Write{{Key: "y", Value: []byte("v")}}}
	w.commit(2, 2, t2)
	w.runTo(2000)
	if r, _ := w.last(2); r.Status != txn.Aborted || r.Reason != ReasonRejected {
		t.Fatalf("stale reader: %v %q, want aborted %q", r.Status, r.Reason, ReasonRejected)
	}
	t3 := &txn.Txn{ID: txn.NewID(3, 1), Reads: []txn.Read{{Key: "x", Version: t1.ID}}, Writes: []txn.Write{{Key: "x", Value: []byte("v")}}}
	w.commit(2, 3, t3)
	w.runTo(3000)
	if r, _ := w.last(3); r.Status != txn.Committed {
		t.Fatalf("fresh reader: %v %q, want committed", r.Status, r.Reason)
	}
}

// TestTimeoutAndLease: votes to A are lost, so A's commit aborts at its timeout and publishes
// the abort, which releases B's and C's exclusive locks; a read lock whose transaction never
// commits lapses after lock_timeout.
func TestTimeoutAndLease(t *testing.T) {
	w := newWorld(t, three(), protocol.Params{ParamTimeout: "300ms", ParamLockTimeout: "500ms"})
	w.drop = func(from, to int, m protocol.Message) bool {
		_, isVote := m.(*Vote)
		return isVote && to == 0 && from != 0
	}
	w.commit(0, 1, writeTxn(1, 1, "x"))
	w.runTo(299)
	if _, ok := w.last(1); ok {
		t.Fatal("decided before the timeout")
	}
	w.runTo(320)
	if r, _ := w.last(1); r.Status != txn.Aborted || r.Reason != ReasonTimeout {
		t.Fatalf("T1: %v %q, want aborted %q", r.Status, r.Reason, ReasonTimeout)
	}
	w.drop = nil
	w.runTo(400)
	// Now a reader at B locks x everywhere and never commits.
	w.get(1, 2, txn.NewID(2, 1), "x")
	w.runTo(500)
	if r, _ := w.last(2); r.Err != "" {
		t.Fatalf("read: %s", r.Err)
	}
	w.commit(2, 3, writeTxn(3, 1, "x"))
	w.runTo(600)
	if r, _ := w.last(3); r.Status != txn.Aborted {
		t.Fatalf("writer under a read lock: %v, want aborted", r.Status)
	}
	w.runTo(1100) // the read locks lapse
	w.commit(2, 4, writeTxn(4, 1, "x"))
	w.runTo(1200)
	if r, _ := w.last(4); r.Status != txn.Committed {
		t.Fatalf("writer after the lease: %v %q, want committed", r.Status, r.Reason)
	}
}

// TestDuplicatesAreIdempotent delivers every message twice: outcomes are unchanged and every
// replica installs each committed write once.
func TestDuplicatesAreIdempotent(t *testing.T) {
	w := newWorld(t, three(), nil)
	w.drop = func(from, to int, m protocol.Message) bool {
		w.push(event{atUs: w.nowUs + int64(w.topo.RTTMs[from][to]*500) + 1, dc: to, from: from, msg: m})
		return false
	}
	for i := range 5 {
		c := txn.ClientID(i + 1)
		w.commit(i%3, c, writeTxn(c, 1, "x"))
		w.runTo(int64(i+1) * 1000)
		if r, _ := w.last(c); r.Status != txn.Committed {
			t.Fatalf("T%d: %v %q", i+1, r.Status, r.Reason)
		}
	}
	for dc := range 3 {
		if got := w.envs[dc].store.VersionOrder()["x"]; len(got) != 5 {
			t.Errorf("replica %d: %d versions of x, want 5", dc, len(got))
		}
	}
}

// TestNewValidates checks the factory's parameter validation and placement requirement.
func TestNewValidates(t *testing.T) {
	topo := three()
	nodes := []protocol.Node{{ID: 0, DC: 0}, {ID: 1, DC: 1}, {ID: 2, DC: 2}}
	env := &testEnv{store: store.New()}
	for _, tc := range []struct {
		params protocol.Params
		nodes  []protocol.Node
		want   string
	}{
		{protocol.Params{"interval": "1ms"}, nodes, "unknown parameter"},
		{protocol.Params{ParamTimeout: "soon"}, nodes, "not a duration"},
		{protocol.Params{ParamLockTimeout: "0s"}, nodes, "must be positive"},
		{nil, nodes[:2], "no replica"},
	} {
		_, err := New(protocol.Config{Self: 0, Nodes: tc.nodes, Topology: topo, Params: tc.params}, env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("params %v, %d nodes: error %v, want one containing %q", tc.params, len(tc.nodes), err, tc.want)
		}
	}
	if _, err := New(protocol.Config{Self: 1, Nodes: nodes, Topology: topo, Params: protocol.Params{ParamTimeout: "1s", ParamLockTimeout: "3s"}}, env); err != nil {
		t.Fatal(err)
	}
}
