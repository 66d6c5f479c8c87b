package fastccs

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/checker"
)

// The scenarios of spec §5.2: partitions A (0) and B (1); keys a and a' (here "a2") live on A,
// b on B (tcc.PartitionOf with N = 2). Gossip is off unless a step gossips by hand.
const (
	keyA  = "a"
	keyA2 = "a2" // the spec's a'
	keyB  = "b"
	pA    = 0
	pB    = 1
)

// scenario is one hand-driven world of two partitions.
type scenario struct {
	t       *testing.T
	w       *tccscript.World
	clients []*Client
	watch   *watch
}

func newScenario(t *testing.T, params protocol.Params) *scenario {
	p := protocol.Params{ParamGossip: gossipOff}
	for k, v := range params {
		p[k] = v
	}
	s := &scenario{t: t, w: tccscript.New(t, New, NewClient, 2, p), watch: newWatch()}
	for _, k := range []string{keyA, keyA2} {
		if r := s.rep(pA); r.validKeys([]string{k}) != true {
			t.Fatalf("key %s is not on A", k)
		}
	}
	if !s.rep(pB).validKeys([]string{keyB}) {
		t.Fatal("key b is not on B")
	}
	return s
}

func (s *scenario) rep(p int) *Replica { return s.w.Replica(p).(*Replica) }

func lib(c *tccscript.Client) *Client { return c.Lib().(*Client) }

// client adds a session whose WOTs are coordinated by partition cp.
func (s *scenario) client(cp int) *tccscript.Client {
	c := s.w.Client()
	lib(c).coordinatorOf = func([]int) int { return cp }
	s.clients = append(s.clients, lib(c))
	return c
}

func node(p int) string              { return fmt.Sprintf("p%d", p) }
func cli(c *tccscript.Client) string { return fmt.Sprintf("c%d", c.ID()) }

// deliver delivers the oldest deliverable item of type T from → to and returns it; it fails the
// test if there is none.
func deliver[T any](s *scenario, from, to string) T {
	s.t.Helper()
	var target any
	seen := map[[2]string]bool{}
	for _, e := range s.w.InFlight() {
		link := [2]string{e.From.String(), e.To.String()}
		if _, ok := e.Msg.(T); ok && e.Between(from, to) && !seen[link] {
			target = e.Msg
			break
		}
		seen[link] = true
	}
	if target == nil || !s.w.Deliver(func(e tccscript.Envelope) bool { return e.Msg == target }) {
		var zero T
		s.t.Fatalf("no %T in flight %s→%s: %v", zero, from, to, s.w.InFlight())
	}
	return target.(T)
}

// inFlight counts items of type T in flight from → to.
func inFlight[T any](s *scenario, from, to string) int {
	n := 0
	for _, e := range s.w.InFlight() {
		if _, ok := e.Msg.(T); ok && e.Between(from, to) {
			n++
		}
	}
	return n
}

// deliverClient delivers everything between client c and the partitions until nothing of it
// is left, and returns how many items it delivered.
func (s *scenario) deliverClient(c *tccscript.Client) int {
	n := 0
	for s.w.Deliver(func(e tccscript.Envelope) bool { return e.From.Client == c.ID() || e.To.Client == c.ID() }) {
		n++
	}
	return n
}

// deliverAll delivers everything in flight and returns how many items it delivered.
func (s *scenario) deliverAll() int {
	n := 0
	for s.w.Deliver(func(tccscript.Envelope) bool { return true }) {
		n++
	}
	return n
}

// gossip delivers svc_from[from] to partition to ("gossip X→Y").
func (s *scenario) gossip(from, to int) {
	s.t.Helper()
	r := s.rep(from)
	r.env.Send(r.nodeOf[to], r.ownEntry())
	deliver[*Gossip](s, node(from), node(to))
}

