package cop

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlanFigure6_3 is CS1: T1 reads and writes p, T2 q, T3 p (seed Fig. 6.3). T1 and T2 are
// independent; T3 reads T1's p.
func TestPlanFigure6_3(t *testing.T) {
	txns := mustTxns(t, [2][]uint32{set(p), set(p)}, [2][]uint32{set(q), set(q)}, [2][]uint32{set(p), set(p)})
	plan, err := PlanAll(txns)
	if err != nil {
		t.Fatal(err)
	}
	want := []PlannedTxn{
		{ID: 1, Index: 0, Reads: []PlannedRead{{p, 0}}, Writes: []PlannedWrite{{p, 0, 1}}},
		{ID: 2, Index: 1, Reads: []PlannedRead{{q, 0}}, Writes: []PlannedWrite{{q, 0, 1}}},
		{ID: 3, Index: 2, Reads: []PlannedRead{{p, 1}}, Writes: []PlannedWrite{{p, 1, 1}}},
	}
	for i, w := range want {
		if got := plan.Txn(TxnID(i + 1)); !reflect.DeepEqual(got, w) {
			t.Errorf("T%d = %+v, want %+v", i+1, got, w)
		}
	}
}

// TestExecuteFigure6_3 runs CS1 with three workers started together, one transaction each:
// T2 runs while T1 is still computing, and T3 stays in ReadWait until T1 installs p.
func TestExecuteFigure6_3(t *testing.T) {
	txns := mustTxns(t, [2][]uint32{set(p), set(p)}, [2][]uint32{set(q), set(q)}, [2][]uint32{set(p), set(p)})
	plan, err := PlanAll(txns)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := NewSchedule(3, [][]TxnID{{1}, {2}, {3}})
	if err != nil {
		t.Fatal(err)
	}
	comp := &fig63{release: make(chan struct{}), t2Done: make(chan struct{}), t3Started: make(chan []float64, 1)}
	e := mustEngine(t, COP, plan, Options{Workers: 3, Schedule: sched})
	done := make(chan EpochStats)
	go func() { done <- e.RunEpoch(comp) }()
	select {
	case <-comp.t2Done: // T2 finished its computation while T1 holds its own back
	case <-time.After(watchdog):
		t.Fatal("T2 did not run while T1 was computing")
	}
	select {
	case <-comp.t3Started:
		t.Fatal("T3 computed before T1 installed p")
	case <-time.After(20 * time.Millisecond):
	}
	close(comp.release)
	select {
	case mu := <-comp.t3Started:
		if mu[0] != 1.5 {
			t.Errorf("T3 read p = %v, want T1's 1.5", mu[0])
		}
	case <-time.After(watchdog):
		t.Fatal("T3 never left ReadWait")
	}
	<-done
	if got := e.Values(); got[p] != 2.5 || got[q] != 1 {
		t.Errorf("final p, q = %v, %v; want 2.5, 1", got[p], got[q])
	}
}

// fig63 is CS1's computation: every transaction adds 1 to what it read, except T1, which adds
// 1.5 once released.
type fig63 struct {
	release   chan struct{}
	t2Done    chan struct{}
	t3Started chan []float64
}

func (f *fig63) Compute(j int, mu, delta []float64) {
	switch j {
	case 0:
		<-f.release
		delta[0] = mu[0] + 1.5
		return
	case 1:
		defer close(f.t2Done)
	case 2:
		f.t3Started <- append([]float64(nil), mu...)
	}
	delta[0] = mu[0] + 1
}

// cs2 is CS2's transactions: T1 r/w{a,b}; T2 r/w{b,c}; T3 r{a} w{c}; T4 r{a,c} w{a}; T5 r{b}.
func cs2(t testing.TB) *Txns {
	return mustTxns(t,
		[2][]uint32{set(a, b), set(a, b)},
		[2][]uint32{set(b, c), set(b, c)},
		[2][]uint32{set(a), set(c)},
		[2][]uint32{set(a, c), set(a)},
		[2][]uint32{set(b), nil},
	)
}

