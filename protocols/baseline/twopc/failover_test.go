package twopc

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

func (w *world) rep(dc int) *Replica { return w.reps[dc].(*Replica) }

// TestFailoverOrder: by default the initial coordinator comes first, then the others by RTT from
// it (aws-helios: V, O 66, C 78, I 84, S 268); failover_order puts the named ones first.
func TestFailoverOrder(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	for _, tc := range []struct {
		spec  string
		coord int
		want  []string
	}{
		{"", 0, []string{"V", "O", "C", "I", "S"}},
		{"", 4, []string{"S", "C", "I", "O", "V"}},
		{"C, S", 0, []string{"C", "S", "V", "O", "I"}},
	} {
		order, err := failoverOrder(tc.spec, tc.coord, topo.DCs, topo.RTTMs)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, dc := range order {
			got = append(got, topo.DCs[dc])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("order %q from %s: %v, want %v", tc.spec, topo.DCs[tc.coord], got, tc.want)
		}
	}
	for _, bad := range []string{"X", "V,V"} {
		if _, err := failoverOrder(bad, 0, topo.DCs, topo.RTTMs); err == nil {
			t.Errorf("order %q accepted", bad)
		}
	}
}

// TestFailoverCrashOfV is the fail-over scenario on aws-helios (lease 500 ms): V coordinates,
// then crashes at 1 s. A commit V decided just before the crash (accepted everywhere, chosen
// nowhere) survives; a Get forwarded to the dead V fails once O, next in the fail-over order
// (closest to V), has taken over; O takes over no earlier than V's lease can have ended, and
// commits resume with O's latency: RTT(X,O) + RTT(O, 2nd closest live DC) = 210 + 175 ms at S.
// V returns at 5 s, learns the higher ballot, never serves what it held, and follows: a commit
// at V then goes through O (33 + 66 + 33 ms).
func TestFailoverCrashOfV(t *testing.T) {
	w := newWorld(t, nil)
	v, o, c, i, s := w.dc("V"), w.dc("O"), w.dc("C"), w.dc("I"), w.dc("S")
	t1 := txn.NewID(1, 1)
	w.at(0, o, commit(1, 1, &txn.Txn{ID: t1, Writes: []txn.Write{{Key: "x", Value: []byte("1")}}}))
	w.runTo(900)
	if r, ok := w.find(1, 1); !ok || r.Status != txn.Committed || r.atUs != 144_000 {
		t.Fatalf("t1 before the crash: %+v, want committed at 144 ms", r)
	}
	// I's commit reaches V at 942 ms; V decides and sends the Accepts, then crashes at 1 s,
	// before any acknowledgement comes back.
	t2 := txn.NewID(2, 1)
	w.at(900, i, commit(2, 1, &txn.Txn{ID: t2, Writes: []txn.Write{{Key: "y", Value: []byte("2")}}}))
	w.runTo(999)
	leaseEndUs := w.rep(v).ld.leaseUntil
	w.crash(v)
	// A Get at O at 1.1 s goes to the dead V.
	t3 := txn.NewID(3, 1)
	w.at(1100, o, get(3, 1, t3, "x"))
	w.runTo(3000)

	if w.rep(o).role != leader || w.rep(o).coordinator() != o {
		t.Fatalf("O: role %d, coordinator %s; want O coordinating", w.rep(o).role, w.topo.DCs[w.rep(o).coordinator()])
	}
	for _, dc := range []int{c, i, s} {
		if got := w.rep(dc).coordinator(); got != o {
			t.Errorf("%s forwards to %s, want O", w.topo.DCs[dc], w.topo.DCs[got])
		}
	}
	r3, ok := w.find(3, 1)
	if !ok || r3.Err == "" || r3.atUs >= 2_100_000 {
		t.Errorf("t3's Get: %+v (found %v), want an error at the fail-over, before the 1 s timeout", r3, ok)
	}
	if r2, ok := w.find(2, 1); !ok || r2.Status != txn.Committed {
		t.Errorf("t2, decided by V before the crash: %+v (found %v), want committed by O's recovery", r2, ok)
	}
	r2, _ := w.find(2, 1)
	t.Logf("V's lease until %d µs; O chose its recovered log at %d µs; t3's Get failed at %d µs; t2 committed at %d µs",
		leaseEndUs, w.rep(o).slots[w.rep(o).fenceEnd].chosenUs, r3.atUs, r2.atUs)
	// O's term began after V's lease: the first entry O had chosen, at the earliest.
	if first := w.rep(o).slots[w.rep(o).fenceEnd]; first == nil || first.chosenUs < leaseEndUs {
		t.Errorf("O's recovered log chosen at %v, V's lease ran until %d µs", first, leaseEndUs)
	}

	t4 := txn.NewID(4, 1)
	w.at(3000, s, commit(4, 1, &txn.Txn{ID: t4, Writes: []txn.Write{{Key: "x", Value: []byte("4")}}}))
	w.runTo(4000)
	if r, ok := w.find(4, 1); !ok || r.Status != txn.Committed || r.atUs != 3_385_000 {
		t.Fatalf("t4 at S under O: %+v (found %v), want committed at 3385 ms", r, ok)
	}

	// A client at V submits while V is down; V returns at 5 s.
	t5 := txn.NewID(5, 1)
	w.at(4500, v, commit(5, 1, &txn.Txn{ID: t5, Writes: []txn.Write{{Key: "z", Value: []byte("5")}}}))
	w.runTo(5000)
	w.restart(v)
	w.runTo(5900)
	if rv := w.rep(v); rv.role != follower || rv.coordinator() != o {
		t.Fatalf("V after its return: role %d, coordinator %s; want a follower of O", rv.role, w.topo.DCs[rv.coordinator()])
	}
	if r, ok := w.find(5, 1); !ok || r.Status == txn.Committed {
		t.Errorf("t5, held by the returning V: %+v (found %v), want it refused (V must not serve under its old term)", r, ok)
	}
	t6 := txn.NewID(6, 1)
	w.at(6000, v, commit(6, 1, &txn.Txn{ID: t6, Writes: []txn.Write{{Key: "x", Value: []byte("6")}}}))
	w.runTo(7000)
	if r, ok := w.find(6, 1); !ok || r.Status != txn.Committed || r.atUs != 6_132_000 {
		t.Errorf("t6 at V under O: %+v (found %v), want committed at 6132 ms", r, ok)
	}
	w.runTo(8000)
	for dc, e := range w.envs {
		if got := e.store.Get("x").Writer; got != t6 {
			t.Errorf("%s: x written by %s, want %s", w.topo.DCs[dc], got, t6)
		}
		if got := e.store.Get("y").Writer; got != t2 {
			t.Errorf("%s: y written by %s, want %s", w.topo.DCs[dc], got, t2)
		}
		if got := e.store.Get("z").Writer; got != txn.None {
			t.Errorf("%s: z written by %s, want the initial version", w.topo.DCs[dc], got)
		}
	}
}

