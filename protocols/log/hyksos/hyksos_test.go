package hyksos

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// fig73 is a two-datacenter Chariots deployment in the simulator (A and B of table4.1, 30 ms
// apart) with one Hyksos client in each.
type fig73 struct {
	t      *testing.T
	s      *sim.Sim
	cfg    chariots.Config
	stores []*Store
	chk    *chariots.Checker
}

func newFig73(t *testing.T) *fig73 {
	topo, _ := topology.Preset("table4.1")
	topo, _ = topology.Subset(topo, []string{"A", "B"})
	params := protocol.Params{}
	cfg, err := chariots.ParseConfig(2, params, 30)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Topology: topo, Nodes: cfg.Layout.Nodes, Factory: chariots.Factory, Params: params, Seed: 1,
		ClientHopUs: 500, IntraDCUs: 250})
	if err != nil {
		t.Fatal(err)
	}
	f := &fig73{t: t, s: s, cfg: cfg, chk: chariots.NewChecker()}
	l := cfg.Layout
	for dc := range 2 {
		c, _ := s.Connect(txn.ClientID(dc+1), l.Active(dc, flstore.Batcher)[0])
		f.stores = append(f.stores, New(flstore.NewClient(flstore.ClientConfig{AppendTo: l.Active(dc, flstore.Batcher),
			Maintainers: l.Active(dc, flstore.Maintainer), Indexers: l.Active(dc, flstore.Indexer), Rand: rand.New(rand.NewPCG(1, uint64(dc)))}, c)))
	}
	return f
}

// run advances the simulation by us, checking the invariants every millisecond.
func (f *fig73) run(us int64) {
	f.t.Helper()
	for end := f.s.NowUs() + us; f.s.NowUs() < end; {
		f.s.RunUntil(min(end, f.s.NowUs()+1000))
		if err := f.chk.Check(chariots.Take(f.cfg, f.s.Replica)); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fig73) put(dc int, key string, v int) {
	f.stores[dc].Put(key, []byte(fmt.Sprint(v)), func(_ flstore.AppendResult, err error) {
		if err != nil {
			f.t.Error(err)
		}
	})
}

// log renders datacenter dc's log as "key=value ..." in position order.
func (f *fig73) log(dc int) string {
	snap := chariots.Take(f.cfg, f.s.Replica)
	out := ""
	for l := uint64(1); snap.Logs[dc][l] != nil; l++ {
		r := snap.Logs[dc][l]
		out += fmt.Sprintf("%s=%s ", r.Tags[0].Name[2:], r.Body)
	}
	return out
}

// getTxn reads keys at dc as of head of log i (0: the current head) and renders the values.
func (f *fig73) getTxn(dc int, i uint64, keys ...string) string {
	var got string
	read := func(rs []Read, _ uint64, err error) {
		if err != nil {
			f.t.Fatal(err)
		}
		for _, r := range rs {
			got += string(r.Value) + " "
		}
	}
	if i == 0 {
		f.stores[dc].GetTxn(keys, read)
	} else {
		f.stores[dc].log.Head(func(h flstore.HLResult, err error) {
			if err != nil || h.HL < i {
				f.t.Fatalf("head of log %d (%v), want at least %d", h.HL, err, i)
			}
			h.HL = i
			f.stores[dc].GetTxnAt(h, keys, read)
		})
	}
	f.s.RunUntil(f.s.NowUs() + 5000)
	return got
}

// TestCHS6Figure7_3 is scenario CH-S6 (source Fig. 7.3, hosts per spec A12): x=10 and z=40 are
// put at A, y=20 and x=30 at B. A's log: x=10 y=20 x=30 z=40; B's: y=20 x=30 x=10 z=40. Get(x)
// is 30 at A and 10 at B. Then A puts y=50 and B z=60 concurrently: GET_TXN as of position 4
// sees neither; after the exchange, as of 6, both — and x stays divergent (concurrent puts).
func TestCHS6Figure7_3(t *testing.T) {
	const a, b = 0, 1
	f := newFig73(t)
	f.put(a, "x", 10)
	f.put(b, "y", 20)
	f.run(3000)
	f.put(b, "x", 30)
	f.run(60_000) // B's puts reach A after A's x=10
	f.put(a, "z", 40)
	f.run(60_000)
	if got, want := f.log(a), "x=10 y=20 x=30 z=40 "; got != want {
		t.Fatalf("A's log %q, want %q", got, want)
	}
	if got, want := f.log(b), "y=20 x=30 x=10 z=40 "; got != want {
		t.Fatalf("B's log %q, want %q", got, want)
	}
	// Time 1.
	if got := f.getTxn(a, 0, "x"); got != "30 " {
		t.Fatalf("Get(x) at A = %q, want 30", got)
	}
	if got := f.getTxn(b, 0, "x"); got != "10 " {
		t.Fatalf("Get(x) at B = %q, want 10", got)
	}
	// Time 2: concurrent puts, read as of position 4 before the exchange.
	f.put(a, "y", 50)
	f.put(b, "z", 60)
	f.run(5000)
	if got := f.getTxn(a, 4, "x", "y", "z"); got != "30 20 40 " {
		t.Fatalf("GET_TXN at A as of 4 = %q, want 30 20 40", got)
	}
	if got := f.getTxn(b, 4, "x", "y", "z"); got != "10 20 40 " {
		t.Fatalf("GET_TXN at B as of 4 = %q, want 10 20 40", got)
	}
	// Time 3: after the exchange.
	f.run(100_000)
	if got, want := f.log(a), "x=10 y=20 x=30 z=40 y=50 z=60 "; got != want {
		t.Fatalf("A's log %q, want %q", got, want)
	}
	if got, want := f.log(b), "y=20 x=30 x=10 z=40 z=60 y=50 "; got != want {
		t.Fatalf("B's log %q, want %q", got, want)
	}
	if got := f.getTxn(a, 0, "x", "y", "z"); got != "30 50 60 " {
		t.Fatalf("GET_TXN at A = %q, want 30 50 60", got)
	}
	if got := f.getTxn(b, 0, "x", "y", "z"); got != "10 50 60 " {
		t.Fatalf("GET_TXN at B = %q, want 10 50 60", got)
	}
}
