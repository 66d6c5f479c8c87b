package tccscript

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/verify/checker"
)

// This file holds the pieces of the random-interleaving tests: the network's random steps
// (DeliverRandom, DropRandom, Heal), a driver that draws them with the test's own (Interleaving),
// the whole-group oracle for fractured reads (WholeGroup), and the end of every such test (a
// ROT at quiescence, CheckTCC).

// Heads lists the oldest in-flight item of every link (what FIFO links may deliver next), in
// the order of those items.
func (w *World) Heads() []Envelope {
	var heads []Envelope
	for i, e := range w.inFlight {
		if !w.blocked(i) {
			heads = append(heads, e)
		}
	}
	return heads
}

// DeliverRandom delivers the oldest item of a link chosen uniformly at random among the links
// with something in flight (one r.IntN over Heads) and returns it; ok is false, and r is not
// drawn, when nothing is in flight.
func (w *World) DeliverRandom(r *rand.Rand) (e Envelope, ok bool) {
	heads := w.Heads()
	if len(heads) == 0 {
		return Envelope{}, false
	}
	e = heads[r.IntN(len(heads))]
	w.Deliver(func(o Envelope) bool { return o.seq == e.seq })
	return e, true
}

// DropRandom loses one in-flight item chosen uniformly at random among those match accepts
// (any item when match is nil; one r.IntN over them) and reports whether there was one; r is
// not drawn when there is none.
func (w *World) DropRandom(r *rand.Rand, match func(Envelope) bool) bool {
	var seqs []uint64
	for _, e := range w.inFlight {
		if match == nil || match(e) {
			seqs = append(seqs, e.seq)
		}
	}
	if len(seqs) == 0 {
		return false
	}
	seq := seqs[r.IntN(len(seqs))]
	w.Drop(func(o Envelope) bool { return o.seq == seq })
	return true
}

// IsPeerMessage accepts replica-to-replica messages, for DropRandom: lose peer messages only.
func IsPeerMessage(e Envelope) bool { return e.Kind == PeerMessage }

// Heal ends a stretch of losses: rounds times it delivers everything in flight and advances the
// clock by stepUs, so that the timers (timeouts, retransmissions, gossip) resolve what was lost,
// and then delivers what the last timers sent.
func (w *World) Heal(rounds int, stepUs int64) {
	for range rounds {
		w.DeliverAll()
		w.Advance(stepUs)
	}
	w.DeliverAll()
}

// FinalRead is the ROT a fresh client runs at quiescence (C6): it reads keys, everything in
// flight is delivered, and the test fails if the ROT did not finish.
func (w *World) FinalRead(keys ...string) *Handle {
	w.t.Helper()
	h := w.Client().Read(keys...)
	w.DeliverAll()
	if !h.Done() {
		w.t.Fatalf("the ROT %v at quiescence did not finish", h.ID())
	}
	return h
}

// CheckTCC runs the checker with the Causal model (C1–C6) over the world's history: ROTs may
// take maxRounds rounds (C5), and final are the ROTs run at quiescence (C6).
func (w *World) CheckTCC(maxRounds int, final ...*Handle) checker.Report {
	opts := checker.Options{Model: checker.Causal, MaxRounds: maxRounds}
	for _, h := range final {
		opts.Final = append(opts.Final, h.ID())
	}
	return checker.Check(w.History(), opts)
}

// Step is one kind of step of an Interleaving: Do runs with probability Weight over the sum of
// the weights.
type Step struct {
	Weight int
	Do     func()
}

// Interleaving drives a World through random steps, for the tests that look for what no
// scenario thought of. Each step, drawn by weight, starts a transaction at a random client,
// runs one of the test's own Steps, delivers the head of a random link, loses a random
// in-flight item, or advances the clock by a random duration. The draw is one Rand.IntN of
// the weights' sum, the kinds taken in that order, so it draws what a switch over cumulative
// thresholds (r < start, r < start+steps…) would.
type Interleaving struct {
	W    *World
	Rand *rand.Rand
	// Clients run one transaction at a time; Handles[i] is client i's latest, nil before its
	// first (Run allocates Handles when it is nil).
	Clients []*Client
	Handles []*Handle
	// Start begins a transaction at c. A start step (weight StartWeight) picks one of Clients at
	// random and does nothing more when its latest transaction has not finished.
	Start       func(c *Client) *Handle
	StartWeight int
	// Steps are the test's own kinds of step (sessions with roles, gossip, crashes).
	Steps []Step
	// DeliverWeight weighs DeliverRandom, DropWeight DropRandom of what Lose accepts (anything
	// when Lose is nil), AdvanceWeight an Advance by a random duration below AdvanceUs.
	DeliverWeight, DropWeight, AdvanceWeight int
	Lose                                     func(Envelope) bool
	AdvanceUs                                int64
	// Finished, when not nil, sees each of the Clients' transactions once, after the step that
	// finished it (or in Heal).
	Finished func(h *Handle)
	seen     map[*Handle]bool
}

