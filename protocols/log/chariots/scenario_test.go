package chariots

import (
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/log/logtest"
	"github.com/meridian-kv/meridian/topology"
)

// world is a hand-driven Chariots deployment whose invariants are checked after every event.
type world struct {
	*logtest.World
	t   *testing.T
	cfg Config
	chk *Checker
	// violation, if set, collects the first violation instead of failing (negative controls).
	violation *string
	seqs      map[txn.ClientID]uint64
}

func newWorld(t *testing.T, dcs int, params protocol.Params) *world {
	t.Helper()
	topo, _ := topology.Preset("table4.1")
	if dcs < topo.N() {
		var err error
		if topo, err = topology.Subset(topo, topo.DCs[:dcs]); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{"b": "4", "gossip": "5ms", "flush": "2ms", "hold": "2ms"} {
		if params[k] == "" {
			params[k] = v
		}
	}
	cfg, err := ParseConfig(topo.N(), params, 40)
	if err != nil {
		t.Fatal(err)
	}
	lw, err := logtest.New(topo, cfg.Layout.Nodes, Factory, params)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{World: lw, t: t, cfg: cfg, chk: NewChecker(), seqs: map[txn.ClientID]uint64{}}
	w.AfterEvent = func() {
		if err := w.chk.Check(w.snapshot()); err != nil {
			if w.violation != nil {
				if *w.violation == "" {
					*w.violation = err.Error()
				}
				return
			}
			t.Fatalf("after event %d at %d µs: %v", w.Events, w.NowUs(), err)
		}
	}
	return w
}

func (w *world) snapshot() Snapshot {
	return Take(w.cfg, func(id protocol.NodeID) protocol.Replica { return w.Reps[id] })
}

func (w *world) node(dc int, r flstore.Role, i int) protocol.NodeID {
	return w.cfg.Layout.All(dc, r)[i]
}

// appendAt makes client c (of datacenter dc) append body through batcher i.
func (w *world) appendAt(dc int, c txn.ClientID, body string) {
	w.seqs[c]++
	w.appendSeq(dc, 0, c, w.seqs[c], body)
}

func (w *world) appendSeq(dc, batcher int, c txn.ClientID, seq uint64, body string) {
	w.Request(c, seq, w.node(dc, flstore.Batcher, batcher), &flstore.AppendOp{Record: &Record{AppendSeq: seq, Body: []byte(body)}})
}

// find returns the position of (host, toid) in dc's log, or 0.
func (w *world) find(dc, host int, toid uint64) uint64 {
	for l, r := range w.snapshot().Logs[dc] {
		if r.Host == host && r.TOId == toid {
			return l
		}
	}
	return 0
}

// converged runs until the logs converge (checked every 10 ms) and fails if they have not by
// untilUs.
func (w *world) converged(untilUs int64) Snapshot {
	w.t.Helper()
	for {
		w.RunUntil(w.NowUs() + 10_000)
		s := w.snapshot()
		err := CheckConverged(s)
		if err == nil {
			return s
		}
		if w.NowUs() >= untilUs {
			w.t.Fatal(err)
		}
	}
}

// shipped reports whether m is a shipment carrying (host, toid).
func shipped(m protocol.Message, host int, toid uint64) bool {
	b, ok := m.(*ShipBatch)
	if !ok {
		return false
	}
	for _, r := range b.Records {
		if r.Host == host && r.TOId == toid {
			return true
		}
	}
	return false
}

const dcA, dcB, dcC = 0, 1, 2

// TestCHS3PerHostReorder is scenario CH-S3: datacenter A receives B's TOId 3 before its TOId 2
// (the first shipment of B2 is lost); B3 waits in A's filter, and A logs B2 then B3 at
// consecutive positions once the sender ships B2 again.
func TestCHS3PerHostReorder(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{})
	lost := false
	w.Drop = func(from, to protocol.NodeID, m protocol.Message) bool {
		if !lost && shipped(m, dcB, 2) && w.Nodes[to].DC == dcA {
			lost = true
			return true
		}
		return false
	}
	w.appendAt(dcB, 1, "b1")
	w.RunUntil(20_000)
	w.appendAt(dcB, 1, "b2")
	w.RunUntil(40_000)
	w.appendAt(dcB, 1, "b3")
	w.RunUntil(100_000)
	if !lost || w.find(dcA, dcB, 3) != 0 {
		t.Fatalf("B3 logged at A before B2 (lost: %v)", lost)
	}
	if f := w.Reps[w.node(dcA, flstore.Filter, 0)].(*Filter); f.pending[dcB][3] == nil {
		t.Fatal("B3 is not pending at A's filter")
	}
	w.converged(1_000_000)
	if l2, l3 := w.find(dcA, dcB, 2), w.find(dcA, dcB, 3); l3 != l2+1 {
		t.Fatalf("A logged B2 at %d and B3 at %d, want consecutive", l2, l3)
	}
}

