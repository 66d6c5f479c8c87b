package eiger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/verify/checker"
)

// TestEigerReadYourWritesWithoutClock is the hazard of reads that carry no clock, message by
// message. Partition B is busy (clock 20), A idle (clock 2). Client W writes {x:=x1 on A,
// y:=y1 on B} coordinated by B: A prepares at 3, B at 21, so the WOT commits at 21, and B
// answers W before its Commit reaches A. W then reads x. A still holds x1 pending and answers
// with its clock alone (LVT 4). Without the client's clock nothing tells A, or the client, that
// the session's past reaches 21:
//
//   - with the dependency-time check (always on without the clock), the effective time is at
//     least W's dependency time, the commit time 21 of its own write: A reads x by time 21,
//     checks x1's commit with B (the third round) and returns x1;
//   - without it (unsafe_skip_dep_check), the effective time is A's LVT 4: A's commit check
//     learns that x1 committed at 21 > 4 and returns x's initial version, an older snapshot than
//     W's own write, and the checker reports the C2 anomaly (read-your-writes).
func TestEigerReadYourWritesWithoutClock(t *testing.T) {
	for _, unsafe := range []bool{false, true} {
		t.Run(fmt.Sprintf("unsafe_skip_dep_check=%v", unsafe), func(t *testing.T) {
			w := tccscript.New(t, New, NewClient, 2, protocol.Params{ParamReadClock: "false",
				ParamUnsafeSkipDepCheck: fmt.Sprint(unsafe)})
			x, y := keyOn("x", 0, 2), keyOn("y", 1, 2)
			A, B := replica(w, 0), replica(w, 1)
			A.clock, B.clock = 2, 20
			c, wot := writeVia(t, w, map[string]string{x: "x1", y: "y1"}, 1)
			cl := fmt.Sprintf("c%d", c.ID())
			deliver[*WriteReq](t, w, cl, "p0")
			deliver[*WriteReply](t, w, "p0", cl)
			deliver[*Vote](t, w, "p0", "p1")
			deliver[*WriteReq](t, w, cl, "p1")
			if m := peek[*Commit](t, w, "p1", "p0"); m.CommitTime != 21 {
				t.Fatalf("the WOT commits at %d, want max(3, 21) = 21", m.CommitTime)
			}
			deliver[*WriteReply](t, w, "p1", cl)
			wantCommitted(t, wot)

			rot := c.Read(x)
			if m := deliver[*Read](t, w, cl, "p0"); m.Clock != 0 {
				t.Fatalf("the read carries clock %d without read_clock", m.Clock)
			}
			if r := deliver[*ReadReply](t, w, "p0", cl).Reads[0]; !r.Pending || r.LVT != 4 {
				t.Fatalf("A answered %+v, want x pending with LVT 4", r)
			}
			want, effT := "x1", int64(21)
			if unsafe {
				want, effT = "", 4
			}
			if m := peek[*ReadByTime](t, w, cl, "p0"); m.EffTime != effT {
				t.Fatalf("round 2 reads at %d, want %d", m.EffTime, effT)
			}
			deliver[*ReadByTime](t, w, cl, "p0") // before B's Commit: A checks x1's commit with B
			w.DeliverAll()
			wantRead(t, rot, 3, 1, want)
			rep := checker.Check(w.History(), checker.Options{Model: checker.Causal, MaxRounds: 3})
			if caught := rep.Counts[checker.TCCSnapshot] > 0; caught != unsafe {
				t.Fatalf("checker: %v; want a C2 anomaly exactly when the check is skipped", rep)
			}
		})
	}
}

// TestEigerSessionGuarantees stresses what a read without the client's clock could lose: the
// session's own past. For 200 seeds, on 4 partitions whose clocks drift apart (a noise client
// keeps writing on partition 0 only), over 8 keys:
//
//   - a writer session alternates a WOT of 1–3 keys with ROTs that include the keys it just wrote
//     (read-your-writes) and re-read keys it read before (monotonic reads);
//   - a relay session reads a key and then writes another (writes follow reads), and an observer
//     session reads the relay's key in one ROT and the first key in the next (causality across
//     sessions);
//
// under random deliveries (FIFO per link), lost messages and time steps that fire the
// timeouts. Every third seed reads with the client's clock, the others without (as under
// reading=thesis), and with either EVT reading. At the end the network heals, every
// transaction must finish, and the TCC checker (C1–C6, at most 3 rounds) must pass the whole
// history.
func TestEigerSessionGuarantees(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if rep := sessions(t, seed, nil); !rep.OK {
				t.Fatalf("seed %d: %v", seed, rep)
			}
		})
	}
}

