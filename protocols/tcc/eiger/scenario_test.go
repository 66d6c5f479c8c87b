package eiger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// keyOn returns the first of name, name.1, name.2, … that lives on partition p of n, so that
// scenarios can say "key a on partition A".
func keyOn(name string, p, n int) string {
	for i := 0; ; i++ {
		k := name
		if i > 0 {
			k = fmt.Sprintf("%s.%d", name, i)
		}
		if tcc.PartitionOf(k, n) == p {
			return k
		}
	}
}

func replica(w *tccscript.World, p int) *Replica { return w.Replica(p).(*Replica) }

// deliver delivers the oldest in-flight M from → to (endpoints as "p0", "c1") and returns it.
func deliver[M protocol.Message](t *testing.T, w *tccscript.World, from, to string) M {
	t.Helper()
	var got M
	if !w.Deliver(func(e tccscript.Envelope) bool {
		m, ok := e.Msg.(M)
		if ok && e.Between(from, to) {
			got = m
		}
		return ok && e.Between(from, to)
	}) {
		t.Fatalf("no %T in flight %s→%s; in flight: %v", got, from, to, w.InFlight())
	}
	return got
}

// peek returns the oldest in-flight M from → to without delivering it.
func peek[M protocol.Message](t *testing.T, w *tccscript.World, from, to string) M {
	t.Helper()
	for _, e := range w.InFlight() {
		if m, ok := e.Msg.(M); ok && e.Between(from, to) {
			return m
		}
	}
	var none M
	t.Fatalf("no %T in flight %s→%s; in flight: %v", none, from, to, w.InFlight())
	return none
}

func wantRead(t *testing.T, h *tccscript.Handle, rounds, checks int, want ...string) {
	t.Helper()
	if !h.Done() {
		t.Fatalf("%v did not finish", h.ID())
	}
	res := h.ReadResult()
	if res.Err != nil || !slices.Equal(h.Values(), want) || res.Rounds != rounds || res.CommitChecks != checks {
		t.Fatalf("%v read %q in %d rounds with %d commit checks (err %v), want %q in %d rounds with %d",
			h.ID(), h.Values(), res.Rounds, res.CommitChecks, res.Err, want, rounds, checks)
	}
}

func wantCommitted(t *testing.T, h *tccscript.Handle) {
	t.Helper()
	if !h.Done() || h.WriteResult().Status != txn.Committed {
		t.Fatalf("%v: done %v, result %+v; want committed", h.ID(), h.Done(), h.WriteResult())
	}
}

// constSource is a PRNG source that always draws the same number.
type constSource uint64

func (s constSource) Uint64() uint64 { return uint64(s) }

// writeVia starts a WOT of kv by a new client made to choose the participant on node coord as
// the coordinator (white-box: its PRNG is replaced by one whose draw picks coord).
func writeVia(t *testing.T, w *tccscript.World, kv map[string]string, coord protocol.NodeID) (*tccscript.Client, *tccscript.Handle) {
	t.Helper()
	c := w.Client()
	lib := c.Lib().(*Client)
	var keys []string
	for k := range kv {
		keys = append(keys, k)
	}
	parts, _ := lib.byPartition(keys)
	i := slices.Index(parts, int(coord)) // node ids are partitions in one datacenter
	if i < 0 || rand.New(constSource(i)).IntN(len(parts)) != i {
		t.Fatalf("cannot make a WOT over partitions %v choose %d", parts, coord)
	}
	lib.rand = rand.New(constSource(i))
	return c, c.Write(kv)
}

// TestEigerE1CommitCheck is spec §5.3 "Eiger E1", with the spec's times (partitions' clocks are
// set white-box before each step so that the Lamport times come out as written). Partitions A,
// B, C hold a, b, c. b1 committed at 3, a1 at 15. Round 1 of c2's ROT {a,b} returns a1 [15,20]
// and b1 [3,10]; max EVT 15 > min LVT 10, so EffT = 15 and round 2 is read_by_time(b, 15) at B.
// Before it arrives, T2 = {b:=b2, c:=c2} coordinated by C prepares at B at 12 and at C at 14.
// B finds b2 pending, prepared at 12 ≤ 15, and sends a commit check to C:
//
//	(a) C already committed T2 at 14 (B has not yet received the commit): the ROT returns b2 in
//	    3 rounds;
//	(b) C is undecided: B's vote reached it, but the client's request to C is late. C promises a
//	    commit time above 15 and the ROT returns b1 in 3 rounds; when the request arrives, C
//	    prepares at 14 and commits T2 at 16.
//
// Links are FIFO, so in (a) C's commit reaches B before the answer to the check (B installs b2
// and answers the read at once), and in (b) B's vote reaches C before the check. The spec's
// times assume that reads carry the client's clock (param read_clock, reading=spec); under
// reading=thesis (no client clock, partition-wide EVT) the same steps give the same answers,
// and only B's clock after the read by time differs (16, not 21).
func TestEigerE1CommitCheck(t *testing.T) {
	for _, reading := range []string{ReadingSpec, ReadingThesis} {
		for _, decided := range []bool{true, false} {
			t.Run(fmt.Sprintf("reading=%s/decided=%v", reading, decided), func(t *testing.T) { e1(t, reading == ReadingSpec, decided) })
		}
	}
}