// causalWait runs scenario CH-S4 and returns A's positions of c1 and b1: C appends c1; B
// receives it, a client at B reads it and then appends b1; A receives b1 before c1 (C's
// shipments to A are lost for 300 ms).
func causalWait(t *testing.T, params protocol.Params, violation *string) (lc1, lb1 uint64, w *world) {
	w = newWorld(t, 3, params)
	w.violation = violation
	w.Drop = func(from, to protocol.NodeID, m protocol.Message) bool {
		return w.NowUs() < 300_000 && w.Nodes[from].DC == dcC && w.Nodes[to].DC == dcA && shipped(m, dcC, 1)
	}
	w.appendAt(dcC, 1, "c1")
	for w.find(dcB, dcC, 1) == 0 && w.NowUs() < 200_000 {
		w.RunUntil(w.NowUs() + 1000)
	}
	lc := w.find(dcB, dcC, 1)
	w.RunUntil(w.NowUs() + 10_000) // B's head of log passes it
	owner := w.snapshot().Journal[dcB].Owner(lc)
	w.Request(2, 100, owner, &flstore.ReadOp{From: lc, To: lc})
	w.RunUntil(w.NowUs() + 1000)
	var read bool
	for _, r := range w.Replies {
		if rr, ok := r.Op.(*flstore.ReadResult); ok && r.Client == 2 && len(rr.Records) == 1 && rr.Records[0].Host == dcC {
			read = true
		}
	}
	if !read {
		t.Fatal("the client at B could not read c1")
	}
	w.appendAt(dcB, 2, "b1")
	w.RunUntil(250_000)
	if violation == nil && (w.find(dcA, dcB, 1) != 0 || w.find(dcA, dcC, 1) != 0) {
		t.Fatal("A logged b1 or c1 while c1 cannot have reached it")
	}
	w.RunUntil(1_000_000)
	return w.find(dcA, dcC, 1), w.find(dcA, dcB, 1), w
}

// TestCHS4CausalWait is scenario CH-S4: b1 depends on c1 (Deps[C] = 1), so A defers b1 until
// c1 arrives and logs c1 first.
func TestCHS4CausalWait(t *testing.T) {
	lc1, lb1, w := causalWait(t, protocol.Params{}, nil)
	if r := w.snapshot().Logs[dcA][lb1]; r == nil || r.Deps[dcC] != 1 {
		t.Fatalf("b1 at A: %+v, want Deps[C] = 1", r)
	}
	if lc1 == 0 || lb1 <= lc1 {
		t.Fatalf("A logged c1 at %d and b1 at %d", lc1, lb1)
	}
	w.converged(2_000_000)
}

// TestBrokenQueueCaught is the negative control of CH-I2: a queue that ignores dependencies
// logs b1 before c1 at A, and the checker says so.
func TestBrokenQueueCaught(t *testing.T) {
	var v string
	causalWait(t, protocol.Params{UnsafeQueueIgnoreDeps: "true"}, &v)
	if !strings.Contains(v, "CH-I2") {
		t.Fatalf("the checker did not catch the broken queue (violation %q)", v)
	}
}

