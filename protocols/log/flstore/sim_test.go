package flstore_test

import (
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// TestStandaloneInSimulator runs standalone FLStore (3 maintainers, B = 20, an indexer) in the
// simulator: 6 clients append to random maintainers, every third append ordered after the
// client's previous one (MinLId), while maintainer 2 crashes for 200 ms. After every 5 ms the
// heads of log must cover filled positions only and never fall; at the end every answered
// append is at its position exactly once, explicit orders hold (CH-I8), the head of the log
// reaches the last filled position (no-op fill), and a read of the whole log returns exactly
// the appends.
func TestStandaloneInSimulator(t *testing.T) { runStandalone(t, flstore.Factory) }

// TestCheckpointRoundTrip is TestStandaloneInSimulator with every maintainer and the indexer
// shadowed by a replica restored from its checkpoint every few inputs (internal/checkpointtest):
// the restored stage must re-encode to the same checkpoint and answer every later input exactly
// as the original.
func TestCheckpointRoundTrip(t *testing.T) {
	e, err := registry.Lookup("flstore")
	if err != nil {
		t.Fatal(err)
	}
	factory, result := checkpointtest.Shadow(e)
	runStandalone(t, factory)
	restored, err := result()
	if err != nil {
		t.Fatal(err)
	}
	if restored < 10 {
		t.Fatalf("only %d checkpoints restored", restored)
	}
	t.Logf("%d checkpoints restored and followed", restored)
}

func runStandalone(t *testing.T, factory protocol.Factory) {
	params := protocol.Params{"b": "20", "noop_after": "20ms"}
	l, err := flstore.LayoutFromParams(1, flstore.Roles, params, map[flstore.Role]int{flstore.Maintainer: 3, flstore.Indexer: 1})
	if err != nil {
		t.Fatal(err)
	}
	topo := &topology.Topology{Name: "one", DCs: []string{"X"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	s, err := sim.New(sim.Config{Topology: topo, Nodes: l.Nodes, Factory: factory, Params: params, Seed: 3,
		ClientHopUs: 500, IntraDCUs: 250, Faults: []sim.Fault{{Kind: sim.NodeCrash, Node: 2, StartUs: 100_000, EndUs: 300_000}}})
	if err != nil {
		t.Fatal(err)
	}
	ms := l.Active(0, flstore.Maintainer)
	type appended struct {
		client    txn.ClientID
		seq       uint64
		lid, minL uint64
	}
	var acks []appended
	var clients []*flstore.Client
	for id := txn.ClientID(1); id <= 6; id++ {
		c, _ := s.Connect(id, ms[0])
		// Every client but the first avoids the crashing maintainer, so appends keep flowing.
		to := ms
		if id > 1 {
			to = ms[:2]
		}
		cl := flstore.NewClient(flstore.ClientConfig{AppendTo: to, Maintainers: ms[:2], Indexers: l.Active(0, flstore.Indexer),
			Rand: rand.New(rand.NewPCG(uint64(id), 1))}, c)
		clients = append(clients, cl)
		var seq, last uint64
		var next func()
		next = func() {
			if c.NowUs() > 500_000 {
				return
			}
			seq++
			min := uint64(0)
			if seq%3 == 0 {
				min = last
			}
			done := func(res flstore.AppendResult, err error) {
				if err != nil {
					t.Error(err)
					return
				}
				acks = append(acks, appended{id, seq, res.LId, min})
				last = res.LId
				c.After(1000, next)
			}
			if min > 0 {
				cl.AppendAfter(min, []byte("r"), []flstore.Tag{{Name: "k"}}, done)
			} else {
				cl.Append([]byte("r"), []flstore.Tag{{Name: "k"}}, nil, done)
			}
		}
		c.After(0, next)
	}
	prevHL := map[protocol.NodeID]uint64{}
	filled := func() map[uint64]*flstore.Record {
		all := map[uint64]*flstore.Record{}
		for _, m := range ms {
			for lid, r := range protocol.Innermost(s.Replica(m)).(*flstore.LogMaintainer).State().Filled {
				if all[lid] != nil {
					t.Fatalf("position %d held twice", lid)
				}
				all[lid] = r
			}
		}
		return all
	}
	for now := int64(5000); now <= 1_500_000; now += 5000 {
		s.RunUntil(now)
		all := filled()
		for _, m := range ms {
			hl := protocol.Innermost(s.Replica(m)).(*flstore.LogMaintainer).State().HL
			if hl < prevHL[m] {
				t.Fatalf("maintainer %d's head of log fell from %d to %d", m, prevHL[m], hl)
			}
			prevHL[m] = hl
			for p := uint64(1); p <= hl; p++ {
				if all[p] == nil {
					t.Fatalf("at %d µs: maintainer %d's head of log %d over the gap at %d", now, m, hl, p)
				}
			}
		}
	}
	all := filled()
	if len(acks) < 300 {
		t.Fatalf("only %d appends answered", len(acks))
	}
	seen := map[[2]uint64]bool{}
	for _, a := range acks {
		r := all[a.lid]
		if r == nil || r.Client != a.client || r.AppendSeq != a.seq || seen[[2]uint64{uint64(a.client), a.seq}] {
			t.Fatalf("client %d's append %d answered at %d, which holds %+v", a.client, a.seq, a.lid, r)
		}
		seen[[2]uint64{uint64(a.client), a.seq}] = true
		if a.lid <= a.minL {
			t.Fatalf("CH-I8: append after %d got %d", a.minL, a.lid)
		}
	}
	maxFilled := uint64(0)
	for lid := range all {
		maxFilled = max(maxFilled, lid)
	}
	for _, m := range ms {
		if hl := protocol.Innermost(s.Replica(m)).(*flstore.LogMaintainer).State().HL; hl != maxFilled {
			t.Fatalf("maintainer %d: head of log %d, last filled position %d", m, hl, maxFilled)
		}
	}
	var got []*flstore.Record
	clients[0].Read(1, maxFilled, func(rs []*flstore.Record, err error) {
		if err != nil {
			t.Error(err)
		}
		got = rs
	})
	s.RunUntil(s.NowUs() + 10_000)
	if len(got) != len(acks) {
		t.Fatalf("a read of the whole log returned %d records, %d appends were answered", len(got), len(acks))
	}
}