// read runs a ROT of c, delivering only its own messages, and checks its values and rounds.
func (s *scenario) read(c *tccscript.Client, keys []string, want []string, rounds int) *tccscript.Handle {
	s.t.Helper()
	h := c.Read(keys...)
	s.deliverClient(c)
	if !h.Done() || h.ReadResult().Err != nil {
		s.t.Fatalf("ROT %v of %s did not finish: %v", keys, cli(c), h.ReadResult().Err)
	}
	if got := h.Values(); !slices.Equal(got, want) || h.ReadResult().Rounds != rounds {
		s.t.Fatalf("ROT %v of %s = %q in %d rounds, want %q in %d", keys, cli(c), got, h.ReadResult().Rounds, want, rounds)
	}
	return h
}

// write runs a WOT of c to completion, delivering only its own messages and the partitions'
// messages to each other.
func (s *scenario) write(c *tccscript.Client, kv map[string]string) *tccscript.Handle {
	s.t.Helper()
	h := c.Write(kv)
	for s.w.Deliver(func(e tccscript.Envelope) bool {
		return e.Kind == tccscript.PeerMessage || e.From.Client == c.ID() || e.To.Client == c.ID()
	}) {
	}
	if !h.Done() || h.WriteResult().Status != txn.Committed {
		s.t.Fatalf("WOT %v of %s: done %v, %+v", kv, cli(c), h.Done(), h.WriteResult())
	}
	return h
}

func (s *scenario) wantSVC(p int, want VC) {
	s.t.Helper()
	if got := s.rep(p).svc; !got.Equal(want) {
		s.t.Fatalf("svc_%c = %v, want %v", 'A'+p, got, want)
	}
}

func (s *scenario) wantVC(c *tccscript.Client, want VC) {
	s.t.Helper()
	if got := lib(c).vc; !got.Equal(want) {
		s.t.Fatalf("vc_%s = %v, want %v", cli(c), got, want)
	}
}

// versions returns the versions of key at partition p, committed ones by rank then pending
// ones by sequence number, as "value ct state".
func (s *scenario) versions(p int, key string) []string {
	var out []string
	r := s.rep(p)
	if kv := r.keys[key]; kv != nil {
		for _, v := range kv.list {
			out = append(out, fmt.Sprintf("%s %v committed", v.value, []int64(v.ct)))
		}
	}
	for sn := int64(1); sn <= r.sn; sn++ {
		for _, pt := range r.pending {
			for i, w := range pt.writes {
				if pt.sn == sn && w.Key == key {
					out = append(out, fmt.Sprintf("%s %v pending", w.Value, []int64(pt.versions[i].ct)))
				}
			}
		}
	}
	return out
}

func (s *scenario) wantVersions(p int, key string, want ...string) {
	s.t.Helper()
	if got := s.versions(p, key); !slices.Equal(got, want) {
		s.t.Fatalf("versions of %s at %c = %q, want %q", key, 'A'+p, got, want)
	}
}

func (s *scenario) check() {
	s.t.Helper()
	if err := s.watch.check([]*Replica{s.rep(pA), s.rep(pB)}, s.clients); err != nil {
		s.t.Fatal(err)
	}
}