// TestCHS5Duplicate is scenario CH-S5: B's record (B,2) reaches A twice (the sender's shipment
// is duplicated) and is logged once; a client's retried append (to another batcher) likewise.
func TestCHS5Duplicate(t *testing.T) {
	for _, broken := range []bool{false, true} {
		params := protocol.Params{"batchers": "2"}
		var v string
		if broken {
			params[UnsafeFilterNoDedupe] = "true"
		}
		w := newWorld(t, 2, params)
		if broken {
			w.violation = &v
		}
		dup := false
		w.Drop = func(from, to protocol.NodeID, m protocol.Message) bool {
			if !dup && shipped(m, dcB, 2) && w.Nodes[to].DC == dcA {
				dup = true
				w.Inject(from, to, m, w.NowUs()+25_000)
			}
			return false
		}
		w.appendAt(dcB, 1, "b1")
		w.appendAt(dcB, 1, "b2")
		w.RunUntil(5000)
		w.appendSeq(dcB, 1, 1, 2, "b2") // the client's retry of b2, through the other batcher
		w.RunUntil(1_000_000)
		if broken {
			if !strings.Contains(v, "CH-I3") {
				t.Fatalf("the checker did not catch the broken filter (violation %q)", v)
			}
			continue
		}
		if !dup {
			t.Fatal("(B,2) was never shipped")
		}
		s := w.converged(1_000_000)
		if n := len(s.Logs[dcA]); n != 2 {
			t.Fatalf("A logged %d records, want 2", n)
		}
	}
}

// TestCHS7GarbageCollection is scenario CH-S7: with T_A[B][A] = 5, T_A[C][A] = 3 and
// T_A[A][A] = 7, A's own records up to TOId 3 may be collected, 4–7 not.
func TestCHS7GarbageCollection(t *testing.T) {
	table := [][]uint64{{7, 0, 0}, {5, 0, 0}, {3, 0, 0}}
	if got := Collectable(table, dcA); got != 3 {
		t.Fatalf("collectable up to %d, want 3", got)
	}
	// End to end: with gc on, every record is eventually collected everywhere, and CH-I7 holds
	// after every event.
	w := newWorld(t, 3, protocol.Params{"gc": "true"})
	for i := range 6 {
		w.appendAt(i%3, txn.ClientID(i+1), "r")
	}
	w.converged(2_000_000)
	w.RunUntil(w.NowUs() + 500_000)
	for dc, log := range w.snapshot().Logs {
		for l, r := range log {
			if !r.Collected {
				t.Fatalf("datacenter %d: position %d not collected", dc, l)
			}
		}
	}
}

// TestCHS9TokenDeferral is scenario CH-S9: two queues; Q1 holds (B,6), Q2 holds (B,5); the
// token at Q1 with MaxTOId[B] = 4 carries (B,6) to Q2, which logs (B,5) and then (B,6) in the
// same visit.
func TestCHS9TokenDeferral(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"queues": "2", "hold": "50ms"})
	q1, q2, f := w.node(dcA, flstore.Queue, 0), w.node(dcA, flstore.Queue, 1), w.node(dcA, flstore.Filter, 0)
	rec := func(toid uint64) *Record { return &Record{Host: dcB, TOId: toid, Deps: []uint64{0, toid - 1}} }
	w.Inject(f, q1, &RecordBatch{Seq: 1, Records: []*Record{rec(1), rec(2), rec(3), rec(4)}}, 1000)
	w.Inject(f, q1, &RecordBatch{Seq: 2, Records: []*Record{rec(6)}}, 2000)
	w.Inject(f, q2, &RecordBatch{Seq: 3, Records: []*Record{rec(5)}}, 3000)
	w.RunUntil(50_450) // Q1 passed the token (built at 400 µs: the rebuild's two round trips)
	tk := w.Reps[q1].(*Queue).LastToken()
	if tk.MaxTOId[dcB] != 4 || len(tk.Deferred) != 1 || tk.Deferred[0].TOId != 6 {
		t.Fatalf("Q1 passed MaxTOId[B] = %d with deferred %v, want 4 and (B,6)", tk.MaxTOId[dcB], tk.Deferred)
	}
	w.RunUntil(50_550) // Q2 got it
	tk = w.Reps[q2].(*Queue).LastToken()
	if tk.MaxTOId[dcB] != 6 || tk.LastLId != 6 || len(tk.Deferred) != 0 {
		t.Fatalf("after Q2's visit: MaxTOId[B] = %d, LastLId %d, deferred %d; want 6, 6, 0", tk.MaxTOId[dcB], tk.LastLId, len(tk.Deferred))
	}
	w.RunUntil(60_000)
	if w.find(dcA, dcB, 5) != 5 || w.find(dcA, dcB, 6) != 6 {
		t.Fatal("(B,5) and (B,6) not at positions 5 and 6")
	}
}

