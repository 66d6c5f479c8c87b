package ec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/checker"
)

// Keys a and b live on partitions 0 (A) and 1 (B) of two (tcc.PartitionOf).

func involves(c *tccscript.Client) func(tccscript.Envelope) bool {
	return func(e tccscript.Envelope) bool { return e.From.Client == c.ID() || e.To.Client == c.ID() }
}

// TestECX1FracturedRead is spec §5.3 "EC X1", the negative control: the WOT {a:=a1, b:=b1}
// reaches A before B, and a ROT in between returns (a1, ⊥). The TCC checker flags it (C2: the
// ROT read a1, so the WOT is in its past, and it wrote b).
func TestECX1FracturedRead(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	c1, c2 := w.Client(), w.Client()
	wot := c1.Write(map[string]string{"a": "a1", "b": "b1"})
	w.Deliver(func(e tccscript.Envelope) bool { return e.Between("c1", "p0") })
	rot := c2.Read("a", "b")
	for w.Deliver(involves(c2)) {
	}
	if !rot.Done() || fmt.Sprint(rot.Values()) != "[a1 ]" || rot.ReadResult().Rounds != 1 {
		t.Fatalf("ROT between the WOT's arrivals: done %v, %q in %d rounds; want (a1, ⊥) in 1", rot.Done(), rot.Values(), rot.ReadResult().Rounds)
	}
	if rd := rot.ReadResult().Reads; rd[0].Version != wot.ID() || rd[1].Version != txn.None {
		t.Fatalf("ROT versions %+v, want (%v, ⊥)", rd, wot.ID())
	}
	w.DeliverAll()
	if !wot.Done() || wot.WriteResult().Status != txn.Committed {
		t.Fatalf("WOT: done %v, %+v", wot.Done(), wot.WriteResult())
	}
	h := w.History()
	if len(h.Txns) != 2 {
		t.Fatalf("history has %d transactions, want the ROT and the WOT", len(h.Txns))
	}
	r := checker.Check(h, checker.Options{Model: checker.Causal, MaxRounds: 1})
	if r.OK || r.Counts[checker.TCCSnapshot] != 1 || len(r.Anomalies) != 1 {
		t.Fatalf("want exactly one C2 anomaly, got %v", r)
	}
	if a := r.Anomalies[0]; a.Key != "b" || a.Read != txn.None || a.Required != wot.ID() {
		t.Fatalf("C2 anomaly %+v, want b read ⊥ where %v was required", a, wot.ID())
	}
}

// TestECLastWriterWins: c1 stamps a:=x at 10µs, c2 stamps a:=y at 20µs, and y arrives first. x
// is discarded (the current value stays y) but keeps its place in a's version order, before y;
// the history passes the checker.
func TestECLastWriterWins(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	c1, c2, c3 := w.Client(), w.Client(), w.Client()
	w.Advance(10)
	x := c1.Write(map[string]string{"a": "x"})
	w.Advance(10)
	y := c2.Write(map[string]string{"a": "y"})
	for w.Deliver(involves(c2)) {
	}
	w.DeliverAll()
	rot := c3.Read("a")
	w.DeliverAll()
	if got := rot.Values(); got[0] != "y" {
		t.Fatalf("read %q, want the newest stamp's y", got)
	}
	if got, want := w.Replica(0).(*Replica).VersionOrder()["a"], []txn.ID{x.ID(), y.ID()}; !slices.Equal(got, want) {
		t.Fatalf("version order of a %v, want %v (the discarded write first)", got, want)
	}
	if r := checker.Check(w.History(), checker.Options{Model: checker.Causal, MaxRounds: 1, Final: []txn.ID{rot.ID()}}); !r.OK {
		t.Fatal(r)
	}
}

// TestCheckerCatchesEC runs EC under random interleavings of concurrent multi-partition WOTs and
// ROTs (three partitions, six clients, nine keys) and checks that the TCC checker flags it for
// fractured and causally inconsistent reads (C2) over the seeds, and for nothing bogus: the only
// other finding it may report is C3, a causally later write that lost to an earlier one because
// the clients' clocks tied and the client id broke the tie the other way (LWW on client
// timestamps does lose such writes). Every read must still be of a committed write (C1), no ROT
// may list two versions of a key (C4) or take more than one round (C5), and the version order
// must hold every write.
func TestCheckerCatchesEC(t *testing.T) {
	c2 := 0
	for seed := range uint64(50) {
		r := randomECHistory(t, seed).CheckTCC(1)
		for o, n := range r.Counts {
			if o != checker.TCCSnapshot && o != checker.TCCWriteOrder && n > 0 {
				t.Fatalf("seed %d: bogus finding %s: %v", seed, o, r)
			}
		}
		c2 += r.Counts[checker.TCCSnapshot]
	}
	if c2 == 0 {
		t.Fatal("the checker found no C2 anomaly in EC histories with concurrent multi-partition WOTs")
	}
	t.Logf("%d C2 anomalies over 50 seeds", c2)
}

func randomECHistory(t *testing.T, seed uint64) *tccscript.World {
	rng := rand.New(rand.NewPCG(seed, 2))
	w := tccscript.New(t, New, NewClient, 3, nil)
	keys := []string{"k0", "k1", "k2", "k3", "k4", "a", "b", "c", "x"}
	pick := func() []string {
		perm := rng.Perm(len(keys))[:2+rng.IntN(2)]
		out := make([]string, len(perm))
		for i, j := range perm {
			out[i] = keys[j]
		}
		return out
	}
	n := 0
	it := &tccscript.Interleaving{W: w, Rand: rng, StartWeight: 3, Start: func(c *tccscript.Client) *tccscript.Handle {
		if rng.IntN(2) != 0 {
			return c.Read(pick()...)
		}
		kv := map[string]string{}
		for _, k := range pick() {
			n++
			kv[k] = fmt.Sprintf("v%d", n)
		}
		return c.Write(kv)
	}, DeliverWeight: 6, AdvanceWeight: 1, AdvanceUs: 20}
	for range 6 {
		it.Clients = append(it.Clients, w.Client())
	}
	it.Run(800)
	w.DeliverAll()
	return w
}