// TestPartitionedCoordinatorStepsDown: V keeps running but is cut off from everyone from 1 s to
// 4 s. Its lease lapses, so it serves nothing it receives meanwhile; O takes over and commits;
// once the partition heals, V learns the higher ballot and follows, and the stores agree.
func TestPartitionedCoordinatorStepsDown(t *testing.T) {
	w := newWorld(t, nil)
	v, o, c := w.dc("V"), w.dc("O"), w.dc("C")
	cut := false
	w.drop = func(from, to int, _ protocol.Message) bool { return cut && (from == v) != (to == v) }
	w.runTo(1000)
	cut = true
	appliedAtCut := w.rep(v).applied
	// Requests at V during the partition: V's own clients can reach only V.
	t1 := txn.NewID(1, 1)
	w.at(1000, v, commit(1, 1, &txn.Txn{ID: t1, Writes: []txn.Write{{Key: "x", Value: []byte("1")}}}))
	t2 := txn.NewID(2, 1)
	w.at(2000, v, get(2, 1, t2, "x"))
	t3 := txn.NewID(3, 1)
	w.at(2500, c, commit(3, 1, &txn.Txn{ID: t3, Writes: []txn.Write{{Key: "x", Value: []byte("3")}}}))
	w.runTo(4000)
	if w.rep(v).applied != appliedAtCut {
		t.Errorf("V applied positions %d..%d while cut off", appliedAtCut+1, w.rep(v).applied)
	}
	if r, ok := w.find(1, 1); ok && r.Status == txn.Committed {
		t.Errorf("t1 committed by the isolated V: %+v", r)
	}
	if r, ok := w.find(2, 1); ok && r.Err == "" && r.atUs > 1_600_000 {
		t.Errorf("V served a Get at %d µs, after its lease", r.atUs)
	}
	if r, ok := w.find(3, 1); !ok || r.Status != txn.Committed {
		t.Errorf("t3 at C while V is cut off: %+v (found %v), want committed by O", r, ok)
	}
	if w.rep(o).role != leader {
		t.Fatalf("O did not take over")
	}
	cut = false
	w.runTo(6000)
	if rv := w.rep(v); rv.role != follower || rv.coordinator() != o {
		t.Fatalf("V after the partition: role %d, coordinator %s; want a follower of O", rv.role, w.topo.DCs[rv.coordinator()])
	}
	for dc, e := range w.envs {
		if got := e.store.Get("x").Writer; got != t3 {
			t.Errorf("%s: x written by %s, want %s", w.topo.DCs[dc], got, t3)
		}
	}
}