// TestCHS10FilterSplit is scenario CH-S10: at B, filter F1 champions host A; F2 is added for
// the even TOIds after 100 while A appends 200 records. A's TOIds up to 100 and the odd ones
// after go through F1, the even ones after 100 through F2; nothing is lost or duplicated.
func TestCHS10FilterSplit(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"spare_filters": "1", "b": "16"})
	f1, f2 := w.node(dcB, flstore.Filter, 0), w.node(dcB, flstore.Filter, 1)
	for i := range 200 {
		w.appendAt(dcA, txn.ClientID(i%4+1), "a")
		w.RunUntil(w.NowUs() + 1000)
		if i == 20 {
			u := &FilterMapUpdate{Host: dcA, FromTOId: 101, Filters: []protocol.NodeID{f2, f1}}
			w.Request(99, 1, w.node(dcB, flstore.Batcher, 0), u)
			w.Request(99, 2, f1, u)
			w.Request(99, 3, f2, u)
		}
	}
	s := w.converged(2_000_000)
	t.Logf("converged at %d µs after %d events", w.NowUs(), w.Events)
	if n := s.Truth[dcB][dcA]; n != 200 {
		t.Fatalf("B logged %d of A's records, want 200", n)
	}
	if n1, n2 := w.Reps[f1].(*Filter).Forwarded(dcA), w.Reps[f2].(*Filter).Forwarded(dcA); n1 != 150 || n2 != 50 {
		t.Fatalf("F1 forwarded %d and F2 %d of A's records, want 150 and 50", n1, n2)
	}
}

// TestElasticityUnderLoad adds a queue, a maintainer and a batcher to datacenter A while both
// datacenters append (CH-I10: the invariants hold after every event throughout), and checks
// that the new machines took part and the logs converge.
func TestElasticityUnderLoad(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"spare_queues": "1", "spare_maintainers": "1", "spare_batchers": "1"})
	q, m, b := w.node(dcA, flstore.Queue, 1), w.node(dcA, flstore.Maintainer, 2), w.node(dcA, flstore.Batcher, 1)
	for i := range 150 {
		w.appendAt(i%2, txn.ClientID(i%6+1), "r")
		if i > 100 && i%2 == 0 {
			w.appendSeq(dcA, 1, txn.ClientID(50+i), 1, "via the new batcher")
		}
		w.RunUntil(w.NowUs() + 1000)
		switch i {
		case 30:
			w.Request(99, 1, w.node(dcA, flstore.Queue, 0), &AddQueue{Node: q})
			w.Request(99, 2, w.node(dcA, flstore.Filter, 0), &AddQueue{Node: q})
		case 60:
			w.Request(99, 3, w.node(dcA, flstore.Queue, 0), &AddMaintainer{Node: m})
		case 90:
			w.Request(99, 4, w.node(dcA, flstore.Receiver, 0), &AddBatcher{Node: b})
		}
	}
	s := w.converged(2_000_000)
	if len(s.Journal[dcA]) != 2 {
		t.Fatalf("A's journal has %d epochs, want 2", len(s.Journal[dcA]))
	}
	held := 0
	for _, at := range s.At[dcA] {
		if at == m {
			held++
		}
	}
	if held == 0 {
		t.Fatal("the new maintainer holds no position")
	}
	if tk := w.Reps[q].(*Queue).LastToken(); tk == nil {
		t.Fatal("the new queue never held the token")
	}
}

// explicitOrder appends, at datacenter A, a record asking for a position above 3 (MinLId) and
// then, 10 ms later, three more; it returns the explicit record's position once converged.
func explicitOrder(t *testing.T, params protocol.Params, violation *string) uint64 {
	w := newWorld(t, 2, params)
	w.violation = violation
	w.seqs[1]++
	w.Request(1, 1, w.node(dcA, flstore.Batcher, 0), &flstore.AppendOp{Record: &Record{AppendSeq: 1, MinLId: 3, Body: []byte("after 3")}})
	w.RunUntil(10_000)
	for i := range 3 {
		w.appendAt(dcA, txn.ClientID(2+i), "filler")
	}
	w.RunUntil(1_000_000)
	for l, r := range w.snapshot().Logs[dcA] {
		if r.Client == 1 {
			return l
		}
	}
	return 0
}