// TestEigerSessionGuaranteesCatchSkippedDepCheck is the negative control: the same runs with
// reads that carry no clock and skip the dependency-time check must show the checker a C2
// anomaly (a read older than the session's past) in one of the 200 seeds; it stops at the first
// (the seeds after it would decide nothing).
func TestEigerSessionGuaranteesCatchSkippedDepCheck(t *testing.T) {
	for seed := range uint64(200) {
		if rep := sessions(t, seed, protocol.Params{ParamReadClock: "false", ParamUnsafeSkipDepCheck: "true"}); rep.Counts[checker.TCCSnapshot] > 0 {
			t.Logf("C2 anomaly in seed %d: %s", seed, rep.Summary())
			return
		}
	}
	t.Fatal("no C2 anomaly in 200 seeds of an Eiger without its clock or its dependency check")
}

func sessions(t *testing.T, seed uint64, extra protocol.Params) checker.Report {
	rng := rand.New(rand.NewPCG(seed, 2))
	params := protocol.Params{ParamTxTimeout: "50ms", ParamRetransmitInterval: "5ms", ParamGCInterval: "20ms",
		ParamPartitionEVT: fmt.Sprint(rng.IntN(2) == 0), ParamReadClock: fmt.Sprint(seed%3 == 0)}
	for k, v := range extra {
		params[k] = v
	}
	const n = 4
	w := tccscript.New(t, New, NewClient, n, params)
	var keys []string
	for p := range n {
		keys = append(keys, keyOn(fmt.Sprintf("k%d", p), p, n), keyOn(fmt.Sprintf("m%d", p), p, n))
	}
	noiseKey := keyOn("noise", 0, n)
	// The writer, the relay, the observer and three noise clients, in that order.
	const writer, relay, observer, noise = 0, 1, 2, 3
	it := &tccscript.Interleaving{W: w, Rand: rng, DeliverWeight: 39, DropWeight: 1, AdvanceWeight: 5, AdvanceUs: 6_000}
	for range noise + 3 {
		it.Clients = append(it.Clients, w.Client())
	}
	it.Handles = make([]*tccscript.Handle, len(it.Clients))
	var written, readBefore []string // the writer's last WOT's keys, keys it read
	relayRead := ""                  // the key the relay read and has to write after
	observerNext := []string(nil)    // the observer's second ROT
	pick := func(k int) []string {
		ks := slices.Clone(keys)
		rng.Shuffle(len(ks), func(a, b int) { ks[a], ks[b] = ks[b], ks[a] })
		return ks[:k]
	}
	v := 0
	val := func() string { v++; return fmt.Sprintf("v%d", v) }
	it.Steps = []tccscript.Step{{Weight: 15, Do: func() {
		if it.Busy(writer) {
			return
		}
		if written == nil {
			kv := map[string]string{keys[rng.IntN(2)]: val()} // one on the busy partition 0
			for _, k := range pick(rng.IntN(3)) {
				kv[k] = val()
			}
			it.Handles[writer] = it.Clients[writer].Write(kv)
			for k := range kv {
				written = append(written, k)
			}
			slices.Sort(written)
		} else {
			// Some of the keys it wrote: all of them would include the coordinator's,
			// whose EVT is the commit time and lifts the snapshot by itself.
			ks := slices.Clone(written)
			rng.Shuffle(len(ks), func(a, b int) { ks[a], ks[b] = ks[b], ks[a] })
			ks = append(ks[:1+rng.IntN(len(ks))], pick(rng.IntN(3))...)
			if len(readBefore) > 0 {
				ks = append(ks, readBefore[rng.IntN(len(readBefore))])
			}
			it.Handles[writer] = it.Clients[writer].Read(ks...)
			readBefore, written = ks, nil
		}
	}}, {Weight: 10, Do: func() {
		if it.Busy(relay) {
			return
		}
		if relayRead == "" {
			relayRead = pick(1)[0]
			it.Handles[relay] = it.Clients[relay].Read(relayRead)
		} else {
			it.Handles[relay] = it.Clients[relay].Write(map[string]string{pick(1)[0]: val()})
			relayRead = ""
		}
	}}, {Weight: 10, Do: func() {
		if it.Busy(observer) {
			return
		}
		if observerNext == nil {
			ks := pick(2)
			it.Handles[observer], observerNext = it.Clients[observer].Read(ks[0]), ks[1:]
		} else {
			it.Handles[observer], observerNext = it.Clients[observer].Read(observerNext...), nil
		}
	}}, {Weight: 20, Do: func() {
		i := noise + rng.IntN(len(it.Clients)-noise)
		if it.Busy(i) {
			return
		}
		if rng.IntN(2) == 0 {
			it.Handles[i] = it.Clients[i].Write(map[string]string{noiseKey: val()})
		} else {
			it.Handles[i] = it.Clients[i].Read(noiseKey)
		}
	}}}
	it.Run(3000)
	if err := it.Heal(200, 5_000); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return w.CheckTCC(3, w.FinalRead(append(slices.Clone(keys), noiseKey)...))
}
