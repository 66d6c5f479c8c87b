package wren

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
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
	g := &tccscript.WholeGroup{Keys: []string{"c", "a", "x"}}
	check := func(h *tccscript.Handle) {
		if err := g.Fractured(h); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res := h.ReadResult(); res.Reads != nil && res.Rounds != 2 {
			t.Fatalf("seed %d: %v took %d rounds", seed, h.ID(), res.Rounds)
		}
	}
	it := &tccscript.Interleaving{W: w, Rand: rng, Clients: []*tccscript.Client{w.Client(), w.Client(), w.Client(), w.Client()},
		StartWeight: 2, Start: func(c *tccscript.Client) *tccscript.Handle {
			if rng.IntN(3) == 0 {
				return g.Write(c)
			}
			return c.Read(g.Keys...)
		},
		DeliverWeight: 6, DropWeight: 1, Lose: tccscript.IsPeerMessage, AdvanceWeight: 1, AdvanceUs: 3_000, Finished: check}
	it.Run(600)
	if err := it.Heal(400, 1_000); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	// Every partition orders the WOTs alike (they all write the whole group), and at quiescence
	// a fresh ROT must see the newest (C6).
	final := w.FinalRead(g.Keys...)
	check(final)
	if _, err := g.Settled(w, final); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	checkTCC(t, w, final.ID())
}
