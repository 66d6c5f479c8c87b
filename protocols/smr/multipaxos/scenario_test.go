package multipaxos

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/scripted"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

func preset(t *testing.T, name string) *topology.Topology {
	t.Helper()
	topo, ok := topology.Preset(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	return topo
}

// TestLeaderPlacement: the LO and HI leaders are the datacenters of minimum and maximum mean RTT
// of each preset, as spec §7.1's table gives them for alvin-paper-7 (3 sites VA/TK, 5 sites
// OR/IE, 7 sites OR/SP) and as the measured matrices give them for aws-3/5/7.
func TestLeaderPlacement(t *testing.T) {
	paper := preset(t, "alvin-paper-7")
	paper3, _ := topology.Subset(paper, []string{"VA", "IE", "TK"})
	paper5, _ := topology.Subset(paper, []string{"VA", "OR", "IE", "TK", "SG"})
	for _, c := range []struct {
		topo   *topology.Topology
		lo, hi string
	}{
		{paper3, "VA", "TK"}, {paper5, "OR", "IE"}, {paper, "OR", "SP"},
		{preset(t, "aws-3"), "VA", "TK"}, {preset(t, "aws-5"), "OR", "SG"}, {preset(t, "aws-7"), "OR", "SP"},
	} {
		means := MeanRTTMs(c.topo)
		for _, v := range []struct {
			p    Placement
			want string
		}{{LowestMeanRTT, c.lo}, {HighestMeanRTT, c.hi}} {
			got := c.topo.DCs[FailoverOrder(c.topo, v.p)[0]]
			if got != v.want {
				t.Errorf("%s placement %d: leader %s, want %s (means %v)", c.topo.Name, v.p, got, v.want, means)
			}
			// The replicas agree: after phase 1 the chosen datacenter leads.
			w := newWorld(t, c.topo, v.p, nil)
			w.Start()
			w.RunTo(2000)
			for dc, r := range w.Replicas {
				mp := r.(*Replica)
				if mp.Leader() != FailoverOrder(c.topo, v.p)[0] || mp.IsLeader() != (c.topo.DCs[dc] == v.want) {
					t.Errorf("%s: %s follows %s (leads: %v), want %s", c.topo.Name, c.topo.DCs[dc], c.topo.DCs[mp.Leader()], mp.IsLeader(), v.want)
				}
			}
		}
	}
	// Ties go to the datacenter listed first.
	tie := &topology.Topology{Name: "tie", DCs: []string{"A", "B", "C"}, RTTMs: [][]float64{{0, 10, 10}, {10, 0, 10}, {10, 10, 0}}}
	if lo, hi := FailoverOrder(tie, LowestMeanRTT), FailoverOrder(tie, HighestMeanRTT); !slices.Equal(lo, []int{0, 1, 2}) || !slices.Equal(hi, []int{0, 1, 2}) {
		t.Errorf("ties: LO order %v, HI order %v, want [0 1 2] both", lo, hi)
	}
}

// world is a scripted run with crash windows: a crashed replica neither sends nor receives.
type world struct {
	*scripted.World
	t       *testing.T
	crashed [][2]int64 // per datacenter: [from, until) in ms
	drop    func(from, to int, m protocol.Message) bool
}

const never = int64(1) << 50

var testParams = protocol.Params{ParamLease: "200ms", ParamResend: "100ms"}

func newWorld(t *testing.T, topo *topology.Topology, p Placement, params protocol.Params) *world {
	t.Helper()
	if params == nil {
		params = testParams
	}
	sw, err := scripted.New(topo, Factory(p), params, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{World: sw, t: t, crashed: make([][2]int64, topo.N())}
	sw.Hold = func(from, to int, sendMs int64, m protocol.Message) int64 {
		arriveMs := sendMs + sw.DelayMs(from, to, sendMs)
		if w.down(from, sendMs) || w.down(to, arriveMs) || (w.drop != nil && w.drop(from, to, m)) {
			return never
		}
		return 0
	}
	return w
}

func (w *world) down(dc int, atMs int64) bool {
	c := w.crashed[dc]
	return atMs >= c[0] && atMs < c[1]
}

func (w *world) replica(dc int) *Replica { return w.Replicas[dc].(*Replica) }

// run advances to toMs one millisecond at a time, checking the log invariants after each.
func (w *world) run(toMs int64) {
	w.t.Helper()
	for ms := w.NowMs() + 1; ms <= toMs; ms++ {
		w.RunTo(ms)
		w.checkInvariants()
	}
}

// tick runs the periodic duties of every replica that is up.
func (w *world) tick() {
	for dc := range w.Replicas {
		if !w.down(dc, w.NowMs()) {
			w.Send(dc)
		}
	}
}

// checkInvariants: every slot executed by two replicas and still in both logs holds the same
// value (agreement), and no replica's store holds two versions by one writer (no transaction
// applied twice).
func (w *world) checkInvariants() {
	w.t.Helper()
	for a := range w.Replicas {
		ra := w.replica(a)
		for b := range a {
			rb := w.replica(b)
			for s := max(ra.trimmed, rb.trimmed) + 1; s <= min(ra.commitIdx, rb.commitIdx); s++ {
				if x, y := ra.log[s].txn, rb.log[s].txn; (x == nil) != (y == nil) || x != nil && x.ID != y.ID {
					w.t.Fatalf("slot %d: %s executed %v, %s executed %v\n%s", s, w.Topo.DCs[a], x, w.Topo.DCs[b], y, w.Trace())
				}
			}
		}
		for key, writers := range w.Store(a).VersionOrder() {
			seen := map[txn.ID]bool{}
			for _, id := range writers {
				if seen[id] {
					w.t.Fatalf("%s: %v wrote %s twice\n%s", w.Topo.DCs[a], id, key, w.Trace())
				}
				seen[id] = true
			}
		}
	}
}

// requireConverged: every replica executed up to the same slot and holds the same versions.
func (w *world) requireConverged() {
	w.t.Helper()
	want := w.Store(0).VersionOrder()
	for dc := range w.Replicas {
		if got := w.Store(dc).VersionOrder(); fmt.Sprint(got) != fmt.Sprint(want) || w.replica(dc).commitIdx != w.replica(0).commitIdx {
			w.t.Fatalf("%s: versions %v at commit index %d, %s: %v at %d\n%s", w.Topo.DCs[dc], got, w.replica(dc).commitIdx,
				w.Topo.DCs[0], want, w.replica(0).commitIdx, w.Trace())
		}
	}
}

func (w *world) requireOutcome(name string, status txn.Status, atMs int64) {
	w.t.Helper()
	o, ok := w.Outcome(name)
	if !ok || o.Status != status || (atMs >= 0 && o.AtMs != atMs) {
		w.t.Fatalf("%s: outcome %+v (decided: %v), want %v at %d ms\n%s", name, o, ok, status, atMs, w.Trace())
	}
}

// TestSlotCommittedAfterFollowerCrash (table4.1: RTT A–B 30, A–C 20, B–C 40; leader A): with C
// crashed, a transaction from B still commits after RTT(B,A) + the leader's round trip to its
// only live majority partner B (30 + 30 ms), and C, once back, learns the chosen slot from the
// leader's heartbeat (Commit, Fetch, Chosen) and converges.
func TestSlotCommittedAfterFollowerCrash(t *testing.T) {
	w := newWorld(t, preset(t, "table4.1"), LowestMeanRTT, nil)
	w.crashed[2] = [2]int64{50, 300}
	w.Start()
	w.run(100)
	if !w.replica(0).IsLeader() {
		t.Fatalf("A does not lead after phase 1\n%s", w.Trace())
	}
	w.Request(1, "T1", []string{"x"}, []string{"x"})
	w.run(250)
	w.requireOutcome("T1", txn.Committed, 160)
	if c := w.replica(2).CommitIndex(); c != 0 {
		t.Fatalf("crashed C executed up to %d", c)
	}
	w.run(400)
	w.tick() // A's heartbeat: C fetches slot 1
	w.run(500)
	w.requireConverged()
	if w.replica(2).CommitIndex() != 1 {
		t.Fatalf("C did not catch up\n%s", w.Trace())
	}
}

// TestLeaderFailoverRecoversInflightSlots (table4.1, leader A, fail-over order A, C, B): A
// proposes T1 (from B) in slot 1 and crashes; only B accepted it. T2 (from C) was forwarded to
// A after the crash and is lost. C's lease runs out first: it runs phase 1 with ballot 5, learns
// slot 1 from B's promise and re-proposes T1 there, and proposes T2, which it held as its origin,
// in slot 2. Both commit exactly once, and A, back, steps down and converges.
func TestLeaderFailoverRecoversInflightSlots(t *testing.T) {
	w := newWorld(t, preset(t, "table4.1"), LowestMeanRTT, nil)
	w.crashed[0] = [2]int64{116, 700}
	w.drop = func(from, to int, m protocol.Message) bool {
		a, ok := m.(*Accept)
		return ok && from == 0 && to == 2 && a.Slot == 1 // C never sees slot 1
	}
	w.Start()
	w.run(100)
	w.Request(1, "T1", []string{"x"}, []string{"x"}) // reaches A at 115
	w.run(110)
	w.Request(2, "T2", []string{"y"}, []string{"y", "x"}) // reaches A at 120: lost
	w.run(300)
	if e := w.replica(1).log[1]; e == nil || e.txn == nil || e.txn.ID != w.ID("T1") {
		t.Fatalf("B did not accept T1 in slot 1\n%s", w.Trace())
	}
	if _, ok := w.Outcome("T1"); ok {
		t.Fatalf("T1 decided before the fail-over\n%s", w.Trace())
	}
	w.tick() // 300 ms: C (rank 1) has not heard A for 290 ms > lease 200 + 50; B (rank 2) 170 ms < 300
	if w.replica(2).role != candidate || w.replica(1).role != follower {
		t.Fatalf("C role %d, B role %d: want C candidate, B follower\n%s", w.replica(2).role, w.replica(1).role, w.Trace())
	}
	w.run(600)
	c := w.replica(2)
	if !c.IsLeader() || c.promised != 5 {
		t.Fatalf("C leads: %v with ballot %d, want ballot 5\n%s", c.IsLeader(), c.promised, w.Trace())
	}
	if e := c.log[1]; e.txn == nil || e.txn.ID != w.ID("T1") || !e.committed {
		t.Fatalf("slot 1 at C: %+v, want T1 chosen\n%s", e, w.Trace())
	}
	w.requireOutcome("T1", txn.Committed, -1)
	w.requireOutcome("T2", txn.Committed, -1)
	for ms := int64(650); ms <= 1100; ms += 50 { // A is back at 700: C's heartbeat deposes it, and A fetches
		w.tick()
		w.run(ms)
	}
	if a := w.replica(0); a.IsLeader() || a.Leader() != 2 {
		t.Fatalf("A leads %v, follows %s\n%s", a.IsLeader(), w.Topo.DCs[a.Leader()], w.Trace())
	}
	w.requireConverged()
	if got := w.Store(1).VersionOrder()["x"]; !slices.Equal(got, []txn.ID{w.ID("T1"), w.ID("T2")}) {
		t.Fatalf("versions of x %v, want T1 then T2\n%s", got, w.Trace())
	}
}

// TestDuplicateSlotsExecuteOnce: a transaction chosen in two slots (an origin's retransmission
// to a new leader while the old leader's slot survives) is executed once, at its first slot, by
// every replica, and a later transaction of the same client is not mistaken for a duplicate.
func TestDuplicateSlotsExecuteOnce(t *testing.T) {
	w := newWorld(t, preset(t, "table4.1"), LowestMeanRTT, nil)
	r := w.replica(1)
	t1 := &txn.Txn{ID: txn.NewID(9, 1), Writes: []txn.Write{{Key: "x", Value: []byte("1")}}}
	t2 := &txn.Txn{ID: txn.NewID(9, 2), Writes: []txn.Write{{Key: "x", Value: []byte("2")}}}
	r.HandleMessage(0, &Chosen{Entries: []Entry{{Slot: 1, Ballot: 3, Txn: t1}, {Slot: 2, Ballot: 3}, {Slot: 3, Ballot: 6, Txn: t1}, {Slot: 4, Ballot: 6, Txn: t2}}})
	if got := w.Store(1).VersionOrder()["x"]; r.CommitIndex() != 4 || !slices.Equal(got, []txn.ID{t1.ID, t2.ID}) {
		t.Fatalf("commit index %d, versions of x %v; want 4 and [t1 t2]", r.CommitIndex(), got)
	}
}

// TestLeaderDeafToItsFollowers (asymmetric loss): from 100 ms every message to the leader A is
// lost, while A's own still arrive. A's heartbeats keep renewing its followers' leases, but A
// hears no majority, so after its check-quorum window it steps down; its followers' leases run
// out, C takes over, and T1 (from B, first forwarded to A and lost) commits.
func TestLeaderDeafToItsFollowers(t *testing.T) {
	w := newWorld(t, preset(t, "table4.1"), LowestMeanRTT, nil)
	w.drop = func(from, to int, _ protocol.Message) bool { return to == 0 && w.NowMs() >= 100 }
	w.Start()
	w.run(150)
	w.Request(1, "T1", []string{"x"}, []string{"x"})
	for ms := int64(200); ms <= 2500; ms += 50 {
		w.tick()
		w.run(ms)
	}
	w.requireOutcome("T1", txn.Committed, -1)
	if o, _ := w.Outcome("T1"); o.AtMs < 100+quorumLeases*200 {
		t.Fatalf("T1 committed at %d ms, before A could have stepped down\n%s", o.AtMs, w.Trace())
	}
	if a, c := w.replica(0), w.replica(2); a.IsLeader() || !c.IsLeader() {
		t.Fatalf("A leads: %v, C leads: %v; want C\n%s", a.IsLeader(), c.IsLeader(), w.Trace())
	}
}
