package cop

import (
	"math"
	"sync/atomic"
)

// chainRunner is planned execution (Alg. 13) of a plan whose write annotations are implied by
// its reads (every transaction reads and writes one set, SGD's case; see Plan). Then every
// reader of a parameter also writes it, so each parameter's accesses form one chain in plan
// order: version v of x has one planned reader, its next writer T, which the plan annotates
// with Version v, and no one else may touch x between v's writer and T. T may therefore read
// and overwrite x as soon as T_v has installed all its writes, and knowing that T_v has
// finished is as good as seeing version v in x's metadata word: the parameters need no
// per-parameter versions or counters at all. Each transaction instead stamps its own entry of
// done with the epoch once it has installed, and a read waits until the entry of its planned
// version carries the current epoch (version 0, the epoch's initial value, is always there).
// Waits point only to earlier-planned transactions, as in copRunner, so in-order dispensing
// keeps it deadlock-free (§5.4).
//
// Against copRunner this halves the bytes per parameter (an 8-byte value, as Ideal's, instead
// of a 16-byte slot with the metadata word) and replaces an atomic store per write (on amd64 an
// XCHG, a full barrier) with one per transaction; docs/BENCHMARKS.md measures both.
//
// The Go memory model orders the plain value accesses: a writer's value stores precede its
// atomic store of done[id], which a reader of any of those versions observes (an atomic load)
// before it reads the values; and since that reader is the values' next writer, its own stores
// follow the observation too. Every access to a parameter is thus ordered after the previous
// writer's. A worker also remembers the prefix of the epoch's transactions it has seen done
// (doneUpTo, each entry observed with an atomic load, so the same order holds) and skips the
// check of any version in it: with one worker, and for the old versions of rarely written
// parameters, no read loads done at all.
type chainRunner struct {
	params   []float64
	done     []atomic.Uint32 // done[id] == epoch once T_id has installed its writes this epoch
	epoch    uint32          // the current epoch's stamp, from 1; written only at the barrier
	versions []atomic.Uint32 // nil unless observed: each parameter's version, for the observer
}

func newChainRunner(numParams, numTxns int, observed bool) *chainRunner {
	r := &chainRunner{params: make([]float64, numParams), done: make([]atomic.Uint32, numTxns+1)}
	if observed {
		r.versions = make([]atomic.Uint32, numParams)
	}
	return r
}

func (r *chainRunner) txn(e *Engine, w *worker, id TxnID) {
	p, obs := e.plan, e.opts.Observer
	j := p.Index(id)
	lo, hi := p.txns.readStart[j], p.txns.readStart[j+1]
	set, versions := p.txns.reads[lo:hi], p.readVersion[lo:hi]
	mu, delta := w.mu[:len(set)], w.delta[:len(set)]
	for k, x := range set {
		if v := versions[k]; v > w.doneUpTo {
			r.await(w, v)
		}
		mu[k] = r.params[x]
	}
	if obs != nil { // what each read found: the version installed last
		for _, x := range set {
			obs.Read(w.id, id, x, TxnID(r.versions[x].Load()))
		}
	}
	e.comp.Compute(j, mu, delta)
	for k, x := range set {
		if obs != nil { // what the install overwrites, and its one reader (this transaction)
			obs.Write(w.id, id, x, TxnID(r.versions[x].Swap(uint32(id))), 1)
		}
		r.params[x] = delta[k]
	}
	r.done[id].Store(r.epoch)
}

// await waits until transaction v has finished this epoch: it first extends the worker's
// prefix of finished transactions as far as it can, then, if v lies beyond it, waits for v
// itself.
func (r *chainRunner) await(w *worker, v TxnID) {
	for w.doneUpTo < v && r.done[w.doneUpTo+1].Load() == r.epoch {
		w.doneUpTo++
	}
	for spins := 0; w.doneUpTo < v && r.done[v].Load() != r.epoch; spins++ {
		backoff(spins)
	}
}

// reset is the epoch barrier: a new stamp makes every transaction unfinished again, and every
// version the epoch's initial one. After 2^32-1 epochs the stamps wrap, and the entries are
// cleared so that none carries the new stamp.
func (r *chainRunner) reset() {
	if r.epoch == math.MaxUint32 {
		for i := range r.done {
			r.done[i].Store(0)
		}
		r.epoch = 0
	}
	r.epoch++
	for i := range r.versions {
		r.versions[i].Store(0)
	}
}

func (r *chainRunner) values() []float64     { return append([]float64(nil), r.params...) }
func (r *chainRunner) setValues(v []float64) { copy(r.params, v) }
