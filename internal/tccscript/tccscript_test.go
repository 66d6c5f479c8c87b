package tccscript

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc/ec"
	"github.com/meridian-kv/meridian/verify/checker"
)

// The tests run EC, the simplest protocol of the family (ec imports no tccscript): a client
// sends one request per partition and resends after tx_timeout. Keys a and b live on
// partitions 0 and 1 of two.

func ecWorld(t *testing.T, timeout string) *World {
	return New(t, ec.New, ec.NewClient, 2, protocol.Params{ec.ParamTxTimeout: timeout})
}

type link struct{ from, to Endpoint }

// TestDeliverRandomKeepsLinksFIFO: three clients' WOTs, each resent twice, put three requests
// on each of six links. DeliverRandom delivers only heads, so every link delivers in sending
// order, until nothing is left; and the seed chooses the link.
func TestDeliverRandomKeepsLinksFIFO(t *testing.T) {
	firsts := map[link]bool{}
	for seed := range uint64(10) {
		w := ecWorld(t, "1ms")
		for range 3 {
			w.Client().Write(map[string]string{"a": "1", "b": "1"})
		}
		w.Advance(1_000)
		w.Advance(1_000)
		if n := len(w.InFlight()); n != 18 {
			t.Fatalf("%d requests in flight, want 3 clients × 2 partitions × 3 sends", n)
		}
		r := rand.New(rand.NewPCG(seed, 1))
		last := map[link]uint64{}
		for i := 0; ; i++ {
			heads := w.Heads()
			e, ok := w.DeliverRandom(r)
			if !ok {
				break
			}
			if !slices.ContainsFunc(heads, func(h Envelope) bool { return h.seq == e.seq }) {
				t.Fatalf("delivered %v, not the head of its link (heads %v)", e, heads)
			}
			l := link{e.From, e.To}
			if e.seq <= last[l] {
				t.Fatalf("link %v delivered %d after %d", l, e.seq, last[l])
			}
			last[l] = e.seq
			if i == 0 {
				firsts[l] = true
			}
		}
		if len(w.InFlight()) != 0 {
			t.Fatalf("DeliverRandom stopped with %v in flight", w.InFlight())
		}
	}
	if len(firsts) < 2 {
		t.Fatalf("10 seeds all delivered first on %v", firsts)
	}
	// Nothing in flight: no draw.
	r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	if _, ok := ecWorld(t, "1ms").DeliverRandom(r1); ok || r1.Uint64() != r2.Uint64() {
		t.Fatal("DeliverRandom on an idle world delivered or drew")
	}
}

// TestDropRandom loses one item among those match accepts, and draws nothing when none does.
func TestDropRandom(t *testing.T) {
	w := ecWorld(t, "1s")
	for range 3 {
		w.Client().Write(map[string]string{"a": "1", "b": "1"})
	}
	r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	toA := func(e Envelope) bool { return e.Between("c1", "p0") || e.Between("c2", "p0") }
	if !w.DropRandom(r1, toA) || len(w.InFlight()) != 5 {
		t.Fatalf("after one drop: %v", w.InFlight())
	}
	r2.IntN(2)
	if !w.DropRandom(r1, toA) || len(w.InFlight()) != 4 || slices.ContainsFunc(w.InFlight(), toA) {
		t.Fatalf("after two drops to p0 of c1 and c2: %v", w.InFlight())
	}
	r2.Uint64() // the second drop had one candidate: its IntN(1) draws one value too
	if w.DropRandom(r1, toA) || r1.Uint64() != r2.Uint64() {
		t.Fatal("DropRandom with nothing to drop dropped or drew")
	}
	for n := 3; n >= 0; n-- {
		if !w.DropRandom(r1, nil) || len(w.InFlight()) != n {
			t.Fatalf("DropRandom(nil) left %v", w.InFlight())
		}
	}
	if w.DropRandom(r1, nil) {
		t.Fatal("dropped from an empty network")
	}
}

// TestHealResolvesLosses: a WOT whose requests are lost finishes once Heal has advanced the
// clock past the client's 10ms timeout, and not before.
func TestHealResolvesLosses(t *testing.T) {
	w := ecWorld(t, "10ms")
	h := w.Client().Write(map[string]string{"a": "1", "b": "1"})
	if n := w.Drop(func(Envelope) bool { return true }); n != 2 {
		t.Fatalf("dropped %d requests, want 2", n)
	}
	w.Heal(1, 5_000)
	if h.Done() || w.NowUs() != 5_000 {
		t.Fatalf("done %v at %dµs before the timeout", h.Done(), w.NowUs())
	}
	w.Heal(2, 5_000)
	if !h.Done() || h.WriteResult().Status != txn.Committed || len(w.InFlight()) != 0 {
		t.Fatalf("after the timeout: done %v, %+v, in flight %v", h.Done(), h.WriteResult(), w.InFlight())
	}
}