// Run takes steps random steps.
func (it *Interleaving) Run(steps int) {
	if it.Handles == nil {
		it.Handles = make([]*Handle, len(it.Clients))
	}
	total := it.StartWeight + it.DeliverWeight + it.DropWeight + it.AdvanceWeight
	for _, s := range it.Steps {
		total += s.Weight
	}
	for range steps {
		it.step(it.Rand.IntN(total))
		it.finished()
	}
}

func (it *Interleaving) step(x int) {
	if x < it.StartWeight {
		if i := it.Rand.IntN(len(it.Clients)); !it.Busy(i) {
			it.Handles[i] = it.Start(it.Clients[i])
		}
		return
	}
	x -= it.StartWeight
	for _, s := range it.Steps {
		if x < s.Weight {
			s.Do()
			return
		}
		x -= s.Weight
	}
	switch {
	case x < it.DeliverWeight:
		it.W.DeliverRandom(it.Rand)
	case x < it.DeliverWeight+it.DropWeight:
		it.W.DropRandom(it.Rand, it.Lose)
	default:
		it.W.Advance(it.Rand.Int64N(it.AdvanceUs))
	}
}

// Busy reports whether client i's latest transaction has not finished.
func (it *Interleaving) Busy(i int) bool { return it.Handles[i] != nil && !it.Handles[i].Done() }

func (it *Interleaving) finished() {
	if it.Finished == nil {
		return
	}
	if it.seen == nil {
		it.seen = map[*Handle]bool{}
	}
	for _, h := range it.Handles {
		if h != nil && h.Done() && !it.seen[h] {
			it.seen[h] = true
			it.Finished(h)
		}
	}
}

// Heal heals the network (World.Heal), shows Finished what finished, and returns an error
// naming a client whose transaction still did not.
func (it *Interleaving) Heal(rounds int, stepUs int64) error {
	it.W.Heal(rounds, stepUs)
	it.finished()
	for i, h := range it.Handles {
		if it.Busy(i) {
			return fmt.Errorf("client %d's %v never finished", it.Clients[i].ID(), h.ID())
		}
	}
	return nil
}

// WholeGroup is the oracle of the interleaving tests whose every WOT writes the whole group of
// Keys, one value to all: an atomic snapshot then names one writer for every key, so a ROT that
// mixes writers (or a write with ⊥) is a fractured read.
type WholeGroup struct {
	Keys   []string
	values map[txn.ID]string // what each WOT wrote
}

// Write starts at c a WOT writing the group's next value ("w1", "w2", …) to every key.
func (g *WholeGroup) Write(c *Client) *Handle {
	if g.values == nil {
		g.values = map[txn.ID]string{}
	}
	v := fmt.Sprintf("w%d", len(g.values)+1)
	kv := map[string]string{}
	for _, k := range g.Keys {
		kv[k] = v
	}
	h := c.Write(kv)
	g.values[h.ID()] = v
	return h
}

// Fractured returns an error when h, a finished ROT of group keys, mixes writers or read a value
// other than its writer's; nil for a WOT and an unfinished transaction.
func (g *WholeGroup) Fractured(h *Handle) error {
	reads := h.ReadResult().Reads
	for _, rd := range reads {
		if rd.Version != reads[0].Version || string(rd.Value) != g.values[rd.Version] {
			return fmt.Errorf("fractured read %v: %+v", h.ID(), reads)
		}
	}
	return nil
}

// Settled checks the group at quiescence: every partition orders the WOTs alike (each wrote
// every key), and final, a ROT of group keys run then, read the newest of them. It returns
// that order.
func (g *WholeGroup) Settled(w *World, final *Handle) ([]txn.ID, error) {
	order := w.versionOrderOf(g.Keys[0])
	for _, k := range g.Keys[1:] {
		if got := w.versionOrderOf(k); !slices.Equal(got, order) {
			return order, fmt.Errorf("%s's partition orders it %v, %s's %v", k, got, g.Keys[0], order)
		}
	}
	if err := g.Fractured(final); err != nil {
		return order, err
	}
	last := txn.None
	if len(order) > 0 {
		last = order[len(order)-1]
	}
	if got := final.ReadResult().Reads[0].Version; got != last {
		return order, fmt.Errorf("at quiescence a ROT read %v, the newest version is %v", got, last)
	}
	return order, nil
}

// versionOrderOf returns key's version order at its partition.
func (w *World) versionOrderOf(key string) []txn.ID {
	return w.versionOrder(w.layout.Node[0][tcc.PartitionOf(key, w.layout.Partitions())])[key]
}

// versionOrder is node i's version order: protocol.VersionOrderer's when the replica implements
// it, else its store's.
func (w *World) versionOrder(i protocol.NodeID) map[string][]txn.ID {
	if vo, ok := protocol.Innermost(w.replicas[i]).(protocol.VersionOrderer); ok {
		return vo.VersionOrder()
	}
	return w.envs[i].store.VersionOrder()
}