// s1 runs scenario S1 step by step: c1 (vc (0,0)) writes T1 = {a:=a1, b:=b1} coordinated by A.
func (s *scenario) s1(c1 *tccscript.Client) *tccscript.Handle {
	t := s.t
	t.Helper()
	h := c1.Write(map[string]string{keyA: "a1", keyB: "b1"})
	msgs := 0
	// 1. M5→A: sn_A = 1, a1 pending with temporary ct (1,0), prepared = {A}, size 2.
	deliver[*WriteReq](s, cli(c1), node(pA))
	msgs++
	a := s.rep(pA)
	if p := a.pending[h.ID()]; a.sn != 1 || p == nil || !slices.Equal(p.prepared, []int{pA}) || p.size != 2 {
		t.Fatalf("S1.1: sn_A %d, pending %+v", a.sn, p)
	}
	s.wantVersions(pA, keyA, "a1 [1 0] pending")
	s.check()
	// 2. M5→B: sn_B = 1, b1 pending (0,1); B votes prepared(1, T1) to A.
	deliver[*WriteReq](s, cli(c1), node(pB))
	msgs++
	s.wantVersions(pB, keyB, "b1 [0 1] pending")
	if s.rep(pB).sn != 1 || inFlight[*Prepared](s, node(pB), node(pA)) != 1 {
		t.Fatalf("S1.2: sn_B %d, in flight %v", s.rep(pB).sn, s.w.InFlight())
	}
	s.check()
	// 3. prepared→A: ct (1,1); A sends commit to B and commits locally: svc_A = (1,0), reply (1,1).
	if p := deliver[*Prepared](s, node(pB), node(pA)); p.SN != 1 {
		t.Fatalf("S1.3: prepared %+v", p)
	}
	msgs++
	s.wantVersions(pA, keyA, "a1 [1 1] committed")
	s.wantSVC(pA, VC{1, 0})
	if inFlight[*Commit](s, node(pA), node(pB)) != 1 || inFlight[*WriteResp](s, node(pA), cli(c1)) != 1 {
		t.Fatalf("S1.3: in flight %v", s.w.InFlight())
	}
	s.check()
	// 4. commit→B: b1 ct (1,1), svc_B = (0,1), reply ∅.
	if c := deliver[*Commit](s, node(pA), node(pB)); !c.CT.Equal(VC{1, 1}) {
		t.Fatalf("S1.4: commit %+v", c)
	}
	msgs++
	s.wantVersions(pB, keyB, "b1 [1 1] committed")
	s.wantSVC(pB, VC{0, 1})
	s.check()
	// 5. Both replies: vc_c1 = (1,1).
	if r := deliver[*WriteResp](s, node(pA), cli(c1)); !r.Committed || !r.CT.Equal(VC{1, 1}) {
		t.Fatalf("S1.5: coordinator's reply %+v", r)
	}
	if h.Done() {
		t.Fatal("S1.5: the WOT finished before every participant answered")
	}
	if r := deliver[*WriteResp](s, node(pB), cli(c1)); !r.Committed || r.CT != nil {
		t.Fatalf("S1.5: participant's reply %+v", r)
	}
	msgs += 2
	if !h.Done() || h.WriteResult().Status != txn.Committed {
		t.Fatalf("S1.5: %+v", h.WriteResult())
	}
	s.wantVC(c1, VC{1, 1})
	// Expected: svc_A = (1,0), svc_B = (0,1), 6 messages (I15: 4P−2 with P = 2).
	s.wantSVC(pA, VC{1, 0})
	s.wantSVC(pB, VC{0, 1})
	if left := len(s.w.InFlight()); msgs != 4*2-2 || left != 0 {
		t.Fatalf("S1: %d messages, %d left in flight", msgs, left)
	}
	s.check()
	return h
}

func TestS1BasicTwoPartitionWOT(t *testing.T) {
	s := newScenario(t, nil)
	s.s1(s.client(pA))
}

// TestS2CommittedNotYetVisible: after S1, a fresh client reads (⊥,⊥) in one round.
func TestS2CommittedNotYetVisible(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2 := s.client(pA), s.client(pA)
	s.s1(c1)
	s.read(c2, []string{keyA, keyB}, []string{"", ""}, 1)
	s.wantVC(c2, VC{0, 0})
	s.check()
}