// e1 runs TestEigerE1CommitCheck under reading=spec if readClock, else under reading=thesis.
func e1(t *testing.T, readClock, decided bool) {
	reading := map[bool]string{true: ReadingSpec, false: ReadingThesis}[readClock]
	w := tccscript.New(t, New, NewClient, 3, protocol.Params{ParamReading: reading})
	a, b, c := keyOn("a", 0, 3), keyOn("b", 1, 3), keyOn("c", 2, 3)
	A, B, C := replica(w, 0), replica(w, 1), replica(w, 2)
	c1, c2 := w.Client(), w.Client()

	B.clock = 2
	wantCommitted(t, deliverAllOf(w, c1.Write(map[string]string{b: "b1"})))
	A.clock = 14
	wantCommitted(t, deliverAllOf(w, c1.Write(map[string]string{a: "a1"})))
	if ct := A.decided[txn.NewID(c1.ID(), 2)].ct; ct != 15 {
		t.Fatalf("a1 committed at %d, want 15", ct)
	}

	A.clock, B.clock = 19, 9 // a read advances the clock past the request's
	rot := c2.Read(a, b)
	deliver[*Read](t, w, "c2", "p0")
	deliver[*Read](t, w, "c2", "p1")
	ra, rb := peek[*ReadReply](t, w, "p0", "c2").Reads[0], peek[*ReadReply](t, w, "p1", "c2").Reads[0]
	if string(ra.Value) != "a1" || ra.EVT != 15 || ra.LVT != 20 || string(rb.Value) != "b1" || rb.EVT != 3 || rb.LVT != 10 {
		t.Fatalf("round 1 returned %+v and %+v, want a1 [15,20] and b1 [3,10]", ra, rb)
	}
	deliver[*ReadReply](t, w, "p0", "c2")
	deliver[*ReadReply](t, w, "p1", "c2")
	rbt := peek[*ReadByTime](t, w, "c2", "p1")
	if rbt.EffTime != 15 || !slices.Equal(rbt.Keys, []string{b}) || len(w.InFlight()) != 1 {
		t.Fatalf("round 2 is %+v (in flight: %v), want read_by_time(b, 15) at B only", rbt, w.InFlight())
	}

	c3, t2 := writeVia(t, w, map[string]string{b: "b2", c: "c2"}, 2)
	w3 := fmt.Sprintf("c%d", c3.ID())
	B.clock = 11
	deliver[*WriteReq](t, w, w3, "p1")
	if v := peek[*Vote](t, w, "p1", "p2"); v.PrepareTime != 12 {
		t.Fatalf("b2 prepared at %d, want 12", v.PrepareTime)
	}
	deliver[*Vote](t, w, "p1", "p2")
	if decided {
		C.clock = 13
		deliver[*WriteReq](t, w, w3, "p2")
		if c := peek[*Commit](t, w, "p2", "p1"); c.CommitTime != 14 {
			t.Fatalf("T2 committed at %d, want 14", c.CommitTime)
		}
	}

	deliver[*ReadByTime](t, w, "c2", "p1")
	if chk := peek[*Check](t, w, "p1", "p2"); chk.Txn != t2.ID() || chk.EffTime != 15 {
		t.Fatalf("B sent %+v, want a commit check of %v at 15", chk, t2.ID())
	}
	if want := map[bool]int64{true: 21, false: 16}[readClock]; B.clock != want {
		t.Fatalf("B's clock is %d after read_by_time(15), want past max(12, EffT 15, the client's 20 if reads carry it) = %d", B.clock, want)
	}
	deliver[*Check](t, w, "p1", "p2")
	if decided {
		// The link C→B is FIFO: the commit, sent before the check's answer, arrives first. B
		// installs b2 at 14 and answers the read; the answer to the check confirms it.
		deliver[*Commit](t, w, "p2", "p1")
		if reply := deliver[*CheckReply](t, w, "p2", "p1"); reply.Status != CheckCommitted || reply.CommitTime != 14 {
			t.Fatalf("C answered %+v, want committed at 14", reply)
		}
		deliver[*ReadReply](t, w, "p1", "c2")
		wantRead(t, rot, 3, 1, "a1", "b2")
	} else {
		if reply := deliver[*CheckReply](t, w, "p2", "p1"); reply.Status != CheckUndecided || reply.Floor != 15 {
			t.Fatalf("C answered %+v, want undecided, commit time above 15", reply)
		}
		deliver[*ReadReply](t, w, "p1", "c2")
		wantRead(t, rot, 3, 1, "a1", "b1")
		C.clock = 13
		deliver[*WriteReq](t, w, w3, "p2")
		if c := peek[*Commit](t, w, "p2", "p1"); c.CommitTime != 16 {
			t.Fatalf("T2 committed at %d after the promise, want 16", c.CommitTime)
		}
	}
	w.DeliverAll()
	wantCommitted(t, t2)
	// Without the client's clock, in (a) B's clock at its latest commit (16, raised by the read
	// by time) is above C's clock (15): the thesis's EVT makes the final ROT take a second round.
	rounds := 1
	if !readClock && decided {
		rounds = 2
	}
	wantRead(t, deliverAllOf(w, c2.Read(a, b, c)), rounds, 0, "a1", "b2", "c2")
}