// TestPlanCS2 checks Alg. 12 against CS2's hand-computed plan and final planning state.
func TestPlanCS2(t *testing.T) {
	planner := NewPlanner(0)
	txns := cs2(t)
	for j := range txns.Len() {
		planner.Add(txns.ReadSet(j), txns.WriteSet(j))
	}
	summary := planner.Summary()
	plan, err := planner.Plan(txns)
	if err != nil {
		t.Fatal(err)
	}
	want := []PlannedTxn{
		{ID: 1, Index: 0, Reads: []PlannedRead{{a, 0}, {b, 0}}, Writes: []PlannedWrite{{a, 0, 1}, {b, 0, 1}}},
		{ID: 2, Index: 1, Reads: []PlannedRead{{b, 1}, {c, 0}}, Writes: []PlannedWrite{{b, 1, 1}, {c, 0, 1}}},
		{ID: 3, Index: 2, Reads: []PlannedRead{{a, 1}}, Writes: []PlannedWrite{{c, 2, 0}}},
		{ID: 4, Index: 3, Reads: []PlannedRead{{a, 1}, {c, 3}}, Writes: []PlannedWrite{{a, 1, 2}}},
		{ID: 5, Index: 4, Reads: []PlannedRead{{b, 2}}},
	}
	for i, w := range want {
		if got := plan.Txn(TxnID(i + 1)); !reflect.DeepEqual(got, w) {
			t.Errorf("T%d = %+v, want %+v", i+1, got, w)
		}
	}
	wantSummary := []ParamSummary{{a, 4, 0}, {b, 2, 1}, {c, 3, 1}}
	if !reflect.DeepEqual(summary, wantSummary) {
		t.Errorf("final Planned_version_list and version_readers = %v, want %v", summary, wantSummary)
	}
}

// TestTranspositionCS3 admits CS2 as one batch and {U1 r{a,b} w{a}; U2 w{b}} as the next, and
// checks the transposed annotations, the central state and equality with the one-pass plan.
func TestTranspositionCS3(t *testing.T) {
	b1, err := NewBatch("east", 1, cs2(t))
	if err != nil {
		t.Fatal(err)
	}
	b2, err := NewBatch("west", 1, mustTxns(t, [2][]uint32{set(a, b), set(a)}, [2][]uint32{nil, set(b)}))
	if err != nil {
		t.Fatal(err)
	}
	local := []PlannedTxn{
		{ID: 1, Index: 0, Reads: []PlannedRead{{a, 0}, {b, 0}}, Writes: []PlannedWrite{{a, 0, 1}}},
		{ID: 2, Index: 1, Writes: []PlannedWrite{{b, 0, 1}}},
	}
	for i, w := range local {
		if got := b2.Plan.Txn(TxnID(i + 1)); !reflect.DeepEqual(got, w) {
			t.Errorf("U%d planned locally = %+v, want %+v", i+1, got, w)
		}
	}
	var central Central
	for _, batch := range []*BatchPlan{b1, b2} {
		if ok, err := central.Admit(batch); !ok || err != nil {
			t.Fatalf("admitting %s/%d: %v, %v", batch.SourceID, batch.BatchSeq, ok, err)
		}
	}
	plan := central.Plan()
	transposed := []PlannedTxn{
		{ID: 6, Index: 5, Reads: []PlannedRead{{a, 4}, {b, 2}}, Writes: []PlannedWrite{{a, 4, 1}}},
		{ID: 7, Index: 6, Writes: []PlannedWrite{{b, 2, 2}}},
	}
	for _, w := range transposed {
		if got := plan.Txn(w.ID); !reflect.DeepEqual(got, w) {
			t.Errorf("after admission T%d = %+v, want %+v", w.ID, got, w)
		}
	}
	if got, want := []TxnID{central.params[0].writer, central.params[1].writer, central.params[2].writer}, []TxnID{6, 7, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("LastWriter a, b, c = %v, want %v", got, want)
	}
	if got, want := []uint32{central.params[0].readers, central.params[1].readers, central.params[2].readers}, []uint32{0, 0, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Trail a, b, c = %v, want %v", got, want)
	}
	onePass, err := PlanAll(plan.Txns())
	if err != nil {
		t.Fatal(err)
	}
	if err := plansEqual(plan, onePass); err != nil {
		t.Errorf("transposed plan differs from the one-pass plan of T1..T5,U1,U2: %v", err)
	}
}

// TestPlanWellFormed is C-I1 on random transactions (pure readers, blind writers, different
// read and write sets): every annotation is what Def. 4 and Def. 5 say, computed by brute force.
func TestPlanWellFormed(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		txns := randomTxns(t, rng, 150, 1+rng.IntN(30), 5)
		plan, err := PlanAll(txns)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkWellFormed(plan); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// Fed one by one with equal sets as one slice, as loading does, the planner keeps the
		// write annotations implied until the first other transaction, then spells them out.
		p := NewPlanner(0)
		for j := range txns.Len() {
			if r, w := txns.ReadSet(j), txns.WriteSet(j); slices.Equal(r, w) {
				p.Add(r, r)
			} else {
				p.Add(r, w)
			}
		}
		fed, err := p.Plan(txns)
		if err != nil {
			t.Fatal(err)
		}
		if err := plansEqual(fed, plan); err != nil {
			t.Fatalf("seed %d: planned sample by sample: %v", seed, err)
		}
	}
}

