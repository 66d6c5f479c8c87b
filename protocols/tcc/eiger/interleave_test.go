package eiger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
)

// TestEigerNoFracturedReadsUnderInterleavings runs, for 200 seeds, four clients that write all
// three keys (one on each of three partitions) in every WOT and read all three in every ROT,
// under random delivery orders (FIFO per link), lost messages (peer messages, requests and
// answers alike) and random time steps that fire the timeouts. Since every WOT writes the whole
// group, an atomic snapshot names one writer for all three keys: a ROT that mixes writers (or a
// write with ⊥) is a fractured read. No ROT may take more than 3 rounds. Then the network heals:
// every transaction must finish, the partitions must order the WOTs alike, a fresh ROT must see
// the newest (C6), and the TCC checker must pass the whole history. Odd seeds use the thesis's
// partition-wide EVT (param partition_evt); seeds 2 and 3 mod 4 read with the client's clock
// (param read_clock), the others without.
func TestEigerNoFracturedReadsUnderInterleavings(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { interleave(t, seed) })
	}
}

func interleave(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := tccscript.New(t, New, NewClient, 3, protocol.Params{ParamTxTimeout: "50ms", ParamRetransmitInterval: "5ms",
		ParamGCInterval: "20ms", ParamPartitionEVT: fmt.Sprint(seed%2 == 1), ParamReadClock: fmt.Sprint(seed%4 >= 2)})
	g := &tccscript.WholeGroup{Keys: []string{keyOn("k", 0, 3), keyOn("k", 1, 3), keyOn("k", 2, 3)}}
	check := func(h *tccscript.Handle) {
		if err := g.Fractured(h); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res := h.ReadResult(); res.Reads != nil && (res.Err != nil || res.Rounds < 1 || res.Rounds > 3 || (res.Rounds == 3) != (res.CommitChecks > 0)) {
			t.Fatalf("seed %d: %v took %d rounds with %d commit checks (%v)", seed, h.ID(), res.Rounds, res.CommitChecks, res.Err)
		}
	}
	it := &tccscript.Interleaving{W: w, Rand: rng, Clients: []*tccscript.Client{w.Client(), w.Client(), w.Client(), w.Client()},
		StartWeight: 2, Start: func(c *tccscript.Client) *tccscript.Handle {
			if rng.IntN(3) == 0 {
				return g.Write(c)
			}
			order := slices.Clone(g.Keys)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			return c.Read(order...)
		},
		DeliverWeight: 6, DropWeight: 1, AdvanceWeight: 1, AdvanceUs: 8_000, Finished: check}
	it.Run(600)
	if err := it.Heal(200, 5_000); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	for p := range 3 {
		if r := replica(w, p); len(r.pending) != 0 || len(r.unacked) != 0 || len(r.parked) != 0 {
			t.Fatalf("seed %d: partition %d keeps state at quiescence: pending %v, unacked %v, %d parked reads",
				seed, p, r.pending, r.unacked, len(r.parked))
		}
	}
	final := w.FinalRead(g.Keys...)
	check(final)
	if _, err := g.Settled(w, final); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if rep := w.CheckTCC(3, final); !rep.OK {
		t.Fatalf("seed %d: %v", seed, rep)
	}
}
