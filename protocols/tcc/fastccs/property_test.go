package fastccs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
)

// TestS14Randomized is spec scenario S14: 3–8 partitions, 5–20 clients, random ROTs and WOTs of
// 1–5 keys over 10–50 keys, random deliveries (FIFO per link), random gossip, lost peer messages
// and crashing clients. After every event it asserts I1–I5, I8 and I14 (watch), I9 and I11 on
// every read answer, I6 and I10 on every committed WOT. At the end it lets timeouts and gossip
// run until everything settled, checks that a final ROT sees the newest version of every key
// (C6), and runs the TCC checker (C1–C6) on the history. Before that final read, four virtual
// seconds of garbage collection drop superseded versions from the stores, and checkAll requires
// that no version reads can still select was dropped (pruning).
func TestS14Randomized(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if rep := runS14(t, seed, nil); !rep.OK {
				t.Fatalf("checker: %s", rep.Summary())
			}
		})
	}
}

// TestS14SkippedSnapshotCheck is S14's negative control: with unsafe_skip_snapshot_check every
// state invariant still holds (the servers are unchanged), but the checker must find fractured
// snapshots in one of 40 seeds; it stops at the first (the seeds after it would decide nothing).
func TestS14SkippedSnapshotCheck(t *testing.T) {
	for seed := range uint64(40) {
		if rep := runS14(t, seed, protocol.Params{ParamUnsafeSkipSnapshotCheck: "true"}); rep.Counts[checker.TCCSnapshot] > 0 {
			t.Logf("fractured snapshot in seed %d: %s", seed, rep.Summary())
			return
		}
	}
	t.Fatal("no fractured snapshot found without the snapshot check")
}

type s14Client struct {
	c        *tccscript.Client
	lib      *Client
	h        *tccscript.Handle
	write    map[string]string
	vcBefore VC
	crashed  bool
}

type s14 struct {
	t       *testing.T
	r       *rand.Rand
	w       *tccscript.World
	reps    []*Replica
	clients []*s14Client
	watch   *watch
	keys    []string
	// What each client's round 1 returned and round 2 asked, per partition (I9, I11).
	round1  map[[2]int]*MultigetSliceResp
	round2  map[[2]int]VC
	settled bool // timeouts may fire: answers of abandoned attempts make I9's pairing moot
	writes  int
}

