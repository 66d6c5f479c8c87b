package paxos

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

func mustPreset(t *testing.T, name string) *topology.Topology {
	t.Helper()
	topo, ok := topology.Preset(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	return topo
}

// newSim builds an exact-delay simulation (no jitter, no client hop) of proto on topo.
func newSim(t *testing.T, topo *topology.Topology, combined bool, params protocol.Params) *sim.Sim {
	t.Helper()
	s, err := sim.New(sim.Config{Topology: topo, Factory: New(combined), Params: params, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// outcomes collects the replies to raw commit requests, by transaction id.
type outcomes map[txn.ID]protocol.Reply

// commit sends t from a new client connected at datacenter dc, at the current virtual time.
func (o outcomes) commit(t *testing.T, s *sim.Sim, dc int, tx *txn.Txn) {
	t.Helper()
	conn, err := s.Connect(tx.ID.Client(), protocol.NodeID(dc))
	if err != nil {
		t.Fatal(err)
	}
	conn.Call(protocol.Request{Seq: 1, Kind: protocol.Commit, Txn: tx}, func(r protocol.Reply) { o[tx.ID] = r })
}

func rw(id txn.ID, reads []string, writes []string) *txn.Txn {
	t := &txn.Txn{ID: id}
	for _, k := range reads {
		t.Reads = append(t.Reads, txn.Read{Key: k})
	}
	for _, k := range writes {
		t.Writes = append(t.Writes, txn.Write{Key: k, Value: []byte(id.String())})
	}
	return t
}

// majorityRTTMs is the RTT from dc to the closest majority (itself included).
func majorityRTTMs(topo *topology.Topology, dc int) float64 {
	var rtts []float64
	for o := range topo.N() {
		if o != dc {
			rtts = append(rtts, topo.RTTMs[dc][o])
		}
	}
	slices.Sort(rtts)
	return rtts[topo.N()/2+1-2]
}

// TestUncontendedLatency is §7.4: with exact delays and one client in one datacenter at a
// time, a commit takes Phase 1 and Phase 2 to the closest majority, 2 × RTT_majority (the
// proposer applies as soon as it learns the decision). bench.Run places clients in every
// datacenter, so this test drives the simulator directly with one sequential client.
func TestUncontendedLatency(t *testing.T) {
	for _, name := range []string{"table4.1", "aws-helios"} {
		for _, combined := range []bool{false, true} {
			topo := mustPreset(t, name)
			for dc := range topo.N() {
				t.Run(fmt.Sprintf("%s/combined=%v/%s", name, combined, topo.DCs[dc]), func(t *testing.T) {
					s := newSim(t, topo, combined, nil)
					conn, err := s.Connect(1, protocol.NodeID(dc))
					if err != nil {
						t.Fatal(err)
					}
					const count = 20
					var lat []int64
					var send func(i int)
					send = func(i int) {
						if i == count {
							return
						}
						id := txn.NewID(1, uint32(i+1))
						tx := rw(id, []string{fmt.Sprintf("r%d", i)}, []string{fmt.Sprintf("w%d", i)})
						start := s.NowUs()
						conn.Call(protocol.Request{Seq: uint64(i + 1), Kind: protocol.Commit, Txn: tx}, func(r protocol.Reply) {
							if r.Status != txn.Committed {
								t.Errorf("%s: %v %s", id, r.Status, r.Reason)
							}
							lat = append(lat, s.NowUs()-start)
							send(i + 1)
						})
					}
					s.After(dc, 0, func() { send(0) })
					s.RunUntil(60_000_000)
					if len(lat) != count {
						t.Fatalf("%d of %d transactions decided", len(lat), count)
					}
					want := 2 * majorityRTTMs(topo, dc)
					var sum int64
					for _, l := range lat {
						sum += l
					}
					mean := float64(sum) / count / 1000
					if math.Abs(mean-want) > 1 {
						t.Errorf("mean latency %.2f ms, want 2 × RTT to the closest majority = %.0f ms", mean, want)
					}
				})
			}
		}
	}
}

// twoDCs submits t1 at A and t2 at B of table4.1 at the same time, both reading at position 0,
// and returns the replies and replica A.
func twoDCs(t *testing.T, combined bool, t1, t2 *txn.Txn) (outcomes, *sim.Sim) {
	t.Helper()
	s := newSim(t, mustPreset(t, "table4.1"), combined, nil)
	o := outcomes{}
	o.commit(t, s, 0, t1)
	o.commit(t, s, 1, t2)
	s.RunUntil(10_000_000)
	if len(o) != 2 {
		t.Fatalf("%d of 2 transactions decided", len(o))
	}
	for i := range 3 {
		if s.Store(protocol.NodeID(i)).Seq() != s.Store(0).Seq() {
			t.Fatalf("replica %d applied %d transactions, replica 0 %d", i, s.Store(protocol.NodeID(i)).Seq(), s.Store(0).Seq())
		}
	}
	return o, s
}

// TestMegastoreLoserAborts is §7.4: two transactions from different datacenters read at
// position 0; exactly one wins position 1 and the other aborts, although they do not conflict.
func TestMegastoreLoserAborts(t *testing.T) {
	t1 := rw(txn.NewID(1, 1), []string{"x"}, []string{"a"})
	t2 := rw(txn.NewID(2, 1), []string{"y"}, []string{"b"})
	o, s := twoDCs(t, false, t1, t2)
	committed := 0
	for _, r := range o {
		switch {
		case r.Status == txn.Committed:
			committed++
		case r.Reason != ReasonLostPosition:
			t.Errorf("loser aborted for %q, want %q", r.Reason, ReasonLostPosition)
		}
	}
	if committed != 1 {
		t.Fatalf("%d committed, want exactly 1: %+v", committed, o)
	}
	if got := s.Replica(0).(*Replica).log; len(got) != 1 || len(got[0]) != 1 {
		t.Errorf("log %v, want one position holding one transaction", got)
	}
}

// TestPaxosCPPromotion is §7.4: the loser of position 1 is promoted to position 2 and commits
// when the winner writes nothing it reads or writes, and aborts when it does.
func TestPaxosCPPromotion(t *testing.T) {
	t.Run("no-conflict", func(t *testing.T) {
		t1 := rw(txn.NewID(1, 1), []string{"x"}, []string{"a"})
		t2 := rw(txn.NewID(2, 1), []string{"y"}, []string{"b"})
		o, s := twoDCs(t, true, t1, t2)
		for id, r := range o {
			if r.Status != txn.Committed {
				t.Errorf("%s: %v (%s), want committed", id, r.Status, r.Reason)
			}
		}
		if got := s.Replica(0).(*Replica).log; len(got) != 2 || len(got[0]) != 1 || len(got[1]) != 1 {
			t.Errorf("log %v, want the winner at position 1 and the promoted loser at 2", got)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		// Each writes what the other reads: whichever loses conflicts with the winner.
		t1 := rw(txn.NewID(1, 1), []string{"x"}, []string{"y"})
		t2 := rw(txn.NewID(2, 1), []string{"y"}, []string{"x"})
		o, _ := twoDCs(t, true, t1, t2)
		committed := 0
		for _, r := range o {
			switch {
			case r.Status == txn.Committed:
				committed++
			case r.Reason != txn.ReasonRemoteConflict:
				t.Errorf("loser aborted for %q, want %q", r.Reason, txn.ReasonRemoteConflict)
			}
		}
		if committed != 1 {
			t.Fatalf("%d committed, want exactly 1: %+v", committed, o)
		}
	})
}

// TestPaxosCPCombination is §7.4: two non-conflicting transactions queued at one datacenter are
// combined into one position and both commit; conflicting ones take a position each.
func TestPaxosCPCombination(t *testing.T) {
	for _, tc := range []struct {
		name      string
		t2Writes  []string
		positions int
	}{
		{"non-conflicting", []string{"b"}, 1},
		{"conflicting", []string{"a"}, 2}, // both write a: a position each, in FIFO order
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, mustPreset(t, "aws-helios"), true, nil)
			o := outcomes{}
			o.commit(t, s, 0, rw(txn.NewID(1, 1), []string{"x"}, []string{"a"}))
			o.commit(t, s, 0, rw(txn.NewID(2, 1), []string{"y"}, tc.t2Writes))
			s.RunUntil(10_000_000)
			for id, r := range o {
				if r.Status != txn.Committed {
					t.Errorf("%s: %v (%s), want committed", id, r.Status, r.Reason)
				}
			}
			if len(o) != 2 {
				t.Fatalf("%d of 2 decided", len(o))
			}
			if got := s.Replica(4).(*Replica).log; len(got) != tc.positions {
				t.Errorf("%d log positions at S, want %d", len(got), tc.positions)
			}
		})
	}
}

// TestChapter3Load is the Ch. 3 setting (§5.3, §6.3): COVIS, 5 open-loop clients per datacenter
// at 2 transactions per second each, uniform keys over 1000. The serial log's capacity is far
// below the offered 50 tx/s, so queueing drives plain Paxos latency to seconds; Paxos-CP commits
// more.
func TestChapter3Load(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	opts := bench.Defaults()
	topo, _ := topology.Preset("aws-mf")
	opts.Topology = topo
	opts.ClientsPerDC = 5
	opts.RatePerClient = 2
	w := opts.Workload.(workload.TYCSB)
	w.Keys, w.Distribution = 1000, workload.DistUniform
	opts.Workload = w
	opts.DurationUs, opts.WarmupUs = 20_000_000, 2_000_000
	mean := map[string]float64{}
	commits := map[string]int{}
	for _, proto := range []string{"paxos-commit", "paxos-cp"} {
		res, err := bench.Run(opts, proto)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Checker.OK {
			t.Fatalf("%s: %s", proto, res.Checker.Summary())
		}
		var sum float64
		for _, dc := range res.DCs {
			sum += dc.Latency.Mean * float64(dc.Committed)
			commits[proto] += dc.Committed
			t.Logf("%s %s: mean %.0f ms, p99 %.0f ms, %d committed, abort rate %.2f", proto, dc.Name, dc.Latency.Mean, dc.Latency.P99, dc.Committed, dc.AbortRate)
		}
		if commits[proto] > 0 {
			mean[proto] = sum / float64(commits[proto])
		}
		t.Logf("%s: mean commit latency %.0f ms over %d commits", proto, mean[proto], commits[proto])
	}
	if mean["paxos-commit"] <= 1000 {
		t.Errorf("paxos-commit mean latency %.0f ms, want seconds (> 1000 ms)", mean["paxos-commit"])
	}
	if commits["paxos-cp"] <= commits["paxos-commit"] {
		t.Errorf("paxos-cp committed %d, paxos-commit %d: want more for paxos-cp", commits["paxos-cp"], commits["paxos-commit"])
	}
}

// TestParams checks parameter validation and registration.
func TestParams(t *testing.T) {
	topo := mustPreset(t, "table4.1")
	for _, p := range []protocol.Params{{"bogus": "1"}, {"retry": "x"}, {"retry": "0s"}, {"max_promotions": "-1"}} {
		if _, err := sim.New(sim.Config{Topology: topo, Factory: New(true), Params: p}); err == nil {
			t.Errorf("params %v accepted", p)
		}
	}
	if _, err := sim.New(sim.Config{Topology: topo, Factory: New(true), Params: protocol.Params{"retry": "300ms", "max_promotions": "3"}}); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"paxos-commit", "paxos-cp"} {
		if _, err := registry.Lookup(name); err != nil {
			t.Error(err)
		}
	}
}
