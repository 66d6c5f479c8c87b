package fastccs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/topology"
)

// TestWOTRetrySameID: B's answer is lost; after tx_timeout the client sends B the same WriteReq
// again (spec A17), and B answers from its decided record without a new sequence number.
func TestWOTRetrySameID(t *testing.T) {
	s := newScenario(t, nil)
	c1 := s.client(pA)
	h := c1.Write(map[string]string{keyA: "a1", keyB: "b1"})
	lost := func(e tccscript.Envelope) bool { return e.Between(node(pB), cli(c1)) }
	for s.w.Deliver(func(e tccscript.Envelope) bool { return !lost(e) }) {
	}
	if s.w.Drop(lost) != 1 || h.Done() {
		t.Fatalf("B's answer was not lost: done %v", h.Done())
	}
	s.w.Advance(5_000_000)
	if inFlight[*WriteReq](s, cli(c1), node(pA)) != 0 {
		t.Fatal("the retry went to A, which had answered")
	}
	if m := deliver[*WriteReq](s, cli(c1), node(pB)); m.Tx != h.ID() {
		t.Fatalf("retry with a new id %v", m.Tx)
	}
	s.deliverClient(c1)
	if h.WriteResult().Status != txn.Committed || s.rep(pB).sn != 1 {
		t.Fatalf("%+v, sn_B %d", h.WriteResult(), s.rep(pB).sn)
	}
	s.wantVC(c1, VC{1, 1})
	s.check()
}

// TestWOTUnknownAfterRetries: a WOT that never hears from every participant reports Unknown
// after `retries` retries and leaves the client clock alone; its coordinator aborts it.
func TestWOTUnknownAfterRetries(t *testing.T) {
	s := newScenario(t, protocol.Params{ParamRetries: "1"})
	c1 := s.client(pA)
	h := c1.Write(map[string]string{keyA: "a1", keyB: "b1"})
	cut := func(e tccscript.Envelope) bool { return e.Between(cli(c1), node(pB)) || e.To.Client == c1.ID() }
	for range 2 {
		for s.w.Deliver(func(e tccscript.Envelope) bool { return !cut(e) }) {
		}
		s.w.Drop(cut)
		s.w.Advance(5_000_000)
		s.check()
	}
	if !h.Done() || h.WriteResult().Status != txn.Unknown {
		t.Fatalf("done %v, %+v", h.Done(), h.WriteResult())
	}
	s.wantVC(c1, VC{0, 0})
	if o := s.rep(pA).decided[h.ID()]; o == nil || o.committed {
		t.Fatalf("A did not abort T1: %+v", o)
	}
	s.wantSVC(pA, VC{1, 0}) // the hole
}

// TestROTRestart: a ROT whose request was lost starts again from round 1 after tx_timeout, and
// ignores the answers of the abandoned attempt.
func TestROTRestart(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2 := s.client(pA), s.client(pA)
	s.s1(c1)
	h := c1.Read(keyA, keyB)
	deliver[*MultigetSlice](s, cli(c1), node(pA))
	s.w.Drop(func(e tccscript.Envelope) bool { return e.Between(cli(c1), node(pB)) })
	s.w.Advance(5_000_000)
	if inFlight[*MultigetSlice](s, cli(c1), node(pA)) != 1 || inFlight[*MultigetSlice](s, cli(c1), node(pB)) != 1 {
		t.Fatalf("no restart: %v", s.w.InFlight())
	}
	deliver[*MultigetSliceResp](s, node(pA), cli(c1)) // the abandoned attempt's answer
	if h.Done() {
		t.Fatal("an abandoned attempt's answer counted")
	}
	s.deliverClient(c1)
	if got := h.Values(); !h.Done() || got[0] != "a1" || got[1] != "b1" || h.ReadResult().Rounds != 1 {
		t.Fatalf("%q, %+v", got, h.ReadResult())
	}
	s.read(c2, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
}

// TestTreeGossip: in tree mode a period costs 2(N−1) messages instead of N(N−1), and one wave
// spreads every partition's entry to every other.
func TestTreeGossip(t *testing.T) {
	const n = 20
	w := tccscript.New(t, New, NewClient, n, protocol.Params{ParamGossip: gossipTree, ParamGossipFanout: "3"})
	c := w.Client()
	want := make(VC, n)
	for p := range n {
		key := keyOn(p, n)
		h := c.Write(map[string]string{key: "v"})
		w.DeliverAll()
		if h.WriteResult().Status != txn.Committed {
			t.Fatalf("write of %s: %+v", key, h.WriteResult())
		}
		want[p] = 1
	}
	for period := range 3 {
		w.Advance(5_000)
		sent := 0
		for in := w.InFlight(); len(in) > 0; in = w.InFlight() {
			if _, ok := in[0].Msg.(*Gossip); ok {
				sent++
			}
			w.Deliver(func(tccscript.Envelope) bool { return true })
		}
		if sent != 2*(n-1) {
			t.Errorf("period %d: %d gossip messages, want %d", period, sent, 2*(n-1))
		}
		for p := range n {
			if got := w.Replica(p).(*Replica).svc; !got.Equal(want) {
				t.Fatalf("period %d: svc of %d = %v, want %v", period, p, got, want)
			}
		}
	}
}

// keyOn returns a key that lives on partition p of n.
func keyOn(p, n int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("k%d", i); tcc.PartitionOf(k, n) == p {
			return k
		}
	}
}

// TestParams: malformed parameters are refused with the parameter named, and so is a
// deployment over several datacenters.
func TestParams(t *testing.T) {
	for _, tc := range []struct{ params protocol.Params }{
		{protocol.Params{"bogus": "1"}},
		{protocol.Params{ParamGossip: "ring"}},
		{protocol.Params{ParamTxTimeout: "soon"}},
		{protocol.Params{ParamStabInterval: "0s"}},
		{protocol.Params{ParamGossipFanout: "0"}},
		{protocol.Params{ParamRetries: "-1"}},
		{protocol.Params{ParamMergeClockOnWrite: "maybe"}},
	} {
		var name string
		for k := range tc.params {
			name = k
		}
		if _, err := parseSettings(tc.params); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v", tc.params, err)
		}
	}
	topo := &topology.Topology{Name: "two", DCs: []string{"x", "y"}, RTTMs: [][]float64{{0, 10}, {10, 0}}, StdDevMs: [][]float64{{0, 0}, {0, 0}}}
	if _, err := New(protocol.Config{Nodes: tcc.PartitionedNodes(2, 2), Topology: topo}, nil); err == nil {
		t.Error("two datacenters accepted")
	}
}