// deliverAllOf delivers everything in flight and returns h.
func deliverAllOf(w *tccscript.World, h *tccscript.Handle) *tccscript.Handle {
	w.DeliverAll()
	return h
}

// TestEigerTwoPartitionWOT follows one WOT {a:=a1, b:=b1} over partitions A (coordinator) and B
// message by message: the client sends each participant its writes; B prepares at its clock and
// votes; A commits at the largest vote, answers the client (after its local commit, E2) and
// sends Commit; B installs and acknowledges. 7 messages in all (2 requests, 2 answers, vote,
// commit, acknowledgement), then both partitions hold the versions at commit time 2 and A forgets
// the acknowledgement state. A ROT then finds both in one round.
func TestEigerTwoPartitionWOT(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	a, b := keyOn("a", 0, 2), keyOn("b", 1, 2)
	A, B := replica(w, 0), replica(w, 1)
	_, wot := writeVia(t, w, map[string]string{a: "a1", b: "b1"}, 0)
	cl := fmt.Sprintf("c%d", wot.ID().Client())
	B.clock = 1

	req := deliver[*WriteReq](t, w, cl, "p1")
	if req.Participants != nil || req.Deps != nil || req.Coordinator != 0 {
		t.Fatalf("B's request %+v carries the coordinator's fields", req)
	}
	if r := deliver[*WriteReply](t, w, "p1", cl); r.Status != Prepared {
		t.Fatalf("B answered %+v, want prepared", r)
	}
	if got := B.pending[wot.ID()]; got == nil || got.pt != 2 || len(B.keys[b].versions) != 0 {
		t.Fatalf("B's pending entry %+v, want b1 pending at 2 and invisible", got)
	}
	vote := deliver[*Vote](t, w, "p1", "p0") // early: A buffers it
	if vote.PrepareTime != 2 || A.earlyVotes[wot.ID()][1] != 2 {
		t.Fatalf("vote %+v, A's early votes %v", vote, A.earlyVotes)
	}
	creq := deliver[*WriteReq](t, w, cl, "p0")
	if !slices.Equal(creq.Participants, []protocol.NodeID{0, 1}) {
		t.Fatalf("coordinator request lists participants %v", creq.Participants)
	}
	if c := peek[*Commit](t, w, "p0", "p1"); c.CommitTime != 2 {
		t.Fatalf("A commits at %d, want max(1, 2) = 2", c.CommitTime)
	}
	if r := deliver[*WriteReply](t, w, "p0", cl); r.Status != Committed || r.CommitTime != 2 {
		t.Fatalf("A answered %+v, want committed at 2", r)
	}
	wantCommitted(t, wot)
	if A.unacked[wot.ID()] == nil || len(A.keys[a].versions) != 1 {
		t.Fatal("A must have installed a1 and wait for B's acknowledgement")
	}
	deliver[*Commit](t, w, "p0", "p1")
	deliver[*CommitAck](t, w, "p1", "p0")
	if n := len(w.InFlight()); n != 0 {
		t.Fatalf("%d messages left in flight: %v", n, w.InFlight())
	}
	for p, k := range map[int]string{0: a, 1: b} {
		r := replica(w, p)
		v := r.keys[k].versions
		if len(v) != 1 || v[0].ct != 2 || v[0].writer != wot.ID() || len(r.pending) != 0 || r.clock != 2 {
			t.Fatalf("partition %d: versions %+v, pending %v, clock %d", p, v, r.pending, r.clock)
		}
		if got := w.Store(p).Get(k); got.Writer != wot.ID() {
			t.Fatalf("partition %d's store holds %v", p, got)
		}
	}
	if len(A.unacked) != 0 {
		t.Fatalf("A still waits for acknowledgements: %v", A.unacked)
	}
	wantRead(t, deliverAllOf(w, w.Client().Read(a, b)), 1, 0, "a1", "b1")
}

