package alvin

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/internal/scripted"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// neverMs is a delivery time beyond every script: a message held until then is lost.
const neverMs = 1 << 40

// delivery is one PODeliver a node made, as the invariants see it.
type delivered struct {
	id        txn.ID
	committed bool
	pos       uint64
}

// script drives N ALVIN replicas by hand (internal/scripted) and checks the POB invariants of
// spec §6.1 after every event.
type script struct {
	t    *testing.T
	w    *scripted.World
	reps []*Replica
	logs [][]delivered // per node, in delivery order
	// holds: messages matching a rule are held until its time (neverMs: lost).
	holds   []hold
	crashed []bool
}

type hold struct {
	from, to int // -1: any
	match    func(protocol.Message) bool
	untilMs  int64
}

// equalTopology is n datacenters "0".."n-1" with every RTT rttMs.
func equalTopology(n int, rttMs float64) *topology.Topology {
	t := &topology.Topology{Name: fmt.Sprintf("equal-%d", n)}
	for i := range n {
		t.DCs = append(t.DCs, fmt.Sprint(i))
		row, sd := make([]float64, n), make([]float64, n)
		for j := range n {
			if i != j {
				row[j] = rttMs
			}
		}
		t.RTTMs, t.StdDevMs = append(t.RTTMs, row), append(t.StdDevMs, sd)
	}
	return t
}

