package fastccs

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// drain returns what partition p recorded since the last drain, failing on dropped events.
func (s *scenario) drain(p int) []tcc.Visibility {
	s.t.Helper()
	evs, dropped := s.rep(p).DrainVisibility(nil)
	if dropped != 0 {
		s.t.Fatalf("partition %c dropped %d visibility events", 'A'+p, dropped)
	}
	return evs
}

func (s *scenario) wantVisibility(p int, want ...tcc.Visibility) {
	s.t.Helper()
	if got := s.drain(p); !slices.Equal(got, want) {
		s.t.Fatalf("visibility at %c = %+v, want %+v", 'A'+p, got, want)
	}
}

// startTracking turns visibility tracking on at both partitions.
func (s *scenario) startTracking() {
	s.wantVisibility(pA)
	s.wantVisibility(pB)
}

// TestVisibilityLagGossip is S1 with periodic gossip every 5 ms: T1 commits at A and B at
// t = 1 ms; the gossip round at t = 5 ms makes svc = (1,1) at both, so the lag is 4 ms at each
// partition and the WOT's (from A's decision at 1 ms) 4 ms.
func TestVisibilityLagGossip(t *testing.T) {
	s := newScenario(t, protocol.Params{ParamGossip: gossipAll, ParamStabInterval: "5ms"})
	s.startTracking()
	c1 := s.client(pA)
	s.w.Advance(1_000)
	h := s.s1(c1)
	s.wantVisibility(pA) // committed, not visible: svc_A = (1,0)
	s.wantVisibility(pB)
	s.w.Advance(4_000) // the gossip timers fire at 5 ms
	s.deliverAll()
	s.wantSVC(pA, VC{1, 1})
	s.wantSVC(pB, VC{1, 1})
	s.wantVisibility(pA, tcc.Visibility{Tx: h.ID(), CommitUs: 1_000, VisibleUs: 5_000, Participants: 2, DecidedUs: 1_000})
	s.wantVisibility(pB, tcc.Visibility{Tx: h.ID(), CommitUs: 1_000, VisibleUs: 5_000})
}

// TestVisibilityLagPerPartition: gossip off; B's entry reaches A at 3 ms (lag 2 ms at A), A's
// reaches B at 6 ms (lag 5 ms at B): the WOT is visible everywhere 5 ms after its decision.
func TestVisibilityLagPerPartition(t *testing.T) {
	s := newScenario(t, nil)
	s.startTracking()
	c1 := s.client(pA)
	s.w.Advance(1_000)
	h := s.s1(c1)
	s.w.Advance(2_000)
	s.gossip(pB, pA)
	s.wantVisibility(pA, tcc.Visibility{Tx: h.ID(), CommitUs: 1_000, VisibleUs: 3_000, Participants: 2, DecidedUs: 1_000})
	s.wantVisibility(pB)
	s.w.Advance(3_000)
	s.gossip(pA, pB)
	s.wantVisibility(pA)
	s.wantVisibility(pB, tcc.Visibility{Tx: h.ID(), CommitUs: 1_000, VisibleUs: 6_000})
	s.check()
}

// TestVisibilityLagClientClock is S3 timed: with gossip off, c1's read 4 ms after the commit
// carries vc (1,1) to both partitions and makes T1 visible there.
func TestVisibilityLagClientClock(t *testing.T) {
	s := newScenario(t, nil)
	s.startTracking()
	c1 := s.client(pA)
	h := s.s1(c1)
	s.w.Advance(4_000)
	s.read(c1, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.wantVisibility(pA, tcc.Visibility{Tx: h.ID(), CommitUs: 0, VisibleUs: 4_000, Participants: 2})
	s.wantVisibility(pB, tcc.Visibility{Tx: h.ID(), CommitUs: 0, VisibleUs: 4_000})
	s.check()
}

// TestVisibilityNeedsTheWholeVector: after S1, c1 (vc (1,1)) writes a alone. Its ct (2,1) is
// covered at A's own entry on commit, but A still has svc_A[B] = 0: it becomes visible only
// when B's entry arrives. A WOT whose ct is covered on commit is visible at once (lag 0).
func TestVisibilityNeedsTheWholeVector(t *testing.T) {
	s := newScenario(t, nil)
	c1 := s.client(pA)
	s.s1(c1)
	s.startTracking() // T1 committed before tracking: never reported
	s.w.Advance(1_000)
	h2 := s.write(c1, map[string]string{keyA: "a2"})
	s.wantSVC(pA, VC{2, 0})
	s.wantVisibility(pA)
	s.w.Advance(1_000)
	s.gossip(pB, pA)
	s.wantVisibility(pA, tcc.Visibility{Tx: h2.ID(), CommitUs: 1_000, VisibleUs: 2_000, Participants: 1, DecidedUs: 1_000})
	// Now svc_A = (2,1) covers c1's clock (2,1): the next write of a is visible on commit.
	h3 := s.write(c1, map[string]string{keyA: "a3"})
	s.wantVisibility(pA, tcc.Visibility{Tx: h3.ID(), CommitUs: 2_000, VisibleUs: 2_000, Participants: 1, DecidedUs: 2_000})
	s.wantVisibility(pB)
	s.check()
}

// TestVisibilityInOrderCommit: T2 is decided at A before T1 but waits for it in the commit
// queue; its local commit (and so its lag's start) is when the queue applies it, while the
// coordinator's event keeps the decision time.
func TestVisibilityInOrderCommit(t *testing.T) {
	s := newScenario(t, nil)
	s.startTracking()
	c1, c2 := s.client(pB), s.client(pA)
	h1 := c1.Write(map[string]string{keyA: "a1", keyB: "b1"}) // coordinated by B
	deliver[*WriteReq](s, cli(c1), node(pA))                  // sn_A = 1 for T1
	h2 := c2.Write(map[string]string{keyA: "x"})              // sn_A = 2, decided at once
	deliver[*WriteReq](s, cli(c2), node(pA))
	if s.drain(pA) != nil || s.rep(pA).svc[pA] != 0 {
		t.Fatal("T2 applied before T1")
	}
	s.w.Advance(3_000)
	deliver[*WriteReq](s, cli(c1), node(pB))
	deliver[*Prepared](s, node(pA), node(pB)) // B decides T1 and commits it (svc_B = (0,1))
	deliver[*Commit](s, node(pB), node(pA))   // A applies T1 then T2: svc_A = (2,0)
	s.wantSVC(pA, VC{2, 0})
	// T1's ct (1,1) waits for svc_A[B]; T2's ct (2,0) is visible at once.
	s.wantVisibility(pA, tcc.Visibility{Tx: h2.ID(), CommitUs: 3_000, VisibleUs: 3_000, Participants: 1, DecidedUs: 0})
	s.w.Advance(1_000)
	s.gossip(pB, pA)
	s.wantVisibility(pA, tcc.Visibility{Tx: h1.ID(), CommitUs: 3_000, VisibleUs: 4_000})
	s.gossip(pA, pB)
	s.wantVisibility(pB, tcc.Visibility{Tx: h1.ID(), CommitUs: 3_000, VisibleUs: 4_000, Participants: 2, DecidedUs: 3_000})
	s.deliverAll()
	if !h1.Done() || !h2.Done() || h1.WriteResult().Status != txn.Committed || h2.WriteResult().Status != txn.Committed {
		t.Fatalf("T1 %+v, T2 %+v", h1.WriteResult(), h2.WriteResult())
	}
	s.check()
}
