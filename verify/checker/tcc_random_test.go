package checker_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
)

// tccGenOptions shapes a random history of the reference store.
type tccGenOptions struct {
	txns, sessions, keys, partitions, dcs int
	// writeFraction of the transactions are WOTs; staleFraction of the ROTs read the oldest
	// snapshot their session may read.
	writeFraction, staleFraction float64
}

// tccVersion is one committed version: its index in the global sequence and its writer.
type tccVersion struct {
	at     int
	writer txn.ID
}

// tccReference is a reference TCC store: committed WOTs take effect in one global sequence, and
// a ROT reads the latest version of each key in a prefix of that sequence, which is an atomic
// and causally closed snapshot; the prefix holds the session's causal past (it is at least the
// session's low mark). A WOT of unknown outcome may still commit, without its session learning
// it (its low mark stays), like a client whose reply was lost.
type tccReference struct {
	rng       *rand.Rand
	opts      tccGenOptions
	keys      []string
	committed int
	versions  map[string][]tccVersion
	low       []int // per session: the shortest prefix holding its causal past
	seq       []uint32
	txns      []history.Txn
	order     map[string][]txn.ID
}

func generateTCC(seed uint64, opts tccGenOptions) *history.History {
	g := &tccReference{
		rng: rand.New(rand.NewPCG(seed, 11)), opts: opts, versions: make(map[string][]tccVersion),
		low: make([]int, opts.sessions), seq: make([]uint32, opts.sessions), order: make(map[string][]txn.ID),
	}
	for i := range opts.keys {
		g.keys = append(g.keys, fmt.Sprintf("k%d", i))
	}
	g.txns = make([]history.Txn, 0, opts.txns)
	for range opts.txns {
		s := g.rng.IntN(opts.sessions)
		g.seq[s]++
		id := txn.NewID(txn.ClientID(s+1), g.seq[s])
		if g.rng.Float64() < opts.writeFraction {
			g.write(s, id)
		} else {
			g.read(s, id)
		}
	}
	return g.history()
}

func (g *tccReference) pickKeys(max int) []string {
	n := 1 + g.rng.IntN(max)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = g.keys[g.rng.IntN(len(g.keys))]
	}
	return keys
}

func (g *tccReference) write(s int, id txn.ID) {
	t := history.Txn{ID: id, Status: txn.Committed, Writes: g.pickKeys(4)}
	commit := true
	switch r := g.rng.IntN(100); {
	case r < 5:
		t.Status, commit = txn.Aborted, false
	case r < 10:
		t.Status, commit = txn.Unknown, g.rng.IntN(2) == 0
	}
	if commit {
		at := g.committed
		g.committed++
		for _, key := range slices.Compact(slices.Sorted(slices.Values(t.Writes))) {
			g.versions[key] = append(g.versions[key], tccVersion{at, id})
			g.order[key] = append(g.order[key], id)
		}
		if t.Status == txn.Committed {
			g.low[s] = g.committed
		}
	}
	g.txns = append(g.txns, t)
}

func (g *tccReference) read(s int, id txn.ID) {
	prefix := g.low[s]
	if g.rng.Float64() >= g.opts.staleFraction {
		prefix += g.rng.IntN(g.committed - g.low[s] + 1)
	}
	t := history.Txn{ID: id, Status: txn.Committed, Rounds: 1 + g.rng.IntN(2)}
	for _, key := range g.pickKeys(5) {
		vs := g.versions[key]
		i, _ := slices.BinarySearchFunc(vs, prefix, func(v tccVersion, at int) int { return v.at - at })
		read := txn.None
		if i > 0 {
			read = vs[i-1].writer
			g.low[s] = max(g.low[s], vs[i-1].at+1) // the writer and its past are now in the session's
		}
		t.Reads = append(t.Reads, txn.Read{Key: key, Version: read})
	}
	g.txns = append(g.txns, t)
}