// TestS3ReadYourWritesDrivesStabilization: c1's clock pushes both svcs to (1,1).
func TestS3ReadYourWritesDrivesStabilization(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2 := s.client(pA), s.client(pA)
	s.s1(c1)
	s.read(c1, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.wantSVC(pA, VC{1, 1})
	s.wantSVC(pB, VC{1, 1})
	s.read(c2, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.check()
}

// TestS4AsymmetricKnowledgeForcesRound2: A knows (1,1), B only (0,1): round 2 goes to B only.
func TestS4AsymmetricKnowledgeForcesRound2(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2 := s.client(pA), s.client(pA)
	s.s1(c1)
	s.gossip(pB, pA)
	s.wantSVC(pA, VC{1, 1})
	s.wantSVC(pB, VC{0, 1})
	h := c2.Read(keyA, keyB)
	deliver[*MultigetSlice](s, cli(c2), node(pA))
	deliver[*MultigetSlice](s, cli(c2), node(pB))
	ra := deliver[*MultigetSliceResp](s, node(pA), cli(c2))
	rb := deliver[*MultigetSliceResp](s, node(pB), cli(c2))
	if string(ra.Versions[0].Value) != "a1" || !ra.CTM.Equal(VC{1, 1}) || !ra.SVC.Equal(VC{1, 1}) {
		t.Fatalf("A's round 1: %+v", ra)
	}
	if rb.Versions[0].Value != nil || !rb.CTM.Equal(VC{0, 0}) || !rb.SVC.Equal(VC{0, 1}) {
		t.Fatalf("B's round 1: %+v", rb)
	}
	s.wantVC(c2, VC{1, 1})
	if inFlight[*MultigetSliceByTime](s, cli(c2), node(pB)) != 1 || len(s.w.InFlight()) != 1 {
		t.Fatalf("round 2 must go to B only: %v", s.w.InFlight())
	}
	deliver[*MultigetSliceByTime](s, cli(c2), node(pB))
	s.wantSVC(pB, VC{1, 1})
	deliver[*MultigetSliceByTimeResp](s, node(pB), cli(c2))
	if got := h.Values(); !h.Done() || !slices.Equal(got, []string{"a1", "b1"}) || h.ReadResult().Rounds != 2 {
		t.Fatalf("ROT = %q in %d rounds, want (a1, b1) in 2", got, h.ReadResult().Rounds)
	}
	// I15: 2·|P(T)| messages in round 1 and 2·|repeat| in round 2, 6 in all, each delivered above.
	if left := len(s.w.InFlight()); left != 0 {
		t.Fatalf("%d messages left", left)
	}
	s.check()
}

// TestS5ROTRacingHalfPreparedWOT: no ROT ever returns (a2,b1) or (a1,b2).
func TestS5ROTRacingHalfPreparedWOT(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2 := s.client(pA), s.client(pA)
	s.s1(c1)
	s.read(c1, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.read(c2, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.wantVC(c2, VC{1, 1})
	h := c1.Write(map[string]string{keyA: "a2", keyB: "b2"})
	// 1. M5→A: sn_A = 2, a2 pending (2,1).
	deliver[*WriteReq](s, cli(c1), node(pA))
	s.wantVersions(pA, keyA, "a1 [1 1] committed", "a2 [2 1] pending")
	// 2. a2 is invisible.
	s.read(c2, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.check()
	// 3. M5→B: sn_B = 2, b2 pending (1,2), prepared(2) to A.
	deliver[*WriteReq](s, cli(c1), node(pB))
	s.wantVersions(pB, keyB, "b1 [1 1] committed", "b2 [1 2] pending")
	// 4. prepared→A: ct (2,2), A commits: svc_A = (2,1), reply (2,2) to c1; commit→B in flight.
	deliver[*Prepared](s, node(pB), node(pA))
	s.wantSVC(pA, VC{2, 1})
	if inFlight[*Commit](s, node(pA), node(pB)) != 1 || inFlight[*WriteResp](s, node(pA), cli(c1)) != 1 {
		t.Fatalf("S5.4: in flight %v", s.w.InFlight())
	}
	s.check()
	// 5. Still (a1,b1) in 1 round.
	s.read(c2, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	// 6. commit→B: svc_B = (1,2); c1 finishes with vc (2,2).
	deliver[*Commit](s, node(pA), node(pB))
	s.wantSVC(pB, VC{1, 2})
	s.deliverClient(c1)
	if h.WriteResult().Status != txn.Committed {
		t.Fatalf("S5.6: %+v", h.WriteResult())
	}
	s.wantVC(c1, VC{2, 2})
	// 7. gossip A→B.
	s.gossip(pA, pB)
	s.wantSVC(pB, VC{2, 2})
	// 8. Round 2 at A only returns a2.
	r := c2.Read(keyA, keyB)
	deliver[*MultigetSlice](s, cli(c2), node(pA))
	deliver[*MultigetSlice](s, cli(c2), node(pB))
	deliver[*MultigetSliceResp](s, node(pA), cli(c2))
	deliver[*MultigetSliceResp](s, node(pB), cli(c2))
	s.wantVC(c2, VC{2, 2})
	if inFlight[*MultigetSliceByTime](s, cli(c2), node(pA)) != 1 || len(s.w.InFlight()) != 1 {
		t.Fatalf("round 2 must go to A only: %v", s.w.InFlight())
	}
	s.deliverClient(c2)
	if got := r.Values(); !slices.Equal(got, []string{"a2", "b2"}) || r.ReadResult().Rounds != 2 {
		t.Fatalf("S5.8: %q in %d rounds", got, r.ReadResult().Rounds)
	}
	s.check()
}

// TestS6CausalityAcrossClients: WFR holds; faithful mode takes a spurious round 2.
func TestS6CausalityAcrossClients(t *testing.T) {
	for _, tc := range []struct {
		name      string
		merge     string
		svcB      VC
		want      []string
		round2To  int
		round2Arg VC
	}{
		{"faithful", "false", VC{0, 1}, []string{"a1", ""}, pB, VC{1, 0}},
		{"A11", "true", VC{1, 1}, []string{"a1", "b1"}, pA, VC{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScenario(t, protocol.Params{ParamMergeClockOnWrite: tc.merge})
			c1, c2, c3 := s.client(pA), s.client(pB), s.client(pA)
			s.write(c1, map[string]string{keyA: "a1"})
			s.wantSVC(pA, VC{1, 0})
			s.wantVC(c1, VC{1, 0})
			s.read(c2, []string{keyA}, []string{"a1"}, 1)
			s.wantVC(c2, VC{1, 0})
			s.write(c2, map[string]string{keyB: "b1"})
			s.wantVersions(pB, keyB, "b1 [1 1] committed")
			s.wantSVC(pB, tc.svcB)
			s.wantVC(c2, VC{1, 1})
			h := c3.Read(keyA, keyB)
			for range 4 {
				s.w.Deliver(func(e tccscript.Envelope) bool { return true })
			}
			if inFlight[*MultigetSliceByTime](s, cli(c3), node(tc.round2To)) != 1 || len(s.w.InFlight()) != 1 {
				t.Fatalf("round 2 must go to %c only: %v", 'A'+tc.round2To, s.w.InFlight())
			}
			if m := deliver[*MultigetSliceByTime](s, cli(c3), node(tc.round2To)); !m.VC.Equal(tc.round2Arg) {
				t.Fatalf("round 2 at %v", m.VC)
			}
			s.deliverClient(c3)
			if got := h.Values(); !slices.Equal(got, tc.want) || h.ReadResult().Rounds != 2 {
				t.Fatalf("ROT = %q in %d rounds, want %q in 2", got, h.ReadResult().Rounds, tc.want)
			}
			s.check()
		})
	}
}

// TestS7NoGossip: correctness does not depend on gossip; visibility waits for a client clock.
func TestS7NoGossip(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2 := s.client(pA), s.client(pA)
	s.s1(c1)
	for range 3 {
		s.read(c2, []string{keyA, keyB}, []string{"", ""}, 1)
		s.w.Advance(1_000_000) // gossip is off: time alone changes nothing
		s.check()
	}
	s.read(c1, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.read(c2, []string{keyA, keyB}, []string{"a1", "b1"}, 1)
	s.check()
}

// TestS8InOrderCommit: T2 (sn 2 at A) is applied and answered only after T1 (sn 1).
func TestS8InOrderCommit(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2, c3, c4 := s.client(pB), s.client(pA), s.client(pA), s.client(pA)
	h1 := c1.Write(map[string]string{keyA: "a1", keyB: "b1"})
	// 1. M5(T1)→A: sn_A = 1; its prepared to B is held.
	deliver[*WriteReq](s, cli(c1), node(pA))
	// 2. M5(T2)→A: sn_A = 2, decided at once but waiting; no reply yet.
	h2 := c2.Write(map[string]string{keyA2: "x"})
	deliver[*WriteReq](s, cli(c2), node(pA))
	if a := s.rep(pA); a.sn != 2 || a.ready[2] == nil || inFlight[*WriteResp](s, node(pA), cli(c2)) != 0 {
		t.Fatalf("S8.2: sn %d, ready %v, in flight %v", a.sn, a.ready, s.w.InFlight())
	}
	s.wantSVC(pA, VC{0, 0})
	s.check()
	// 3. ROT {a'} returns ⊥.
	s.read(c3, []string{keyA2}, []string{""}, 1)
	// 4. M5(T1)→B, then the held prepared: B commits (svc_B = (0,1)) and sends commit to A.
	deliver[*WriteReq](s, cli(c1), node(pB))
	deliver[*Prepared](s, node(pA), node(pB))
	s.wantSVC(pB, VC{0, 1})
	s.check()
	// 5. commit(T1)→A: T1 then T2 commit; T2's reply (2,0) follows T1's.
	deliver[*Commit](s, node(pB), node(pA))
	s.wantSVC(pA, VC{2, 0})
	var order []string
	for _, e := range s.w.InFlight() {
		if r, ok := e.Msg.(*WriteResp); ok && e.From.String() == node(pA) {
			order = append(order, fmt.Sprintf("%v %v", r.Tx, []int64(r.CT)))
		}
	}
	if want := []string{fmt.Sprintf("%v []", h1.ID()), fmt.Sprintf("%v [2 0]", h2.ID())}; !slices.Equal(order, want) {
		t.Fatalf("A's replies %q, want %q", order, want)
	}
	if got := s.w.Store(pA).VersionOrder(); !slices.Equal(got[keyA], []txn.ID{h1.ID()}) || !slices.Equal(got[keyA2], []txn.ID{h2.ID()}) {
		t.Fatalf("A's store order %v", got)
	}
	s.deliverAll()
	if h1.WriteResult().Status != txn.Committed || h2.WriteResult().Status != txn.Committed {
		t.Fatalf("S8.5: %+v %+v", h1.WriteResult(), h2.WriteResult())
	}
	s.check()
	// 6. ROT {a'} returns x; a fresh ROT {a,b} returns (⊥,⊥).
	s.read(c3, []string{keyA2}, []string{"x"}, 1)
	s.read(c4, []string{keyA, keyB}, []string{"", ""}, 1)
}

// TestS9AbortHole: the coordinator never saw T1; presumed abort leaves a hole and T2 commits.
func TestS9AbortHole(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2, c3 := s.client(pB), s.client(pA), s.client(pA)
	h1 := c1.Write(map[string]string{keyA: "a1", keyB: "b1"})
	deliver[*WriteReq](s, cli(c1), node(pA))
	// B has never seen T1: it buffers the vote (A4b).
	deliver[*Prepared](s, node(pA), node(pB))
	if b := s.rep(pB); len(b.early[h1.ID()]) != 1 || b.sn != 0 {
		t.Fatalf("B's early votes %v, sn %d", b.early, b.sn)
	}
	h2 := c2.Write(map[string]string{keyA2: "x"})
	deliver[*WriteReq](s, cli(c2), node(pA))
	s.wantSVC(pA, VC{0, 0})
	// TX_TIMEOUT: A asks B with check_commit. c1 has crashed: what it sends is lost.
	s.w.Advance(5_000_000)
	s.w.Drop(func(e tccscript.Envelope) bool { return e.From.Client == c1.ID() })
	deliver[*CheckCommit](s, node(pA), node(pB))
	if o := s.rep(pB).decided[h1.ID()]; o == nil || o.committed {
		t.Fatalf("B has no tombstone for T1: %+v", o)
	}
	deliver[*Abort](s, node(pB), node(pA))
	s.wantVersions(pA, keyA)
	s.wantSVC(pA, VC{2, 0})
	s.check()
	s.deliverClient(c2)
	if h2.WriteResult().Status != txn.Committed {
		t.Fatalf("T2: %+v", h2.WriteResult())
	}
	// A late M5(T1) at B is refused: no sequence number, an abort answer.
	b := s.rep(pB)
	b.HandleRequest(protocol.Request{Client: c1.ID(), Seq: 99, Kind: protocol.Operation,
		Op: &WriteReq{Tx: h1.ID(), Writes: []txn.Write{{Key: keyB, Value: []byte("b1")}}, Coordinator: pB, Size: 2}})
	if b.sn != 0 || len(s.versions(pB, keyB)) != 0 {
		t.Fatalf("late M5 accepted: sn_B %d", b.sn)
	}
	if r := deliver[*WriteResp](s, node(pB), cli(c1)); r.Committed {
		t.Fatalf("late M5 answered %+v", r)
	}
	s.w.Drop(func(e tccscript.Envelope) bool { return e.To.Client == c1.ID() })
	// Nothing stays stuck: a1 and b1 never become visible, x does.
	s.gossip(pA, pB)
	s.gossip(pB, pA)
	s.read(c3, []string{keyA, keyB, keyA2}, []string{"", "", "x"}, 1)
	s.check()
}

// TestS10ConcurrentWOTsOppositeOrders: incomparable commit vectors; the ROT returns (a2, b1).
func TestS10ConcurrentWOTsOppositeOrders(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2, c3 := s.client(pA), s.client(pB), s.client(pA)
	h1 := c1.Write(map[string]string{keyA: "a1", keyB: "b1"})
	h2 := c2.Write(map[string]string{keyA: "a2", keyB: "b2"})
	deliver[*WriteReq](s, cli(c1), node(pA))
	deliver[*WriteReq](s, cli(c2), node(pA))
	deliver[*WriteReq](s, cli(c2), node(pB))
	deliver[*WriteReq](s, cli(c1), node(pB))
	s.deliverAll()
	s.check()
	if h1.WriteResult().Status != txn.Committed || h2.WriteResult().Status != txn.Committed {
		t.Fatalf("%+v %+v", h1.WriteResult(), h2.WriteResult())
	}
	s.wantVC(c1, VC{1, 2})
	s.wantVC(c2, VC{2, 1})
	s.wantVersions(pA, keyA, "a1 [1 2] committed", "a2 [2 1] committed")
	s.wantVersions(pB, keyB, "b2 [2 1] committed", "b1 [1 2] committed")
	s.gossip(pA, pB)
	s.gossip(pB, pA)
	s.wantSVC(pA, VC{2, 2})
	s.wantSVC(pB, VC{2, 2})
	s.read(c3, []string{keyA, keyB}, []string{"a2", "b1"}, 1)
	s.check()
	// TCC allows it; the strict G0 mode reports the write cycle as information only.
	rep := checker.Check(s.w.History(), checker.Options{Model: checker.Causal, MaxRounds: 2, StrictG0: true})
	if !rep.OK || len(rep.Info) != 1 || rep.Info[0].Kind != checker.TCCWriteCycle {
		t.Fatalf("checker: %s, info %v", rep.Summary(), rep.Info)
	}
}

// TestS11OnePartitionROT: a ROT on one partition takes one round whatever svc is.
func TestS11OnePartitionROT(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2 := s.client(pA), s.client(pA)
	s.read(c2, []string{keyA, keyA2}, []string{"", ""}, 1)
	s.s1(c1)
	s.read(c2, []string{keyA, keyA2}, []string{"", ""}, 1)
	s.read(c1, []string{keyA, keyA2}, []string{"a1", ""}, 1)
	s.gossip(pB, pA)
	s.read(c2, []string{keyA2, keyA}, []string{"", "a1"}, 1)
}

// TestS12DuplicateKey: a ROT {a, a} asks for a once and answers both positions alike.
func TestS12DuplicateKey(t *testing.T) {
	s := newScenario(t, nil)
	c1 := s.client(pA)
	s.s1(c1)
	h := c1.Read(keyA, keyB, keyA)
	if m := deliver[*MultigetSlice](s, cli(c1), node(pA)); !slices.Equal(m.Keys, []string{keyA}) {
		t.Fatalf("keys sent to A: %q", m.Keys)
	}
	s.deliverClient(c1)
	if got := h.Values(); !slices.Equal(got, []string{"a1", "b1", "a1"}) || h.ReadResult().Rounds != 1 {
		t.Fatalf("ROT = %q in %d rounds", got, h.ReadResult().Rounds)
	}
}

// TestS13GCWindow: a superseded version survives while a ROT may still ask for it in round 2,
// and goes once it has been superseded for tx_timeout + clock_skew_bound and unread for
// tx_timeout. The newest version stays.
func TestS13GCWindow(t *testing.T) {
	s := newScenario(t, nil)
	c1, c2, c3, c4 := s.client(pA), s.client(pA), s.client(pB), s.client(pA)
	s.write(c3, map[string]string{keyB: "b1"}) // ct (0,1): A does not know it
	s.write(c1, map[string]string{keyA: "a1"}) // ct (1,0)
	s.w.Advance(100_000)
	// t=0.1s: c2's round 1 at A returns a1.
	h := c2.Read(keyA, keyB)
	deliver[*MultigetSlice](s, cli(c2), node(pA))
	if r := deliver[*MultigetSliceResp](s, node(pA), cli(c2)); string(r.Versions[0].Value) != "a1" {
		t.Fatalf("round 1 at A: %+v", r)
	}
	// t=0.15s: a2 commits at A and a round 1 sees it visible: a1 is superseded.
	s.w.Advance(50_000)
	s.write(c1, map[string]string{keyA: "a2"}) // ct (2,0)
	s.read(c4, []string{keyA}, []string{"a2"}, 1)
	// t=0.2s: c2's round 2 at A, with a clock that does not cover a2, still finds a1.
	s.w.Advance(50_000)
	s.deliverClient(c2)
	if got := h.Values(); !slices.Equal(got, []string{"a1", "b1"}) || h.ReadResult().Rounds != 2 {
		t.Fatalf("ROT = %q in %d rounds", got, h.ReadResult().Rounds)
	}
	// Sweeps every second: at 5s a1 is still there; by 6s (past 0.15 + 5s + 100ms skew and
	// 0.2 + 5s unread) it is gone, a2 stays.
	s.w.Advance(4_800_000)
	s.wantVersions(pA, keyA, "a1 [1 0] committed", "a2 [2 0] committed")
	s.w.Advance(1_000_000)
	s.wantVersions(pA, keyA, "a2 [2 0] committed")
	// A round 2 that would have needed a1 is told to restart.
	a := s.rep(pA)
	a.HandleRequest(protocol.Request{Client: c2.ID(), Seq: 99, Kind: protocol.Operation, Op: &MultigetSliceByTime{Keys: []string{keyA}, VC: VC{1, 1}}})
	if r := deliver[*MultigetSliceByTimeResp](s, node(pA), cli(c2)); !r.Collected {
		t.Fatalf("round 2 below a collected version answered %+v", r)
	}
	s.check()
}