// TestInterleavingDrawsLikeASwitch: an Interleaving's steps are one IntN of the weights' sum,
// the kinds in order (start, Steps, deliver, drop, advance), so a hand-written switch over the
// same thresholds makes the same choices with the same seed.
func TestInterleavingDrawsLikeASwitch(t *testing.T) {
	w := ecWorld(t, "1s")
	var got []string
	it := &Interleaving{W: w, Rand: rand.New(rand.NewPCG(5, 6)),
		Steps: []Step{{1, func() { got = append(got, "a") }}, {3, func() { got = append(got, "b") }}},
		// Nothing is in flight: deliver and drop steps draw nothing more.
		DeliverWeight: 2, DropWeight: 1, AdvanceWeight: 2, AdvanceUs: 100}
	it.Run(500)
	var want []string
	var nowUs int64
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		switch x := r.IntN(9); {
		case x < 1:
			want = append(want, "a")
		case x < 4:
			want = append(want, "b")
		case x < 7:
		default:
			nowUs += r.Int64N(100)
		}
	}
	if !slices.Equal(got, want) || w.NowUs() != nowUs {
		t.Fatalf("Interleaving chose %v and reached %dµs, the switch %v and %dµs", got, w.NowUs(), want, nowUs)
	}
	if n := slices.Index(got, "b"); n < 0 || !slices.Contains(got, "a") {
		t.Fatalf("500 steps never chose both custom steps: %v", got)
	}
}

// TestInterleavingRunsClients: start steps start a transaction only at an idle client, Finished
// sees each transaction once, and after Heal every one finished; the EC history is then judged
// by the checker, which must find no C1 (every read is of a committed write).
func TestInterleavingRunsClients(t *testing.T) {
	w := ecWorld(t, "5ms")
	rng := rand.New(rand.NewPCG(7, 8))
	started, seen := 0, map[*Handle]int{}
	var it *Interleaving
	it = &Interleaving{W: w, Rand: rng, Clients: []*Client{w.Client(), w.Client(), w.Client()},
		StartWeight: 3, Start: func(c *Client) *Handle {
			if i := slices.Index(it.Clients, c); it.Busy(i) {
				t.Fatalf("started at c%d while its %v runs", c.ID(), it.Handles[i].ID())
			}
			started++
			if rng.IntN(2) == 0 {
				return c.Read("a", "b")
			}
			return c.Write(map[string]string{"a": fmt.Sprint(started), "b": fmt.Sprint(started)})
		},
		DeliverWeight: 5, DropWeight: 1, AdvanceWeight: 1, AdvanceUs: 3_000,
		Finished: func(h *Handle) { seen[h]++ }}
	it.Run(400)
	if err := it.Heal(10, 5_000); err != nil {
		t.Fatal(err)
	}
	if started < 20 || len(seen) != started || len(w.History().Txns) != started {
		t.Fatalf("%d started, %d seen finished, %d in the history", started, len(seen), len(w.History().Txns))
	}
	for h, n := range seen {
		if n != 1 {
			t.Fatalf("Finished saw %v %d times", h.ID(), n)
		}
	}
	if rep := w.CheckTCC(1, w.FinalRead("a", "b")); rep.Counts[checker.TCCDirtyRead] != 0 || rep.Counts[checker.TCCRounds] != 0 {
		t.Fatalf("checker: %v", rep)
	}
}

// TestWholeGroupCatchesECFracturedRead is EC X1 through the oracle: a group WOT reaches A before
// B, and a ROT in between mixes the WOT with ⊥. The oracle and the checker both flag it; at
// quiescence the group settles on the WOT, and a final ROT reads it whole.
func TestWholeGroupCatchesECFracturedRead(t *testing.T) {
	w := ecWorld(t, "1s")
	c1, c2 := w.Client(), w.Client()
	g := &WholeGroup{Keys: []string{"a", "b"}}
	wot := g.Write(c1)
	w.Deliver(func(e Envelope) bool { return e.Between("c1", "p0") })
	rot := c2.Read("b", "a")
	for w.Deliver(func(e Envelope) bool { return e.From.Client == c2.ID() || e.To.Client == c2.ID() }) {
	}
	if err := g.Fractured(rot); err == nil || !rot.Done() {
		t.Fatalf("ROT (%q) between the WOT's arrivals: done %v, no fracture found", rot.Values(), rot.Done())
	}
	w.DeliverAll()
	if err := g.Fractured(wot); err != nil {
		t.Fatalf("a WOT is not a read: %v", err)
	}
	if _, err := g.Settled(w, rot); err == nil {
		t.Fatal("Settled accepted the fractured ROT as the final one")
	}
	final := w.FinalRead("a", "b")
	if order, err := g.Settled(w, final); err != nil || !slices.Equal(order, []txn.ID{wot.ID()}) {
		t.Fatalf("Settled: %v, %v; want the WOT alone", order, err)
	}
	if rep := w.CheckTCC(1, final); rep.OK || rep.Counts[checker.TCCSnapshot] != 1 {
		t.Fatalf("checker: %v; want the one C2 anomaly", rep)
	}
}