// TestCHI8ExplicitOrder: an append with MinLId 3 waits at the queue while the log is shorter,
// and is logged above position 3 once three other appends passed it (spec 3.6 in Chariots,
// CH-I8 checked after every event in the host's log).
func TestCHI8ExplicitOrder(t *testing.T) {
	if l := explicitOrder(t, protocol.Params{}, nil); l != 4 {
		t.Fatalf("the explicit-order append is at position %d, want 4", l)
	}
}

// TestBrokenQueueMinLIdCaught is CH-I8's negative control: a queue that ignores MinLId logs
// the record at position 1, and the checker says so.
func TestBrokenQueueMinLIdCaught(t *testing.T) {
	var v string
	explicitOrder(t, protocol.Params{UnsafeQueueIgnoreMinLId: "true"}, &v)
	if !strings.Contains(v, "CH-I8") {
		t.Fatalf("the checker did not catch the broken queue (violation %q)", v)
	}
}

// TestTokenPassLost: the first three passes of the token from one queue to the next are lost
// and a stale copy of an old pass arrives late; the holder resends the token until it is
// acknowledged, the next queue takes each pass once (by hop), and every append is logged once
// (spec 5.13: a lost token message is recovered; a lost queue's token is not rebuilt, see the
// package documentation).
func TestTokenPassLost(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"queues": "2"})
	q1, q2 := w.node(dcA, flstore.Queue, 0), w.node(dcA, flstore.Queue, 1)
	lost := 0
	var stale *Token
	w.Drop = func(from, to protocol.NodeID, m protocol.Message) bool {
		tk, ok := m.(*Token)
		if !ok || from != q1 || to != q2 {
			return false
		}
		if stale == nil {
			stale = tk.clone()
		}
		if lost < 3 {
			lost++
			return true
		}
		return false
	}
	for i := range 6 {
		w.appendAt(dcA, txn.ClientID(1+i%3), "r")
		w.appendAt(dcB, txn.ClientID(4+i%3), "r")
		w.RunUntil(w.NowUs() + 7_000)
	}
	w.Inject(q1, q2, stale, w.NowUs()+1000) // an old pass, duplicated by the network
	s := w.converged(3_000_000)
	if lost != 3 || len(s.Logs[dcA]) != 12 {
		t.Fatalf("%d passes lost, A's log holds %d records, want 3 and 12", lost, len(s.Logs[dcA]))
	}
}

// TestStagesRestartEmpty (spec 5.13: batchers and receivers restart empty; upstream retries,
// filters deduplicate): datacenter A's batcher restarts with two appends in its buffer, which
// are lost, and A's receiver restarts as B's first shipment of records reaches it, which is
// lost too; the client sends its two appends again, B's sender ships again what A's table does
// not show, and every record is logged once in both logs. A sender restarting empty is not
// handled: its ATable would start again from zeros, below what it already published (CH-I6).
func TestStagesRestartEmpty(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"resend": "100ms"})
	recvA := w.node(dcA, flstore.Receiver, 0)
	restarted := false
	w.Drop = func(_, to protocol.NodeID, m protocol.Message) bool {
		if b, ok := m.(*ShipBatch); ok && to == recvA && len(b.Records) > 0 && !restarted {
			restarted = true
			if err := w.Restart(recvA); err != nil {
				t.Fatal(err)
			}
			return true
		}
		return false
	}
	w.appendAt(dcA, 1, "a1")
	w.appendAt(dcA, 1, "a2")
	w.appendAt(dcB, 2, "b1")
	w.RunUntil(500) // the appends are in A's batcher's buffer, not yet flushed (2 ms)
	if err := w.Restart(w.node(dcA, flstore.Batcher, 0)); err != nil {
		t.Fatal(err)
	}
	w.RunUntil(300_000)
	if n := len(w.snapshot().Logs[dcA]); !restarted || n != 1 {
		t.Fatalf("receiver restarted: %v; A logged %d records before the client's retry, want 1 (B's, shipped again)", restarted, n)
	}
	w.appendSeq(dcA, 0, 1, 1, "a1") // the client's retries, after no answer
	w.appendSeq(dcA, 0, 1, 2, "a2")
	s := w.converged(2_000_000)
	for dc := range 2 {
		if n := len(s.Logs[dc]); n != 3 {
			t.Fatalf("datacenter %d logged %d records, want 3", dc, n)
		}
	}
}

