package wren

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/checker"
)

// Keys a and b live on partitions 0 (A) and 1 (B) of two (tcc.PartitionOf).
const stabUs = 5_000

func replica(w *tccscript.World, p int) *Replica { return w.Replica(p).(*Replica) }

func is[T any](e tccscript.Envelope) bool {
	_, ok := e.Msg.(T)
	return ok
}

func not(match func(tccscript.Envelope) bool) func(tccscript.Envelope) bool {
	return func(e tccscript.Envelope) bool { return !match(e) }
}

// deliverAllBut delivers everything in flight, and what that sends, except what hold matches.
func deliverAllBut(w *tccscript.World, hold func(tccscript.Envelope) bool) {
	for w.Deliver(not(hold)) {
	}
}

// gossip lets the next stabilization period run and delivers its messages (and anything else
// in flight).
func gossip(w *tccscript.World) {
	w.Advance(stabUs)
	w.DeliverAll()
}

func wantValues(t *testing.T, h *tccscript.Handle, want ...string) {
	t.Helper()
	if !h.Done() {
		t.Fatalf("%v did not finish", h.ID())
	}
	got := h.Values()
	if len(got) != len(want) {
		t.Fatalf("%v read %q, want %q", h.ID(), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v read %q, want %q", h.ID(), got, want)
		}
	}
	if r := h.ReadResult().Rounds; r != 2 {
		t.Fatalf("%v took %d rounds; every Wren ROT takes 2", h.ID(), r)
	}
}

// checkTCC runs the TCC checker (C1–C5, rounds ≤ 2, and C6 for final) on the world's history.
func checkTCC(t *testing.T, w *tccscript.World, final ...txn.ID) {
	t.Helper()
	if r := checker.Check(w.History(), checker.Options{Model: checker.Causal, MaxRounds: 2, Final: final}); !r.OK {
		t.Fatal(r)
	}
}

func wantLST(t *testing.T, w *tccscript.World, want int64) {
	t.Helper()
	for p := range 2 {
		if got := replica(w, p).LST(); got != want {
			t.Fatalf("LST at partition %d is %d, want %d", p, got, want)
		}
	}
}

// TestWrenW1ReadYourWritesThroughCache is spec §5.3 "Wren W1", with times in milliseconds:
// LST = 5 everywhere and lst_c = 5; c1's WOT {a:=a1} returns ct = 9 (W1 says 10: a WOT at
// exactly the 10ms gossip tick would get ct 10.001, since the tick's announcement moves the
// HLC) before LST ≥ 9. c1's ROT {a} reads the snapshot st = 5, where A has only ⊥, but its
// write cache holds a1 with ct 9 > 5, so it returns a1. Another client c2 gets ⊥ until LST ≥ 9.
// Every ROT takes 2 rounds.
func TestWrenW1ReadYourWritesThroughCache(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	c1, c2 := w.Client(), w.Client()
	gossip(w) // t = 5ms: both partitions announce 5ms
	wantLST(t, w, 5_000)

	h := c1.Read("a")
	w.DeliverAll()
	wantValues(t, h, "")
	lib1 := c1.Lib().(*Client)
	if lib1.LstC() != 5_000 {
		t.Fatalf("lst_c = %d, want 5000", lib1.LstC())
	}

	w.Advance(4_000) // t = 9ms, before the next gossip
	wh := c1.Write(map[string]string{"a": "a1"})
	w.DeliverAll()
	if !wh.Done() || wh.WriteResult().Status != txn.Committed {
		t.Fatalf("WOT: done %v, %+v", wh.Done(), wh.WriteResult())
	}
	if e, ok := lib1.cache["a"]; !ok || e.ct != 9_000 {
		t.Fatalf("write cache %+v, want a1 with ct 9000", lib1.cache)
	}
	wantLST(t, w, 5_000) // the WOT returned before its write is stable

	h = c1.Read("a")
	w.DeliverAll()
	wantValues(t, h, "a1") // from the cache: ct 9000 > st 5000
	h = c2.Read("a")
	w.DeliverAll()
	wantValues(t, h, "")

	gossip(w) // t = 10ms: LST = 10ms ≥ 9ms
	wantLST(t, w, 10_000)
	h = c2.Read("a")
	w.DeliverAll()
	wantValues(t, h, "a1")
	h = c1.Read("a")
	w.DeliverAll()
	wantValues(t, h, "a1") // now from the snapshot
	if len(lib1.cache) != 0 {
		t.Fatalf("cache not pruned once lst_c ≥ ct: %+v", lib1.cache)
	}
	checkTCC(t, w, h.ID())
}

