package eiger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/checker"
	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
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
	keys := []string{keyOn("k", 0, 3), keyOn("k", 1, 3), keyOn("k", 2, 3)}
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
		res := h.ReadResult()
		if res.Reads == nil {
			return // a WOT
		}
		for _, rd := range res.Reads {
			if rd.Version != res.Reads[0].Version || string(rd.Value) != values[rd.Version] {
				t.Fatalf("seed %d: fractured read %v: %+v", seed, h.ID(), res.Reads)
			}
		}
		if res.Err != nil || res.Rounds < 1 || res.Rounds > 3 || (res.Rounds == 3) != (res.CommitChecks > 0) {
			t.Fatalf("seed %d: %v took %d rounds with %d commit checks (%v)", seed, h.ID(), res.Rounds, res.CommitChecks, res.Err)
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
				handles[i] = clients[i].Write(map[string]string{keys[0]: v, keys[1]: v, keys[2]: v})
				values[handles[i].ID()] = v
			} else {
				order := slices.Clone(keys)
				rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
				handles[i] = clients[i].Read(order...)
			}
		case r < 8:
			deliverRandom(w, rng)
		case r < 9:
			if in := w.InFlight(); len(in) > 0 {
				e := in[rng.IntN(len(in))]
				dropped := false
				w.Drop(func(o tccscript.Envelope) bool {
					hit := !dropped && o.From == e.From && o.To == e.To && o.Msg == e.Msg
					dropped = dropped || hit
					return hit
				})
			}
		default:
			w.Advance(rng.Int64N(8_000))
		}
		for _, h := range handles {
			check(h)
		}
	}
	// Heal: deliver everything, let timers resolve what was lost.
	for range 200 {
		w.DeliverAll()
		w.Advance(5_000)
	}
	w.DeliverAll()
	for i, h := range handles {
		if h != nil && !h.Done() {
			t.Fatalf("seed %d: client %d's %v never finished", seed, i+1, h.ID())
		}
		check(h)
	}
	order := replica(w, 0).VersionOrder()[keys[0]]
	for p := range 3 {
		if got := replica(w, p).VersionOrder()[keys[p]]; !slices.Equal(got, order) {
			t.Fatalf("seed %d: partition %d orders its key %v, partition 0 %v", seed, p, got, order)
		}
		if r := replica(w, p); len(r.pending) != 0 || len(r.unacked) != 0 || len(r.parked) != 0 {
			t.Fatalf("seed %d: partition %d keeps state at quiescence: pending %v, unacked %v, %d parked reads",
				seed, p, r.pending, r.unacked, len(r.parked))
		}
	}
	final := w.Client().Read(keys...)
	w.DeliverAll()
	check(final)
	if last := txn.None; len(order) > 0 {
		last = order[len(order)-1]
		if got := final.ReadResult().Reads[0].Version; got != last {
			t.Fatalf("seed %d: at quiescence a ROT read %v, the newest version is %v", seed, got, last)
		}
	}
	if rep := checker.CheckTCC(w.History(), checker.TCCOptions{MaxRounds: 3, Final: []txn.ID{final.ID()}}); !rep.OK {
		t.Fatalf("seed %d: %v", seed, rep)
	}
}

// deliverRandom delivers one in-flight item chosen at random among those first on their link.
func deliverRandom(w *tccscript.World, rng *rand.Rand) {
	var heads []tccscript.Envelope
	for _, e := range w.InFlight() {
		if !slices.ContainsFunc(heads, func(h tccscript.Envelope) bool { return h.From == e.From && h.To == e.To }) {
			heads = append(heads, e)
		}
	}
	if len(heads) == 0 {
		return
	}
	e := heads[rng.IntN(len(heads))]
	w.Deliver(func(o tccscript.Envelope) bool { return o.From == e.From && o.To == e.To })
}