// TestEigerConsistentFirstRound: when every interval of round 1 contains the largest EVT the
// ROT takes one round and touches nothing else, even right after the write.
func TestEigerConsistentFirstRound(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	a, b := keyOn("a", 0, 2), keyOn("b", 1, 2)
	c1, c2 := w.Client(), w.Client()
	wantRead(t, deliverAllOf(w, c2.Read(a, b)), 1, 0, "", "")
	wantCommitted(t, deliverAllOf(w, c1.Write(map[string]string{a: "a1", b: "b1"})))
	rot := c2.Read(b, a, b)
	if n := len(w.InFlight()); n != 2 {
		t.Fatalf("round 1 sent %d requests, want 2", n)
	}
	w.DeliverAll()
	wantRead(t, rot, 1, 0, "b1", "a1", "b1")
	if d := c2.Lib().(*Client).Deps(); d != 2 {
		t.Fatalf("the reader's dependency list has %d entries, want 2 (a1, b1)", d)
	}
}

// TestEigerReadYourPendingWrite: the coordinator answers the client before the other
// participant commits (E2), and here the commit to B is lost, so the client's next ROT finds its
// own write pending at B: B answers empty, the ROT reads b by time at B's clock (≥ the client's,
// ≥ the commit time), B checks with the coordinator, installs b1 and returns it: read-your-writes
// in 3 rounds. The coordinator's retransmission later finds the commit done.
func TestEigerReadYourPendingWrite(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	a, b := keyOn("a", 0, 2), keyOn("b", 1, 2)
	A := replica(w, 0)
	c, wot := writeVia(t, w, map[string]string{a: "a1", b: "b1"}, 0)
	cl := fmt.Sprintf("c%d", c.ID())
	for w.Deliver(func(e tccscript.Envelope) bool { _, ok := e.Msg.(*Commit); return !ok }) {
	}
	if n := w.Drop(func(e tccscript.Envelope) bool { _, ok := e.Msg.(*Commit); return ok }); n != 1 {
		t.Fatalf("%d commits dropped, want 1", n)
	}
	wantCommitted(t, wot)
	if dep := c.Lib().(*Client).deps; !slices.Equal(dep, []Dep{{Key: a, Version: wot.ID()}}) {
		t.Fatalf("the writer's dependency list is %v, want only its write", dep)
	}
	rot := c.Read(b)
	deliver[*Read](t, w, cl, "p1")
	if r := peek[*ReadReply](t, w, "p1", cl).Reads[0]; !r.Pending {
		t.Fatalf("B answered %+v for a key with a pending write, want an empty answer", r)
	}
	w.DeliverAll()
	wantRead(t, rot, 3, 1, "b1")
	if len(A.unacked) != 0 {
		t.Fatalf("A still waits for B's acknowledgement: %v", A.unacked)
	}
	w.Advance(100_000)
	if n := len(w.InFlight()); n != 0 {
		t.Fatalf("%d messages after the retransmission period: %v", n, w.InFlight())
	}
}