// TestWrenWOTRepliesBeforeParticipantsCommit follows one two-partition WOT message by message
// (spec §3.3 WOT, [RESOLUTION W2]): the coordinator answers the client with ct = max(pt) before
// the other participant has the decision; that participant's pending prepare holds LST below ct,
// so a concurrent ROT returns neither write; once the decision lands, LST moves past ct and a ROT
// returns both.
func TestWrenWOTRepliesBeforeParticipantsCommit(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	c1, c2 := w.Client(), w.Client()
	gossip(w)
	h := c1.Write(map[string]string{"a": "a1", "b": "b1"})
	req := w.InFlight()[0]
	if !is[*CommitReq](req) {
		t.Fatalf("first message %v, want the client's CommitReq", req)
	}
	coord := int(req.To.Node)
	other := 1 - coord
	w.Deliver(is[*CommitReq])
	if replica(w, coord).Pending() != 1 {
		t.Fatal("the coordinator did not prepare its own share")
	}
	w.Deliver(is[*Prepare])
	if replica(w, other).Pending() != 1 {
		t.Fatal("the participant did not prepare")
	}
	w.Deliver(is[*Vote])
	if replica(w, coord).Pending() != 0 {
		t.Fatal("the coordinator did not commit its share on the last vote")
	}
	w.Deliver(func(e tccscript.Envelope) bool { return e.Kind == tccscript.Reply })
	if !h.Done() || h.WriteResult().Status != txn.Committed {
		t.Fatalf("client not answered after the decision: %+v", h.WriteResult())
	}
	if replica(w, other).Pending() != 1 {
		t.Fatal("the participant committed before the decision reached it")
	}
	ct := c1.Lib().(*Client).hwtC

	for range 3 { // stabilization runs, the decision stays in flight
		w.Advance(stabUs)
		deliverAllBut(w, is[*Decision])
		if lst := replica(w, coord).LST(); lst >= ct {
			t.Fatalf("LST %d reached ct %d while a participant is still prepared", lst, ct)
		}
		r := c2.Read("a", "b")
		deliverAllBut(w, is[*Decision])
		wantValues(t, r, "", "")
	}

	w.DeliverAll() // the decision
	if replica(w, other).Pending() != 0 {
		t.Fatal("the participant did not commit on the decision")
	}
	gossip(w)
	if lst := replica(w, other).LST(); lst < ct {
		t.Fatalf("LST %d stayed below ct %d after the decision", lst, ct)
	}
	r := c2.Read("a", "b")
	w.DeliverAll()
	wantValues(t, r, "a1", "b1")
	checkTCC(t, w, r.ID())
}

// TestWrenLostVoteAbortsAndLSTResumes: a participant's votes are lost, so its prepared version
// holds its local stable time, and LST everywhere, for as long as the WOT is undecided; when the
// coordinator's tx_timeout expires it aborts (presumed abort), the participant drops the version
// and LST moves again. The client learns the abort, and its retry of the same id is answered with
// the same decision.
func TestWrenLostVoteAbortsAndLSTResumes(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, protocol.Params{ParamTxTimeout: "1s"})
	c1, c2 := w.Client(), w.Client()
	gossip(w)
	h := c1.Write(map[string]string{"a": "a1", "b": "b1"})
	coord := int(w.InFlight()[0].To.Node)
	other := 1 - coord
	votes := func(e tccscript.Envelope) bool { return is[*Vote](e) && int(e.From.Node) == other }
	deliverAllBut(w, votes)
	w.Drop(votes)
	stuck := replica(w, other).localStable()
	for w.NowUs() < 900_000 {
		w.Advance(stabUs)
		deliverAllBut(w, votes)
		w.Drop(votes)
		if lst := replica(w, coord).LST(); lst > stuck {
			t.Fatalf("t=%dus: LST %d moved past the stuck prepare (%d)", w.NowUs(), lst, stuck)
		}
	}
	if h.Done() {
		t.Fatal("the WOT finished without its participant's vote")
	}
	for !h.Done() && w.NowUs() < 2_000_000 {
		w.Advance(stabUs)
		deliverAllBut(w, votes)
		w.Drop(votes)
	}
	if !h.Done() || h.WriteResult().Status != txn.Aborted {
		t.Fatalf("WOT after the timeout: done %v, %+v; want aborted", h.Done(), h.WriteResult())
	}
	if replica(w, other).Pending() != 0 {
		t.Fatal("the participant kept the aborted prepare")
	}
	gossip(w)
	if lst := replica(w, coord).LST(); lst <= stuck {
		t.Fatalf("LST %d did not resume after the abort", lst)
	}
	r := c2.Read("a", "b")
	w.DeliverAll()
	wantValues(t, r, "", "")
	checkTCC(t, w, r.ID())
}

