package cop

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Parameter names of the hand-made scenarios.
const (
	a uint32 = iota
	b
	c
	p = a
	q = b
)

// set is a literal access set.
func set(params ...uint32) []uint32 { return params }

// mustTxns builds transactions from (read set, write set) pairs.
func mustTxns(t testing.TB, sets ...[2][]uint32) *Txns {
	t.Helper()
	var txns Txns
	for _, s := range sets {
		if err := txns.Append(s[0], s[1]); err != nil {
			t.Fatal(err)
		}
	}
	return &txns
}

// randomTxns draws n transactions over params parameters: most read and write the same set
// (as SGD does), some read and write different sets, some only read and some only write.
func randomTxns(t testing.TB, rng *rand.Rand, n, params, maxSize int) *Txns {
	t.Helper()
	var txns Txns
	draw := func() []uint32 { return drawSet(rng, params, maxSize) }
	for range n {
		var r, w []uint32
		switch rng.IntN(10) {
		case 0:
			r = draw() // a pure reader (A12)
		case 1:
			w = draw() // a blind writer
		case 2, 3:
			r, w = draw(), draw()
		default:
			r = draw()
			w = r
		}
		if err := txns.Append(r, w); err != nil {
			t.Fatal(err)
		}
	}
	return &txns
}

// drawSet draws an ascending set of 1 to maxSize distinct parameters below params.
func drawSet(rng *rand.Rand, params, maxSize int) []uint32 {
	k := 1 + rng.IntN(min(maxSize, params))
	s := make([]uint32, 0, k)
	for len(s) < k {
		if x := uint32(rng.IntN(params)); !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	slices.Sort(s)
	return s
}

// sharedTxns draws n transactions over params parameters that each read and write one set, kept
// in one array (SameSets), as SGD's are.
func sharedTxns(t testing.TB, rng *rand.Rand, n, params, maxSize int) *Txns {
	t.Helper()
	start, all := []int{0}, []uint32(nil)
	for range n {
		all = append(all, drawSet(rng, params, maxSize)...)
		start = append(start, len(all))
	}
	txns, err := SameSets(start, all)
	if err != nil {
		t.Fatal(err)
	}
	return txns
}

// mix is a deterministic computation whose outputs depend on every input and on the
// transaction, so that any read of a wrong version changes the final model.
type mix struct{}

func (mix) Compute(j int, mu, delta []float64) {
	sum := float64(j%97) * 0.01
	for _, v := range mu {
		sum = sum*0.5 + v
	}
	for k := range delta {
		delta[k] = sum + float64(k+1)*0.125
	}
}

// recordingComp wraps a computation and keeps the values each transaction read.
type recordingComp struct {
	Computation
	mus [][]float64
}

func newRecordingComp(c Computation, n int) *recordingComp {
	return &recordingComp{Computation: c, mus: make([][]float64, n)}
}

func (r *recordingComp) Compute(j int, mu, delta []float64) {
	r.mus[j] = slices.Clone(mu)
	r.Computation.Compute(j, mu, delta)
}

// delays is an Observer that pauses a worker at random before every read is counted and every
// install, with a PCG stream per worker, and passes the events on (if next is not nil).
type delays struct {
	rngs []*rand.Rand
	next Observer
}

func newDelays(workers int, seed uint64, next Observer) *delays {
	d := &delays{next: next}
	for w := range workers {
		d.rngs = append(d.rngs, rand.New(rand.NewPCG(seed, uint64(w))))
	}
	return d
}

var spinSink atomic.Uint64

func (d *delays) pause(worker int) {
	switch r := d.rngs[worker].IntN(16); {
	case r < 3:
		runtime.Gosched()
	case r < 6:
		for i := range 50 * r {
			spinSink.Add(uint64(i))
		}
	case r == 6:
		time.Sleep(time.Microsecond)
	}
}

func (d *delays) Read(worker int, id TxnID, param uint32, version TxnID) {
	d.pause(worker)
	if d.next != nil {
		d.next.Read(worker, id, param, version)
	}
}

func (d *delays) Write(worker int, id TxnID, param uint32, prev TxnID, readers uint32) {
	d.pause(worker)
	if d.next != nil {
		d.next.Write(worker, id, param, prev, readers)
	}
}

func (d *delays) Restart(worker int, id TxnID) {
	if d.next != nil {
		d.next.Restart(worker, id)
	}
}

// watchdog bounds every epoch of the tests (C-I4): a deadlock fails the test instead of hanging.
const watchdog = 20 * time.Second

// runEpoch runs one epoch of e under the watchdog.
func runEpoch(t testing.TB, e *Engine, c Computation) EpochStats {
	t.Helper()
	done := make(chan EpochStats, 1)
	go func() { done <- e.RunEpoch(c) }()
	select {
	case s := <-done:
		return s
	case <-time.After(watchdog):
		t.Fatalf("%s with %d workers: the epoch did not finish within %v (deadlock)", e.Scheme(), len(e.workers), watchdog)
		return EpochStats{}
	}
}

// mustEngine builds an engine or fails the test.
func mustEngine(t testing.TB, s Scheme, plan *Plan, opts Options) *Engine {
	t.Helper()
	e, err := NewEngine(s, plan, plan.Txns().NumParams(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// serialRun runs epochs of plan serially and returns the final model and the values each
// transaction read in the last epoch.
func serialRun(t testing.TB, plan *Plan, epochs int) ([]float64, [][]float64) {
	t.Helper()
	e := mustEngine(t, Serial, plan, Options{Workers: 1})
	var rc *recordingComp
	for range epochs {
		rc = newRecordingComp(mix{}, plan.Len())
		runEpoch(t, e, rc)
	}
	return e.Values(), rc.mus
}

// sameBits reports whether two models are bitwise equal, or describes the first difference.
func sameBits(got, want []float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d parameters, want %d", len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			return fmt.Errorf("parameter %d is %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// plansEqual reports whether two plans order the same transactions and annotate them alike, or
// describes the first difference.
func plansEqual(got, want *Plan) error {
	if got.Len() != want.Len() {
		return fmt.Errorf("%d transactions, want %d", got.Len(), want.Len())
	}
	for id := TxnID(1); int(id) <= got.Len(); id++ {
		g, w := got.Txn(id), want.Txn(id)
		if g.Index != w.Index || !slices.Equal(g.Reads, w.Reads) || !slices.Equal(g.Writes, w.Writes) {
			return fmt.Errorf("T%d is %+v, want %+v", id, g, w)
		}
	}
	return nil
}

// contains reports whether the ascending set holds x.
func contains(s []uint32, x uint32) bool {
	_, found := slices.BinarySearch(s, x)
	return found
}

// fmtErr is fmt.Errorf, short for the checks above.
var fmtErr = fmt.Errorf
