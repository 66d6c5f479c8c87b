package wren

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
)

// TestWrenNoFracturedReadsUnderInterleavings runs, for 200 seeds, clients that write all three
// keys c, a, x (one on each of three partitions) in every WOT and read all three in every ROT,
// under random delivery orders, lost peer messages and random time steps. Since every WOT writes
// the whole group, an atomic snapshot names one writer for all three keys: a ROT that mixes
// writers (or a write with ⊥) is a fractured read. Then the network heals, and every
// transaction must finish and a fresh client must see the last committed WOT (liveness).
func TestWrenNoFracturedReadsUnderInterleavings(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { interleave(t, seed) })
	}
}

func interleave(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := tccscript.New(t, New, NewClient, 3, protocol.Params{ParamTxTimeout: "50ms", ParamRetryInterval: "10ms", ParamStabInterval: "1ms"})
	keys := []string{"c", "a", "x"}
	clients := make([]*tccscript.Client, 4)
	handles := make([]*tccscript.Handle, len(clients))
	for i := range clients {
		clients[i] = w.Client()
	}
	values := map[txn.ID]string{} // what each WOT wrote
	checked := map[*tccscript.Handle]bool{}
	check := func(h *tccscript.Handle) {
		if h == nil || !h.Done() || checked[h] {
			return
		}
		checked[h] = true
		reads := h.ReadResult().Reads
		if reads == nil {
			return // a WOT
		}
		for _, rd := range reads {
			if rd.Version != reads[0].Version || string(rd.Value) != values[rd.Version] {
				t.Fatalf("seed %d: fractured read %v: %+v", seed, h.ID(), reads)
			}
		}
		if h.ReadResult().Rounds != 2 {
			t.Fatalf("seed %d: %v took %d rounds", seed, h.ID(), h.ReadResult().Rounds)
		}
	}
	n := 0
	for range 600 {
		switch r := rng.IntN(10); {
		case r < 2:
			i := rng.IntN(len(clients))
			if h := handles[i]; h != nil && !h.Done() {
				continue
			}
			if rng.IntN(3) == 0 {
				n++
				v := fmt.Sprintf("w%d", n)
				handles[i] = clients[i].Write(map[string]string{"c": v, "a": v, "x": v})
				values[handles[i].ID()] = v
			} else {
				handles[i] = clients[i].Read(keys...)
			}
		case r < 8:
			in := w.InFlight()
			if len(in) == 0 {
				continue
			}
			e := in[rng.IntN(len(in))]
			w.Deliver(func(o tccscript.Envelope) bool { return o.From == e.From && o.To == e.To })
		case r < 9:
			in := w.InFlight()
			if len(in) == 0 {
				continue
			}
			e := in[rng.IntN(len(in))]
			if e.Kind == tccscript.PeerMessage {
				dropped := false
				w.Drop(func(o tccscript.Envelope) bool {
					hit := !dropped && o.From == e.From && o.To == e.To
					dropped = dropped || hit
					return hit
				})
			}
		default:
			w.Advance(rng.Int64N(3_000))
		}
		for _, h := range handles {
			check(h)
		}
	}
	// Heal: deliver everything, let timers resolve what was lost.
	for range 400 {
		w.DeliverAll()
		w.Advance(1_000)
	}
	w.DeliverAll()
	for i, h := range handles {
		if h != nil && !h.Done() {
			t.Fatalf("seed %d: client %d's %v never finished", seed, i+1, h.ID())
		}
		check(h)
	}
	// Every partition orders the WOTs alike (they all write the whole group), and at quiescence
	// a fresh ROT must see the newest (C6).
	order := replica(w, 0).VersionOrder()["c"]
	h := w.Client().Read(keys...)
	w.DeliverAll()
	check(h)
	for p := range 3 {
		if got := replica(w, p).VersionOrder()[keys[p]]; fmt.Sprint(got) != fmt.Sprint(order) {
			t.Fatalf("seed %d: partition %d orders its key %v, partition 0 orders c %v", seed, p, got, order)
		}
	}
	checkTCC(t, w, h.ID())
}