// TestEigerCoordinatorTimeout: a WOT whose participant never receives its request (the client
// crashed after sending to the coordinator) is aborted by the coordinator after tx_timeout; a
// late request to the participant is refused. A participant whose coordinator never received
// the request asks after tx_timeout, and the coordinator presumes the abort.
func TestEigerCoordinatorTimeout(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, protocol.Params{ParamTxTimeout: "1s"})
	a, b := keyOn("a", 0, 2), keyOn("b", 1, 2)
	A, B := replica(w, 0), replica(w, 1)

	c, wot := writeVia(t, w, map[string]string{a: "a1", b: "b1"}, 0)
	cl := fmt.Sprintf("c%d", c.ID())
	deliver[*WriteReq](t, w, cl, "p0")
	w.Advance(1_100_000) // the coordinator gives up (and the client resends)
	if d, ok := A.decided[wot.ID()]; !ok || d.committed {
		t.Fatalf("A's decision %+v, %v: want aborted", d, ok)
	}
	w.DeliverAll()
	if !wot.Done() || wot.WriteResult().Status != txn.Aborted {
		t.Fatalf("WOT result %+v, want aborted", wot.WriteResult())
	}
	if len(B.pending) != 0 || B.keys[b] != nil && len(B.keys[b].versions) != 0 || B.decided[wot.ID()].committed {
		t.Fatalf("B prepared or installed an aborted WOT: pending %v, key %+v", B.pending, B.keys[b])
	}

	c2, wot2 := writeVia(t, w, map[string]string{a: "a2", b: "b2"}, 0)
	w.Drop(func(e tccscript.Envelope) bool { return e.Between(fmt.Sprintf("c%d", c2.ID()), "p0") })
	deliver[*WriteReq](t, w, fmt.Sprintf("c%d", c2.ID()), "p1")
	w.Drop(func(e tccscript.Envelope) bool { _, ok := e.Msg.(*Vote); return ok }) // lost
	w.DeliverAll()
	w.Advance(1_100_000)                                                  // B asks; the client resends to both
	w.Drop(func(e tccscript.Envelope) bool { return e.From.Client != 0 }) // the client crashed
	deliver[*Check](t, w, "p1", "p0")
	if r := deliver[*CheckReply](t, w, "p0", "p1"); r.Status != CheckAborted {
		t.Fatalf("A answered %+v for a WOT it never received, want aborted", r)
	}
	if len(B.pending) != 0 || len(B.keys[b].pending) != 0 || wot2.Done() {
		t.Fatalf("B still holds %v pending", B.pending)
	}
	wantRead(t, deliverAllOf(w, w.Client().Read(a, b)), 1, 0, "", "")
}

// TestEigerPartitionEVT contrasts the two EVT readings on one ROT {a', b} of never-written keys
// after a1 committed at A at 10 while B's clock is 3. Per-version intervals (the default): a'
// and b are ⊥ valid from 0, so one round. With partition_evt (the thesis's reading) A reports
// its latest commit, 10, as a”s EVT, above B's LVT 4, so b is read again by time at 10: two
// rounds, the same values.
func TestEigerPartitionEVT(t *testing.T) {
	for _, partitionEVT := range []bool{false, true} {
		w := tccscript.New(t, New, NewClient, 2, protocol.Params{ParamPartitionEVT: fmt.Sprint(partitionEVT)})
		a, a2, b := keyOn("a", 0, 2), keyOn("a'", 0, 2), keyOn("b", 1, 2)
		replica(w, 0).clock = 9
		wantCommitted(t, deliverAllOf(w, w.Client().Write(map[string]string{a: "a1"})))
		replica(w, 1).clock = 3
		rounds := 1
		if partitionEVT {
			rounds = 2
		}
		wantRead(t, deliverAllOf(w, w.Client().Read(a2, b)), rounds, 0, "", "")
	}
}