// TestFailoverLiveness: on aws-helios with V down from 10 s to 20 s of a 30 s run, every
// surviving datacenter commits after V's lease has expired and O has taken over (from 11.5 s),
// V commits again after its return, every transaction finishes and the checker is clean.
func TestFailoverLiveness(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	opts := bench.Defaults()
	opts.Topology = topo
	opts.ClientsPerDC = 2
	opts.Workload = workload.TYCSB{Keys: 10_000, Distribution: workload.DistUniform, OpsPerTxn: 4, ReadRatio: 0.5}
	opts.DurationUs, opts.WarmupUs = 30_000_000, 0
	const downUs, upUs = 10_000_000, 20_000_000
	opts.Faults = []sim.Fault{{Kind: sim.Outage, DC: "V", StartUs: downUs, EndUs: upUs}}
	opts.KeepHistory = true
	res, err := bench.Run(opts, "2pc-paxos")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK || res.Unfinished > 0 {
		t.Fatalf("%s; %d unfinished\nparameters: %s", res.Checker.Summary(), res.Unfinished, res.Replay)
	}
	during, after := map[string]int{}, map[string]int{}
	for _, tx := range res.History.Txns {
		if tx.Status != txn.Committed {
			continue
		}
		switch {
		case tx.EndUs >= downUs+1_500_000 && tx.EndUs < upUs:
			during[tx.DC]++
		case tx.EndUs >= upUs+1_000_000:
			after[tx.DC]++
		}
	}
	t.Logf("committed with V down (11.5–20 s): %v; after V's return (21–30 s): %v", during, after)
	for _, dc := range topo.DCs {
		if dc != "V" && during[dc] == 0 {
			t.Errorf("%s committed nothing while V was down", dc)
		}
		if after[dc] == 0 {
			t.Errorf("%s committed nothing after V returned", dc)
		}
	}
}

// probed collects the replicas of the runs of protocol "2pc-paxos-probe" (2pc-paxos itself).
var probed []*Replica

func init() {
	registry.Register("2pc-paxos-probe", registry.Entry{
		Family:      registry.ReadWrite,
		Description: "2pc-paxos, its replicas kept for inspection by the tests",
		New: func(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
			r, err := New(pc, env)
			if err == nil {
				probed = append(probed, r.(*Replica))
			}
			return r, err
		},
		Codec: Codec,
	})
}

// TestSwarmFailsOver reruns the swarm's seeds (TestPropertySafety) and requires that some of
// them fail over (the initial coordinator's datacenter is down long enough for another to take
// over) and that those, like all others, are clean.
func TestSwarmFailsOver(t *testing.T) {
	seeds := uint64(swarm.SeedsPerProtocol)
	if testing.Short() {
		seeds = 70 // seeds 10, 25, 45 and 67 fail over
	}
	failovers := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		probed = nil
		opts := swarm.Options("2pc-paxos", seed)
		res, err := bench.Run(opts, "2pc-paxos-probe")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !res.Checker.OK || res.Unfinished > 0 {
			t.Fatalf("seed %d: %s; %d unfinished\nparameters: %s", seed, res.Checker.Summary(), res.Unfinished, res.Replay)
		}
		for _, r := range probed {
			if r.terms > 0 && r.self != r.order[0] {
				failovers++
				t.Logf("seed %d: %s took over (faults %v)", seed, opts.Topology.DCs[r.self], opts.Faults)
				break
			}
		}
	}
	if failovers < 3 {
		t.Fatalf("%d of %d seeds failed over, want at least 3", failovers, seeds)
	}
}

// TestReelectionKeepsLocks: a coordinator whose lease is valid and that hears of a later term
// (from a candidate that cannot have won) re-runs phase 1 at once; the recovered log is its own,
// so it keeps its lock table, and a transaction that read under the old term commits.
func TestReelectionKeepsLocks(t *testing.T) {
	w := newWorld(t, nil)
	v, o, c := w.dc("V"), w.dc("O"), w.dc("C")
	t1 := txn.NewID(1, 1)
	w.at(0, o, get(1, 1, t1, "k"))
	w.runTo(100)
	if r, ok := w.find(1, 1); !ok || r.Err != "" {
		t.Fatalf("t1's Get: %+v (found %v)", r, ok)
	}
	rival := makeBallot(2, c)
	w.reps[v].HandleMessage(protocol.NodeID(c), &Ack{From: c, Ballot: rival})
	w.runTo(300)
	rv := w.rep(v)
	if rv.role != leader || rv.ballot <= rival || rv.terms != 1 || w.rep(o).coordinator() != v {
		t.Fatalf("V: role %d ballot %x terms %d; want V coordinating again above %x", rv.role, rv.ballot, rv.terms, rival)
	}
	w.at(300, o, commit(1, 2, &txn.Txn{ID: t1, Reads: []txn.Read{{Key: "k"}}, Writes: []txn.Write{{Key: "k", Value: []byte("1")}}}))
	w.runTo(1000)
	if r, ok := w.find(1, 2); !ok || r.Status != txn.Committed || r.atUs != 444_000 {
		t.Errorf("t1's commit after the re-election: %+v (found %v), want committed at 444 ms (its read lock kept)", r, ok)
	}
}