// restart restarts node id empty and tells the checker (a restarted sender's ATable starts
// again from zeros).
func (w *world) restart(id protocol.NodeID) {
	w.t.Helper()
	old := w.Reps[id]
	if err := w.Restart(id); err != nil {
		w.t.Fatal(err)
	}
	w.chk.Restarted(id, old)
}

// TestFilterRestartEmpty restarts A's filter after it forwarded a1 and B's b1 (spec 5.13): the
// new filter has forgotten both. The client's retry of a1 (its answer lost) passes the new
// filter and is dropped by the queue (the token's Logged); B's b2 waits in the new filter
// until the token's row moves it past b1; the new filter's batches, numbered from 1 again
// under a newer incarnation, are taken. Each record is logged once in both datacenters.
func TestFilterRestartEmpty(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{})
	w.appendAt(dcA, 1, "a1")
	w.appendAt(dcB, 2, "b1")
	w.converged(2_000_000)
	w.restart(w.node(dcA, flstore.Filter, 0))
	w.RunUntil(w.NowUs() + 1000)
	w.appendSeq(dcA, 0, 1, 1, "a1") // the retry
	w.appendAt(dcB, 2, "b2")
	w.appendAt(dcA, 1, "a2")
	s := w.converged(w.NowUs() + 2_000_000)
	for dc := range 2 {
		if n := len(s.Logs[dc]); n != 4 {
			t.Fatalf("datacenter %d logged %d records, want 4 (a1, a2, b1, b2)", dc, n)
		}
	}
}

// TestFilterRestartAfterSplit restarts B's new filter F2 after a filter split (CH-S10) gave it
// A's even TOIds from 41: restarted, it holds the initial map, where it champions nothing, and
// drops what the batcher sends it; FilterMapSync gives it the split again (and a restarted
// batcher, routing by the initial map to F1, learns it from F1 the same way). All 80 of A's
// records are logged at B once, F2 forwarding some of the even ones from 41.
func TestFilterRestartAfterSplit(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"spare_filters": "1", "b": "16"})
	f1, f2 := w.node(dcB, flstore.Filter, 0), w.node(dcB, flstore.Filter, 1)
	for i := range 80 {
		w.appendAt(dcA, txn.ClientID(i%4+1), "a")
		w.RunUntil(w.NowUs() + 1000)
		switch i {
		case 10:
			u := &FilterMapUpdate{Host: dcA, FromTOId: 41, Filters: []protocol.NodeID{f2, f1}}
			w.Request(99, 1, w.node(dcB, flstore.Batcher, 0), u)
			w.Request(99, 2, f1, u)
			w.Request(99, 3, f2, u)
		case 25:
			w.restart(f2)
		case 55:
			w.restart(w.node(dcB, flstore.Batcher, 0))
		}
	}
	s := w.converged(w.NowUs() + 3_000_000)
	if n := s.Truth[dcB][dcA]; n != 80 {
		t.Fatalf("B logged %d of A's records, want 80", n)
	}
	if n := w.Reps[f2].(*Filter).Forwarded(dcA); n == 0 {
		t.Fatal("the restarted F2 forwarded none of A's records: it never learned the split")
	}
}

// TestSenderRestartEmpty restarts A's sender while A appends (spec 5.13): the new sender's
// ATable starts from zeros, so it fetches and ships A's records from TOId 1 again until B's
// table reaches it (B's filter drops the copies), and learns its own row from the token and
// the other rows from B's tables. Every record reaches B once.
func TestSenderRestartEmpty(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{})
	sender := w.node(dcA, flstore.Sender, 0)
	for i := range 20 {
		w.appendAt(dcA, 1, "a")
		w.appendAt(dcB, 2, "b")
		w.RunUntil(w.NowUs() + 3000)
		if i == 10 {
			w.restart(sender)
		}
	}
	w.converged(w.NowUs() + 2_000_000)
	w.RunUntil(w.NowUs() + 200_000) // B's table reaches A
	s := w.snapshot()
	if n := s.Truth[dcB][dcA]; n != 20 {
		t.Fatalf("B logged %d of A's records, want 20", n)
	}
	if t0 := s.Tables[sender][dcB][dcA]; t0 != 20 {
		t.Fatalf("the restarted sender's table shows B holding %d of A's records, want 20", t0)
	}
}