// checkWellFormed checks C-I1 on plan by brute force: each read's version is the latest
// planned writer of its parameter before the reader; each write's PWriter is the latest planned
// writer before it, and its PReaders the planned transactions after PWriter, up to and
// including the writer, that read the parameter.
func checkWellFormed(plan *Plan) error {
	txns := plan.Txns()
	writes := func(id TxnID, x uint32) bool { return contains(txns.WriteSet(plan.Index(id)), x) }
	reads := func(id TxnID, x uint32) bool { return contains(txns.ReadSet(plan.Index(id)), x) }
	latestWriter := func(before TxnID, x uint32) TxnID {
		for i := before - 1; i >= 1; i-- {
			if writes(i, x) {
				return i
			}
		}
		return 0
	}
	for id := TxnID(1); int(id) <= plan.Len(); id++ {
		pt := plan.Txn(id)
		for _, r := range pt.Reads {
			if want := latestWriter(id, r.Param); r.Version != want {
				return fmtErr("T%d reads %d at version %d, want %d", id, r.Param, r.Version, want)
			}
		}
		for _, w := range pt.Writes {
			prev := latestWriter(id, w.Param)
			readers := uint32(0)
			for k := prev + 1; k <= id; k++ {
				if reads(k, w.Param) {
					readers++
				}
			}
			if w.PWriter != prev || w.PReaders != readers {
				return fmtErr("T%d writes %d over (%d, %d readers), want (%d, %d)", id, w.Param, w.PWriter, w.PReaders, prev, readers)
			}
		}
	}
	return nil
}

// TestTranspositionEqualsOnePass is C-I6: random transactions cut into batches at random
// places, planned per batch at several sources, admitted in an arbitrary arrival order (each
// source's batches in sequence, some sent twice), give the plan Alg. 12 makes in one pass over
// the batches in admission order.
func TestTranspositionEqualsOnePass(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 2))
		all := randomTxns(t, rng, 200, 1+rng.IntN(25), 4)
		if seed%2 == 1 { // SGD's shape: mostly batches whose write annotations are implied
			all = sharedTxns(t, rng, 200, 1+rng.IntN(25), 4)
		}
		// Cut into batches and deal them to sources; arrival interleaves the sources.
		sources := 1 + rng.IntN(4)
		queues := make([][]*Txns, sources)
		for lo := 0; lo < all.Len(); {
			hi := min(all.Len(), lo+1+rng.IntN(40))
			s := rng.IntN(sources)
			queues[s] = append(queues[s], batchOf(t, all, lo, hi, seed%2 == 1 && rng.IntN(4) > 0))
			lo = hi
		}
		var central Central
		var admitted Txns
		sent := make([]int, sources)
		for {
			var ready []int
			for s := range sources {
				if sent[s] < len(queues[s]) {
					ready = append(ready, s)
				}
			}
			if len(ready) == 0 {
				break
			}
			s := ready[rng.IntN(len(ready))]
			batch := queues[s][sent[s]]
			bp, err := NewBatch(string(rune('A'+s)), uint64(sent[s]+1), batch)
			if err != nil {
				t.Fatal(err)
			}
			for copies := 1 + rng.IntN(2); copies > 0; copies-- { // sometimes resent
				if _, err := central.Admit(bp); err != nil {
					t.Fatal(err)
				}
			}
			for j := range batch.Len() {
				if err := admitted.Append(batch.ReadSet(j), batch.WriteSet(j)); err != nil {
					t.Fatal(err)
				}
			}
			sent[s]++
		}
		onePass, err := PlanAll(&admitted)
		if err != nil {
			t.Fatal(err)
		}
		if err := plansEqual(central.Plan(), onePass); err != nil {
			t.Fatalf("seed %d: transposed plan differs from the one-pass plan: %v", seed, err)
		}
	}
}