// history records the version orders: every partition of datacenter 0 holds the full order of
// its keys; the other datacenters lag, holding a prefix of each.
func (g *tccReference) history() *history.History {
	h := &history.History{Txns: g.txns}
	for dc := range g.opts.dcs {
		for p := range g.opts.partitions {
			rep := history.Replica{Name: fmt.Sprintf("dc%d/p%d", dc, p), VersionOrder: make(map[string][]txn.ID)}
			for k := p; k < len(g.keys); k += g.opts.partitions {
				order := g.order[g.keys[k]]
				if dc > 0 {
					order = order[:g.rng.IntN(len(order)+1)]
				}
				rep.VersionOrder[g.keys[k]] = slices.Clone(order)
			}
			h.Replicas = append(h.Replicas, rep)
		}
	}
	return h
}

// readAt names one read of a history: transaction and key.
type readAt struct {
	id  txn.ID
	key string
}

// naiveC2 is C2 by its definition: for each ROT, Past(ROT) by a graph search over session order
// and reads-from, then every read checked against every writer in it. Quadratic; for small
// histories. Version positions come from datacenter 0, which holds the full orders.
func naiveC2(h *history.History) map[readAt]bool {
	pos := make(map[readAt]int) // (writer, key) -> position, 1-based
	for _, rep := range h.Replicas {
		for key, order := range rep.VersionOrder {
			for i, w := range order {
				pos[readAt{w, key}] = max(pos[readAt{w, key}], i+1)
			}
		}
	}
	byID := make(map[txn.ID]*history.Txn)
	for i := range h.Txns {
		byID[h.Txns[i].ID] = &h.Txns[i]
	}
	// Predecessors: every earlier transaction of the session whose outcome the client learned
	// as committed, and every writer read.
	preds := func(t *history.Txn) []txn.ID {
		var ps []txn.ID
		for seq := uint32(1); seq < t.ID.Seq(); seq++ {
			if p, ok := byID[txn.NewID(t.ID.Client(), seq)]; ok && p.Status == txn.Committed {
				ps = append(ps, p.ID)
			}
		}
		for _, r := range t.Reads {
			if r.Version != txn.None {
				ps = append(ps, r.Version)
			}
		}
		return ps
	}
	bad := make(map[readAt]bool)
	for i := range h.Txns {
		t := &h.Txns[i]
		if len(t.Reads) == 0 {
			continue
		}
		past := make(map[txn.ID]bool)
		stack := preds(t)
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !past[id] {
				past[id] = true
				stack = append(stack, preds(byID[id])...)
			}
		}
		for _, r := range t.Reads {
			for id := range past {
				if p := pos[readAt{id, r.Key}]; p > 0 && p > pos[readAt{r.Version, r.Key}] {
					bad[readAt{t.ID, r.Key}] = true
				}
			}
		}
	}
	return bad
}

// c2Reads returns the reads a report flags under C2, failing on any other anomaly.
func c2Reads(t *testing.T, r checker.Report) map[readAt]bool {
	t.Helper()
	got := make(map[readAt]bool)
	for _, a := range r.Anomalies {
		if a.Kind != checker.TCCSnapshot {
			t.Fatalf("unexpected anomaly %v", a)
		}
		got[readAt{a.Txns[0], a.Key}] = true
	}
	return got
}

var tccGenShapes = []tccGenOptions{
	{txns: 300, sessions: 8, keys: 30, partitions: 3, dcs: 1, writeFraction: 0.3, staleFraction: 0.2},
	{txns: 300, sessions: 20, keys: 8, partitions: 2, dcs: 2, writeFraction: 0.5, staleFraction: 0.5},
	// Few keys and many stale reads: the scans run long and use the per-session index.
	{txns: 800, sessions: 40, keys: 3, partitions: 1, dcs: 1, writeFraction: 0.6, staleFraction: 0.8},
}