func newScript(t *testing.T, n int, fast bool, params protocol.Params) *script {
	t.Helper()
	s := &script{t: t, logs: make([][]delivered, n), crashed: make([]bool, n)}
	w, err := scripted.New(equalTopology(n, 20), newFactory(fast), params, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	for i, rep := range w.Replicas {
		r := rep.(*Replica)
		s.reps = append(s.reps, r)
		r.onDeliver = func(id txn.ID, committed bool) {
			s.logs[i] = append(s.logs[i], delivered{id: id, committed: committed, pos: r.entries[id].pos})
		}
	}
	w.Hold = func(from, to int, _ int64, m protocol.Message) int64 {
		if s.crashed[from] || s.crashed[to] {
			return neverMs
		}
		for _, h := range s.holds {
			if (h.from < 0 || h.from == from) && (h.to < 0 || h.to == to) && h.match(m) && h.untilMs > w.NowMs() {
				return h.untilMs
			}
		}
		return 0
	}
	w.AfterEvent = s.check
	return s
}

// holdMsgs holds the messages from → to (-1: any) that match until untilMs.
func (s *script) holdMsgs(from, to int, match func(protocol.Message) bool, untilMs int64) {
	s.holds = append(s.holds, hold{from: from, to: to, match: match, untilMs: untilMs})
}

// proposeOf matches the PROPOSE of transaction name.
func (s *script) proposeOf(name string) func(protocol.Message) bool {
	return func(m protocol.Message) bool {
		p, ok := m.(*Propose)
		return ok && p.Tid == s.w.ID(name)
	}
}

func anyMsg(protocol.Message) bool { return true }

// tick runs every live node's housekeeping now.
func (s *script) tick() {
	for i := range s.reps {
		if !s.crashed[i] {
			s.w.Send(i)
		}
	}
}

// settle runs ticks every 10 ms until untilMs.
func (s *script) settle(untilMs int64) {
	for now := s.w.NowMs(); now < untilMs; now += 10 {
		s.w.RunTo(now)
		s.tick()
	}
	s.w.RunTo(untilMs)
}

func (s *script) stable(node int, name string) *entry {
	e := s.reps[node].entries[s.w.ID(name)]
	if e == nil || e.status != StableStatus {
		s.t.Fatalf("%s is not stable at node %d\n%s", name, node, s.w.Trace())
	}
	return e
}

func (s *script) wantOutcome(name string, status txn.Status) {
	s.t.Helper()
	o, ok := s.w.Outcome(name)
	if !ok || o.Status != status {
		s.t.Fatalf("%s: outcome %+v (answered %v), want %v\n%s", name, o, ok, status, s.w.Trace())
	}
}

// order returns the position of name in node's delivery log, or -1.
func (s *script) order(node int, name string) int {
	return slices.IndexFunc(s.logs[node], func(d delivered) bool { return d.id == s.w.ID(name) })
}

// wantDeliveredEverywhere requires every live node to have delivered the named transactions in
// this order.
func (s *script) wantOrder(names ...string) {
	s.t.Helper()
	for node := range s.reps {
		if s.crashed[node] {
			continue
		}
		last := -1
		for _, name := range names {
			at := s.order(node, name)
			if at < 0 || at < last {
				s.t.Fatalf("node %d delivered %s at %d after index %d (want the order %v)\n%s", node, name, at, last, names, s.w.Trace())
			}
			last = at
		}
	}
}

func conflict(a, b *txn.Txn) bool { return a.WriteConflicts(b) || b.WriteConflicts(a) }

// violations returns the invariants of §6.1 that the replicas' current state and delivery logs
// break (1, 2, 3, 4, 5, 6, 7, 10).
func (s *script) violations() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	payload := map[txn.ID]*txn.Txn{}
	gone := map[txn.ID]bool{}
	for _, r := range s.reps {
		for id, e := range r.entries {
			if e.t != nil {
				payload[id] = e.t
			}
		}
		for id := range r.gone {
			gone[id] = true
		}
	}
	// 6: one position per stable transaction; no double delivery. 7: one outcome.
	stablePos := map[txn.ID]uint64{}
	outcome := map[txn.ID]bool{}
	for node, r := range s.reps {
		for _, id := range sortedIDs(r.entries) {
			e := r.entries[id]
			if e.status != StableStatus || e.noop {
				continue
			}
			if p, ok := stablePos[id]; ok && p != e.pos {
				bad("inv 6: %v stable at pos %d and %d", id, p, e.pos)
			}
			stablePos[id] = e.pos
			// 5: decided in epoch 0 by its origin: the origin's residue, not below its proposal.
			if e.promised == 0 && e.hasProposal && (e.pos%uint64(r.n) != e.proposedPos%uint64(r.n) || e.pos < e.proposedPos) {
				bad("inv 5: %v decided at %d from proposal %d", id, e.pos, e.proposedPos)
			}
		}
		seen := map[txn.ID]bool{}
		for _, d := range s.logs[node] {
			if seen[d.id] {
				bad("inv 6: node %d delivered %v twice", node, d.id)
			}
			seen[d.id] = true
			if c, ok := outcome[d.id]; ok && c != d.committed {
				bad("inv 7: %v committed at one node, aborted at another", d.id)
			}
			outcome[d.id] = d.committed
		}
	}
	// 1, 2, 4: conflicting deliveries in increasing key order at every node, and a node delivers
	// the later one only after the earlier one.
	for node, log := range s.logs {
		for i, a := range log {
			for _, b := range log[i+1:] {
				ta, tb := payload[a.id], payload[b.id]
				if ta == nil || tb == nil || !conflict(ta, tb) {
					continue
				}
				if !keyLess(a.pos, a.id, b.pos, b.id) {
					bad("inv 2: node %d delivered %v (pos %d) before %v (pos %d)", node, a.id, a.pos, b.id, b.pos)
				}
				for other, olog := range s.logs {
					ia := slices.IndexFunc(olog, func(d delivered) bool { return d.id == a.id })
					ib := slices.IndexFunc(olog, func(d delivered) bool { return d.id == b.id })
					if ib >= 0 && (ia < 0 || ia > ib) {
						bad("inv 1: node %d delivered %v before %v, node %d delivered %v without %v first", node, a.id, b.id, other, b.id, a.id)
					}
				}
			}
		}
	}
	// 3: the core lemma over stable entries, and the removal rule's converse.
	for _, r := range s.reps {
		for _, y := range sortedIDs(r.entries) {
			ey := r.entries[y]
			if ey.status != StableStatus || ey.noop || ey.t == nil {
				continue
			}
			for _, x := range sortedIDs(stablePos) {
				tx := payload[x]
				if x == y || gone[x] || tx == nil || !conflict(tx, ey.t) || !keyLess(stablePos[x], x, ey.pos, y) {
					continue
				}
				if _, in := slices.BinarySearch(ey.deps, x); !in {
					bad("inv 3: %v (pos %d) conflicts with %v (pos %d) but is not in its deps %v at node %d", x, stablePos[x], y, ey.pos, ey.deps, r.self)
				}
			}
			for _, d := range ey.deps {
				ed := r.entries[d]
				if ed == nil || ed.status != StableStatus || ed.noop || !keyLess(ey.pos, y, ed.pos, d) {
					continue
				}
				if _, in := slices.BinarySearch(ed.deps, y); !in {
					bad("inv 3: %v removed %v (key above) but is not in its deps %v at node %d", y, d, ed.deps, r.self)
				}
			}
		}
	}
	// 10: a fast decision had exactly FQ identical answers in epoch 0.
	for _, r := range s.reps {
		for _, id := range sortedIDs(r.leads) {
			l := r.leads[id]
			if !l.fastDecision {
				continue
			}
			if l.epoch != 0 || l.count != r.fq {
				bad("inv 10: %v fast-decided in epoch %d with %d answers (FQ %d)", id, l.epoch, l.count, r.fq)
			}
			for _, rp := range l.replies {
				if rp.ok && (rp.pos != l.pos0 || !slices.Equal(rp.deps, l.deps0)) {
					bad("inv 10: %v fast-decided with a differing answer", id)
				}
			}
		}
	}
	return out
}

// check fails the test at the first event after which an invariant is broken.
func (s *script) check() {
	if v := s.violations(); len(v) > 0 {
		s.t.Fatalf("after event at %d ms:\n%s\ntrace:\n%s", s.w.NowMs(), strings.Join(v, "\n"), s.w.Trace())
	}
}

// checkConverged is invariant 7's second half: the live nodes' stores hold the same versions.
func (s *script) checkConverged() {
	s.t.Helper()
	var first map[string][]txn.ID
	for node := range s.reps {
		if s.crashed[node] {
			continue
		}
		got := s.w.Store(node).VersionOrder()
		if first == nil {
			first = got
		} else if !reflect.DeepEqual(first, got) {
			s.t.Fatalf("node %d's versions %v differ from %v\n%s", node, got, first, s.w.Trace())
		}
	}
}