// TestEigerGarbageCollection is spec S13 for Eiger ([RESOLUTION G-GC]) with tx_timeout = 1s: a1
// is superseded by a2 at t=0. A read by time at a1's commit time still finds a1 at 0.9s (not
// superseded for a whole timeout yet), which also counts as an access; at 2s, superseded and
// unread for longer than the timeout, a1's value is gone and such a read asks the client to
// retry. a2, the newest, stays, and the version order keeps both.
func TestEigerGarbageCollection(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 1, protocol.Params{ParamTxTimeout: "1s", ParamGCInterval: "100ms"})
	A := replica(w, 0)
	c := w.Client()
	a1, a2 := deliverAllOf(w, c.Write(map[string]string{"a": "a1"})), deliverAllOf(w, c.Write(map[string]string{"a": "a2"}))
	ct1 := A.decided[a1.ID()].ct
	readAt := func() *ReadReply {
		A.HandleRequest(protocol.Request{Client: 99, Seq: 1, Kind: protocol.Operation, Op: &ReadByTime{Keys: []string{"a"}, EffTime: ct1}})
		m := peek[*ReadReply](t, w, "p0", "c99")
		w.Drop(func(e tccscript.Envelope) bool { return e.Msg == protocol.Message(m) })
		return m
	}
	w.Advance(900_000)
	if m := readAt(); m.Retry || string(m.Reads[0].Value) != "a1" {
		t.Fatalf("at 0.9s a read at a1's commit time got %+v, want a1", m)
	}
	w.Advance(1_100_000)
	if m := readAt(); !m.Retry {
		t.Fatalf("at 2s a read at a1's commit time got %+v, want a retry (a1 collected)", m)
	}
	wantRead(t, deliverAllOf(w, c.Read("a")), 1, 0, "a2")
	if got := A.VersionOrder()["a"]; !slices.Equal(got, []txn.ID{a1.ID(), a2.ID()}) {
		t.Fatalf("version order %v, want [%v %v]", got, a1.ID(), a2.ID())
	}
}

// TestEigerRefusesMalformed: requests a partition cannot serve get an error answer, and
// malformed peer messages (nil, unknown senders, times that could overflow the clock, a commit
// from a node that does not coordinate) are ignored without changing anything.
func TestEigerRefusesMalformed(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	A := replica(w, 0)
	a, b := keyOn("a", 0, 2), keyOn("b", 1, 2)
	for i, op := range []protocol.Message{
		nil, (*Read)(nil), &Read{Keys: []string{b}}, &Read{Keys: []string{a}, Clock: maxTime + 1},
		&ReadByTime{Keys: []string{a}, EffTime: -1}, &Vote{},
		&WriteReq{Txn: 1, Coordinator: 0, Writes: []txn.Write{{Key: a}}},                                        // no participants
		&WriteReq{Txn: 1, Coordinator: 0, Participants: []protocol.NodeID{0, 0}, Writes: []txn.Write{{Key: a}}}, // twice
		&WriteReq{Txn: 1, Coordinator: 1, Participants: []protocol.NodeID{0, 1}, Writes: []txn.Write{{Key: a}}}, // not ours to list
		&WriteReq{Txn: 1, Coordinator: 7, Writes: []txn.Write{{Key: a}}},
		&WriteReq{Txn: 1, Coordinator: 1, Writes: []txn.Write{{Key: a}, {Key: a}}},
		&WriteReq{Txn: 1, Coordinator: 1},
	} {
		A.HandleRequest(protocol.Request{Client: 99, Seq: uint64(i), Kind: protocol.Operation, Op: op})
	}
	A.HandleRequest(protocol.Request{Client: 99, Seq: 100, Kind: protocol.Get, Key: a})
	in := w.InFlight()
	if len(in) != 13 {
		t.Fatalf("%d answers to 13 malformed requests: %v", len(in), in)
	}
	for _, e := range in {
		if e.Kind != tccscript.Reply || e.Msg != nil {
			t.Fatalf("answer %v is not an error", e)
		}
	}
	w.Drop(func(tccscript.Envelope) bool { return true })
	for _, m := range []protocol.Message{
		(*Vote)(nil), (*Commit)(nil), (*CommitAck)(nil), (*Abort)(nil), (*Check)(nil), (*CheckReply)(nil),
		&Vote{Txn: 5, PrepareTime: maxTime + 1}, &Commit{Txn: 5, CommitTime: -1}, &Check{Txn: 5, EffTime: maxTime + 1},
		&CheckReply{Txn: 5, Status: CheckCommitted, CommitTime: maxTime + 1}, &Read{},
	} {
		A.HandleMessage(1, m)
		A.HandleMessage(42, &Commit{Txn: 5, CommitTime: 3})
	}
	c, wot := writeVia(t, w, map[string]string{a: "a1", b: "b1"}, 1)
	deliver[*WriteReq](t, w, fmt.Sprintf("c%d", c.ID()), "p0")
	A.HandleMessage(1, &Commit{Txn: wot.ID() + 1, CommitTime: 9}) // not a transaction A holds
	if len(A.keys[a].versions) != 0 || len(A.earlyVotes) != 0 || len(A.decided) != 0 || A.clock != 1 {
		t.Fatalf("malformed messages changed A: versions %v, early votes %v, decided %v, clock %d",
			A.keys[a].versions, A.earlyVotes, A.decided, A.clock)
	}
}