// TestWrenCollectedVersionsAnswerTooOld: once a1 has been superseded by a visible a2 for longer
// than tx_timeout it is collected, and a read at a snapshot that would need it is refused with
// TooOld and the partition's LST instead of answering ⊥.
func TestWrenCollectedVersionsAnswerTooOld(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, protocol.Params{ParamTxTimeout: "100ms"})
	c1 := w.Client()
	gossip(w)
	c1.Write(map[string]string{"a": "a1"})
	w.DeliverAll()
	gossip(w)
	st1 := replica(w, 0).LST()
	c1.Write(map[string]string{"a": "a2"})
	w.DeliverAll()
	gossip(w)
	a := replica(w, 0)
	if n := len(a.versions["a"]); n != 2 {
		t.Fatalf("%d versions of a before collection, want 2", n)
	}
	w.Advance(300_000)
	w.DeliverAll()
	if n := len(a.versions["a"]); n != 1 {
		t.Fatalf("%d versions of a after collection, want 1", n)
	}
	a.HandleRequest(protocol.Request{Client: 99, Seq: 1, Kind: protocol.Operation, Op: &ReadReq{Tx: txn.NewID(99, 1), St: st1, Keys: []string{"a"}}})
	got := w.InFlight()
	resp, ok := got[len(got)-1].Msg.(*ReadResp)
	if !ok || !resp.TooOld || resp.Lst != a.LST() {
		t.Fatalf("read below the collection floor answered %+v", got[len(got)-1].Msg)
	}
	h := c1.Read("a")
	w.DeliverAll()
	wantValues(t, h, "a2")
	if got := a.VersionOrder()["a"]; len(got) != 2 {
		t.Fatalf("version order %v lost the collected version", got)
	}
	checkTCC(t, w, h.ID())
}

// TestWrenTreeGossip: with gossip=tree each partition sends its local stable time to partition
// 0 only, and partition 0 fans the minimum out: 2(N−1) messages per period instead of N(N−1).
func TestWrenTreeGossip(t *testing.T) {
	const n = 4
	w := tccscript.New(t, New, NewClient, n, protocol.Params{ParamGossip: GossipTree})
	for period := int64(1); period <= 2; period++ {
		w.Advance(stabUs)
		gossips, fanout := 0, 0
		for _, e := range w.InFlight() {
			switch {
			case is[*Gossip](e) && e.To.Node == 0:
				gossips++
			case is[*StableTime](e) && e.From.Node == 0:
				fanout++
			default:
				t.Fatalf("period %d: unexpected %v", period, e)
			}
		}
		if gossips != n-1 || fanout != n-1 {
			t.Fatalf("period %d: %d gossips to the aggregator and %d fan-outs, want %d each", period, gossips, fanout, n-1)
		}
		w.DeliverAll()
		if got := replica(w, 0).LST(); got != period*stabUs {
			t.Fatalf("period %d: aggregator LST %d, want %d", period, got, period*stabUs)
		}
	}
	for p := 1; p < n; p++ { // the second fan-out carried the first period's minimum
		if got := replica(w, p).LST(); got != stabUs {
			t.Fatalf("partition %d LST %d, want %d", p, got, stabUs)
		}
	}
	c := w.Client()
	wh := c.Write(map[string]string{"a": "a1", "b": "b1"})
	w.DeliverAll()
	for range 3 {
		gossip(w)
	}
	h := w.Client().Read("a", "b")
	w.DeliverAll()
	if !wh.Done() {
		t.Fatal("WOT did not finish")
	}
	wantValues(t, h, "a1", "b1")
	checkTCC(t, w, h.ID())
}