// runS14 runs one seed with extra params and returns the checker's report.
func runS14(t *testing.T, seed uint64, extra protocol.Params) checker.Report {
	r := rand.New(rand.NewPCG(seed, 14))
	n := 3 + r.IntN(6)
	params := protocol.Params{ParamStabInterval: "1s", ParamTxTimeout: "1s", ParamGCInterval: "300ms",
		ParamMergeClockOnWrite: fmt.Sprint(r.IntN(2) == 0), ParamRetries: "5"}
	for k, v := range extra {
		params[k] = v
	}
	s := &s14{t: t, r: r, w: tccscript.New(t, New, NewClient, n, params), watch: newWatch(),
		round1: map[[2]int]*MultigetSliceResp{}, round2: map[[2]int]VC{}}
	for p := range n {
		s.reps = append(s.reps, s.w.Replica(p).(*Replica))
	}
	for range 5 + r.IntN(16) {
		c := s.w.Client()
		s.clients = append(s.clients, &s14Client{c: c, lib: lib(c)})
	}
	for k := range 10 + r.IntN(41) {
		s.keys = append(s.keys, fmt.Sprintf("k%d", k))
	}
	for range 3000 {
		switch x := r.Float64(); {
		case x < 0.15:
			s.start()
		case x < 0.22:
			rep := s.reps[r.IntN(n)]
			rep.gossipTick()
		case x < 0.222:
			s.crash()
		case x < 0.24:
			s.loseMessage()
		default:
			s.deliverOne()
		}
		s.checkAll()
	}
	// Settle: no new transactions; deliveries, timeouts and gossip until everything finished.
	s.settled = true
	for range 100 {
		for s.deliverOne() {
			s.checkAll()
		}
		if s.quiet() {
			break
		}
		s.w.Advance(500_000)
		s.checkAll()
	}
	if !s.quiet() {
		t.Fatalf("not settled: in flight %v", s.w.InFlight())
	}
	// Garbage collection: four virtual seconds more (tx_timeout is 1 s), so that superseded
	// versions are collected and dropped from the stores while checkAll watches, before the
	// final read below.
	for range 8 {
		s.w.Advance(500_000)
		for s.deliverOne() {
			s.checkAll()
		}
	}
	// C6: after gossip everywhere, a fresh client reads the newest version of every key.
	for range 2 {
		for _, rep := range s.reps {
			rep.gossipTick()
		}
		for s.deliverOne() {
		}
	}
	final := &s14Client{c: s.w.Client()}
	final.lib = lib(final.c)
	s.clients = append(s.clients, final)
	h := final.c.Read(s.keys...)
	for s.deliverOne() {
		s.checkAll()
	}
	if !h.Done() || h.ReadResult().Rounds != 1 {
		t.Fatalf("final ROT: done %v, %+v", h.Done(), h.ReadResult())
	}
	for i, rd := range h.ReadResult().Reads {
		p := tcc.PartitionOf(s.keys[i], n)
		order := s.w.Store(p).VersionOrder()[s.keys[i]]
		if last := txn.None; len(order) > 0 && order[len(order)-1] != rd.Version || len(order) == 0 && rd.Version != last {
			t.Fatalf("C6: final read of %s = %v, versions %v", s.keys[i], rd.Version, order)
		}
	}
	// The checker over the history, with the crashed clients' unfinished WOTs as unknown.
	hist := s.w.History()
	for _, c := range s.clients {
		if c.crashed && c.write != nil {
			ht := history.Txn{ID: c.h.ID(), DC: "dc0", Client: cli(c.c), Status: txn.Unknown}
			for k := range c.write {
				ht.Writes = append(ht.Writes, k)
			}
			slices.Sort(ht.Writes)
			hist.Txns = append(hist.Txns, ht)
		}
	}
	rep := checker.Check(hist, checker.Options{Model: checker.Causal, MaxRounds: 2, Final: []txn.ID{h.ID()}})
	if s.writes == 0 || rep.ROTs == 0 {
		t.Fatalf("a vacuous run: %d WOTs, %d ROTs", s.writes, rep.ROTs)
	}
	dropped := 0
	for _, r := range s.reps {
		dropped += r.env.Store().Dropped()
	}
	if dropped == 0 {
		t.Errorf("garbage collection dropped no store version: the pruning invariant was not exercised")
	}
	return rep
}

// start begins a ROT (70%) or a WOT at a random idle client.
func (s *s14) start() {
	c := s.clients[s.r.IntN(len(s.clients))]
	if c.crashed || c.h != nil && !c.h.Done() {
		return
	}
	keys := make([]string, 1+s.r.IntN(5))
	for i := range keys {
		keys[i] = s.keys[s.r.IntN(len(s.keys))]
	}
	c.vcBefore, c.write = c.lib.vc.Clone(), nil
	if s.r.Float64() < 0.7 {
		c.h = c.c.Read(keys...)
		return
	}
	c.write = map[string]string{}
	for _, k := range keys {
		c.write[k] = fmt.Sprintf("%s@%d", k, s.writes)
	}
	s.writes++
	c.h = c.c.Write(c.write)
}

// crash stops a client that is running a transaction: it never sends or receives again.
func (s *s14) crash() {
	c := s.clients[s.r.IntN(len(s.clients))]
	if c.h != nil && !c.h.Done() {
		c.crashed = true
	}
}

func (s *s14) crashed(id txn.ClientID) bool {
	return id != 0 && int(id) <= len(s.clients) && s.clients[id-1].crashed
}

// loseMessage drops a random peer message.
func (s *s14) loseMessage() { s.w.DropRandom(s.r, tccscript.IsPeerMessage) }

// deliverOne delivers a random item among those first on their link, checking read answers
// (I9, I11), and reports whether there was one.
func (s *s14) deliverOne() bool {
	s.w.Drop(func(e tccscript.Envelope) bool { return s.crashed(e.From.Client) || s.crashed(e.To.Client) })
	heads := s.w.Heads()
	if len(heads) == 0 {
		return false
	}
	e := heads[s.r.IntN(len(heads))]
	s.observe(e)
	if !s.w.Deliver(func(x tccscript.Envelope) bool { return x.Msg == e.Msg && x.From == e.From && x.To == e.To }) {
		s.t.Fatalf("could not deliver %v", e)
	}
	if e.Kind == tccscript.Request {
		switch e.Msg.(type) {
		case *MultigetSlice, *MultigetSliceByTime:
			// I9: a read handler answers at once.
			if last := s.w.InFlight(); len(last) == 0 || last[len(last)-1].From != e.To || last[len(last)-1].To != e.From {
				s.t.Fatalf("I9: %v was not answered at once", e)
			}
		}
	}
	return true
}