// batchOf returns transactions lo…hi-1 of all as a batch: with one array for the read and write
// sets (SameSets) if shared, else appended one by one (two arrays).
func batchOf(t *testing.T, all *Txns, lo, hi int, shared bool) *Txns {
	t.Helper()
	var batch Txns
	if !shared {
		for j := lo; j < hi; j++ {
			if err := batch.Append(all.ReadSet(j), all.WriteSet(j)); err != nil {
				t.Fatal(err)
			}
		}
		return &batch
	}
	start, sets := []int{0}, []uint32(nil)
	for j := lo; j < hi; j++ {
		sets = append(sets, all.ReadSet(j)...)
		start = append(start, len(sets))
	}
	txns, err := SameSets(start, sets)
	if err != nil {
		t.Fatal(err)
	}
	return txns
}

// TestAdmitDuplicatesAndGaps: a resent batch is ignored, a batch that skips the source's next
// number is refused, and so is a summary naming parameters outside its batch.
func TestAdmitDuplicatesAndGaps(t *testing.T) {
	txns := mustTxns(t, [2][]uint32{set(a), set(a)})
	b1, _ := NewBatch("s", 1, txns)
	b3, _ := NewBatch("s", 3, txns)
	var central Central
	if ok, err := central.Admit(b1); !ok || err != nil {
		t.Fatalf("first admission: %v, %v", ok, err)
	}
	if ok, err := central.Admit(b1); ok || err != nil {
		t.Errorf("resent batch: admitted %v, error %v; want ignored", ok, err)
	}
	if _, err := central.Admit(b3); err == nil || !strings.Contains(err.Error(), "before batch 2") {
		t.Errorf("batch 3 after 1: error %v, want a gap error", err)
	}
	bad, _ := NewBatch("t", 1, txns)
	bad.Summary = append(bad.Summary, ParamSummary{Param: 99, LastLocalWriter: 1})
	if _, err := central.Admit(bad); err == nil {
		t.Error("a summary of a parameter the batch never touches was admitted")
	}
	unordered, _ := NewBatch("u", 1, txns)
	unordered.Summary = append(unordered.Summary, unordered.Summary[0])
	if _, err := central.Admit(unordered); err == nil {
		t.Error("a summary out of order was admitted")
	}
	if got := central.Plan().Len(); got != 1 {
		t.Errorf("central plan has %d transactions, want 1", got)
	}
}

// TestTxnsRejectsUnsortedSets: access sets must be ascending and distinct (Locking's lock order
// and COP's membership tests rely on it).
func TestTxnsRejectsUnsortedSets(t *testing.T) {
	var txns Txns
	if err := txns.Append(set(2, 1), nil); err == nil {
		t.Error("an unsorted read set was accepted")
	}
	if err := txns.Append(nil, set(3, 3)); err == nil {
		t.Error("a write set with a duplicate was accepted")
	}
	if _, err := SameSets([]int{0, 2}, []uint32{5, 4}); err == nil {
		t.Error("SameSets accepted an unsorted set")
	}
	if _, err := SameSets([]int{0, 3}, []uint32{1, 2}); err == nil {
		t.Error("SameSets accepted offsets beyond the parameters")
	}
	planner := NewPlanner(0)
	planner.Add(set(1), set(1))
	if _, err := planner.Plan(mustTxns(t)); err == nil {
		t.Error("Plan accepted transactions other than those planned")
	}
}

// TestChunkFor: a plan that is one chain (every transaction reads its predecessor's write) offers
// two workers no parallelism at any chunk, so COP dispenses it in the largest chunk; 64
// independent transactions get the largest chunk that still keeps both workers busy (16, not
// 256); one worker keeps DefaultChunk.
func TestChunkFor(t *testing.T) {
	var independent, chain [][]uint32
	for x := range uint32(64) {
		independent, chain = append(independent, []uint32{x}), append(chain, []uint32{0, x + 1})
	}
	plan := func(sets [][]uint32) *Plan {
		offsets, features := []int{0}, []uint32{}
		for _, s := range sets {
			features = append(features, s...)
			offsets = append(offsets, len(features))
		}
		txns, err := SameSets(offsets, features)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanAll(txns)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ind, ch := plan(independent), plan(chain)
	if got := ind.Parallelism(2, 4); got != 2 {
		t.Errorf("independent: parallelism %v, want 2", got)
	}
	if got := ch.Parallelism(2, 4); got != 1 {
		t.Errorf("chain: parallelism %v, want 1", got)
	}
	for _, c := range []struct {
		plan    *Plan
		workers int
		want    int
	}{{ind, 2, 16}, {ch, 2, chunkCandidates[0]}, {ch, 1, DefaultChunk}} {
		if got := ChunkFor(c.plan, c.workers); got != c.want {
			t.Errorf("ChunkFor(%d workers) = %d, want %d", c.workers, got, c.want)
		}
	}
}