func TestTCCReferenceHistoriesPass(t *testing.T) {
	for seed := range uint64(60) {
		opts := tccGenShapes[seed%uint64(len(tccGenShapes))]
		h := generateTCC(seed, opts)
		if bad := naiveC2(h); len(bad) > 0 {
			t.Fatalf("seed %d: the reference store made C2 violations %v", seed, bad)
		}
		r := checker.Check(h, checker.Options{Model: checker.Causal, MaxRounds: 2, StrictG0: true})
		if !r.OK || len(r.Info) > 0 || r.ROTs+r.Committed+r.Aborted != len(h.Txns) {
			t.Fatalf("seed %d (%+v): %v", seed, opts, r)
		}
	}
}

// TestTCCMutatedReadIsFlagged makes one read of a valid history return an older version that a
// writer in the reader's (new) causal past overwrote, and checks that exactly the reads the
// naive definition flags are flagged, this one among them, and the same way every time.
func TestTCCMutatedReadIsFlagged(t *testing.T) {
	for seed := range uint64(60) {
		opts := tccGenShapes[seed%uint64(len(tccGenShapes))]
		h := generateTCC(seed, opts)
		at := mutateRead(t, seed, h)
		bad := naiveC2(h)
		r := checker.Check(h, causal)
		if again := checkLog(h, causal); !reflect.DeepEqual(r, again) {
			t.Fatalf("seed %d: Check and CheckLog of one history differ:\n%v\n%v", seed, r, again)
		}
		got := c2Reads(t, r)
		if !got[at] || len(got) != len(bad) {
			t.Fatalf("seed %d: mutated %v; checker flags %v, the definition %v", seed, at, got, bad)
		}
		for a := range bad {
			if !got[a] {
				t.Fatalf("seed %d: mutated %v; checker flags %v, the definition %v", seed, at, got, bad)
			}
		}
	}
}

// checkLog is checker.CheckLog of h's transactions appended to a history.Log.
func checkLog(h *history.History, opts checker.Options) checker.Report {
	var l history.Log
	for _, t := range h.Txns {
		l.Append(t)
	}
	return checker.CheckLog(&l, h.Replicas, opts)
}

// mutateRead changes one read of h to an older version of its key such that the result
// violates C2 by the naive definition, and returns it.
func mutateRead(t *testing.T, seed uint64, h *history.History) readAt {
	rng := rand.New(rand.NewPCG(seed, 12))
	full := make(map[string][]txn.ID)
	for _, rep := range h.Replicas {
		for key, order := range rep.VersionOrder {
			if len(order) > len(full[key]) {
				full[key] = order
			}
		}
	}
	for range 10000 {
		tr := &h.Txns[rng.IntN(len(h.Txns))]
		if len(tr.Reads) == 0 {
			continue
		}
		r := &tr.Reads[rng.IntN(len(tr.Reads))]
		p := slices.Index(full[r.Key], r.Version) + 1 // 0 for ⊥
		listed := 0
		for _, o := range tr.Reads {
			if o.Key == r.Key {
				listed++
			}
		}
		if p == 0 || listed > 1 { // a key listed twice would also fail C4
			continue
		}
		was := r.Version
		if older := rng.IntN(p); older == 0 {
			r.Version = txn.None
		} else {
			r.Version = full[r.Key][older-1]
		}
		if naiveC2(h)[readAt{tr.ID, r.Key}] {
			return readAt{tr.ID, r.Key}
		}
		r.Version = was
	}
	t.Fatalf("seed %d: found no read to make stale", seed)
	return readAt{}
}

// BenchmarkCheckCausal checks a 100,000-transaction history of the reference store with 1,000
// sessions, 20,000 keys on 8 partitions and 20% WOTs.
func BenchmarkCheckCausal(b *testing.B) {
	h := generateTCC(1, tccGenOptions{txns: 100_000, sessions: 1000, keys: 20_000, partitions: 8, dcs: 1,
		writeFraction: 0.2, staleFraction: 0.1})
	b.ReportAllocs()
	for b.Loop() {
		if r := checker.Check(h, checker.Options{Model: checker.Causal, MaxRounds: 2}); !r.OK {
			b.Fatal(r)
		}
	}
}