// observe checks a read answer before it is delivered: I11 (round 1 under the svc it returns,
// round 2 under the clock it was asked with) and I9 (round 2 is round 1's version or newer).
func (s *s14) observe(e tccscript.Envelope) {
	c, p := int(e.To.Client), int(e.From.Node)
	if e.Kind == tccscript.Request {
		c, p = int(e.From.Client), int(e.To.Node)
	}
	k := [2]int{c, p}
	switch m := e.Msg.(type) {
	case *MultigetSliceResp:
		for _, v := range m.Versions {
			if !v.CT.LessEq(m.SVC) {
				s.t.Fatalf("I11: round 1 of partition %d returned %s with ct %v above its svc %v", p, v.Key, v.CT, m.SVC)
			}
		}
		s.round1[k] = m
	case *MultigetSliceByTime:
		s.round2[k] = m.VC
	case *MultigetSliceByTimeResp:
		for i, v := range m.Versions {
			if !v.CT.LessEq(s.round2[k]) {
				s.t.Fatalf("I11: round 2 of partition %d returned %s with ct %v above the clock %v", p, v.Key, v.CT, s.round2[k])
			}
			if r1 := s.round1[k]; !s.settled && r1 != nil && v.CT.at(p) < r1.Versions[i].CT.at(p) {
				s.t.Fatalf("I9: round 2 of %s at partition %d went back from %v to %v", v.Key, p, r1.Versions[i].CT, v.CT)
			}
		}
	}
}

// checkAll asserts the state invariants and what finished transactions show.
func (s *s14) checkAll() {
	s.t.Helper()
	libs := make([]*Client, len(s.clients))
	for i, c := range s.clients {
		libs[i] = c.lib
	}
	if err := s.watch.check(s.reps, libs); err != nil {
		s.t.Fatal(err)
	}
	for _, c := range s.clients {
		if c.h == nil || !c.h.Done() || c.vcBefore == nil {
			continue
		}
		before := c.vcBefore
		c.vcBefore = nil
		if c.write == nil {
			if res := c.h.ReadResult(); res.Err != nil || res.Rounds < 1 || res.Rounds > 2 {
				s.t.Fatalf("ROT %v: %+v", c.h.ID(), res)
			}
			continue
		}
		res := c.h.WriteResult()
		if res.Status != txn.Committed {
			if res.Status == txn.Unknown && !s.settled {
				s.t.Fatalf("WOT %v gave up without timeouts", c.h.ID())
			}
			continue
		}
		// I6: ct ≥ vc, and ct[k] > vc[k] at every participant k; I5: every version carries ct.
		ct := c.lib.vc
		if !before.LessEq(ct) {
			s.t.Fatalf("I6: WOT %v: clock %v after %v", c.h.ID(), ct, before)
		}
		for k := range c.write {
			p := tcc.PartitionOf(k, len(s.reps))
			if ct[p] <= before[p] {
				s.t.Fatalf("I6: WOT %v: ct %v not above %v at participant %d", c.h.ID(), ct, before, p)
			}
			if kv := s.reps[p].keys[k]; kv != nil {
				for _, v := range kv.list {
					if v.writer == c.h.ID() && !v.ct.Equal(ct) {
						s.t.Fatalf("I5: WOT %v's version of %s carries %v, its ct is %v", c.h.ID(), k, v.ct, ct)
					}
				}
			}
		}
	}
}

// quiet reports whether nothing is in flight, no partition holds a pending transaction, and
// every live client is idle.
func (s *s14) quiet() bool {
	if len(s.w.InFlight()) > 0 {
		return false
	}
	for _, r := range s.reps {
		if len(r.pending) > 0 {
			return false
		}
	}
	for _, c := range s.clients {
		if !c.crashed && c.h != nil && !c.h.Done() {
			return false
		}
	}
	return true
}
