package cop

import (
	"math"
	"sync/atomic"
)

// serialRunner is the serial reference (spec §6.4): one worker, plan order, plain memory.
type serialRunner struct {
	params []float64
}

func (r *serialRunner) txn(e *Engine, w *worker, id TxnID) {
	j, reads, writes := e.txnSets(id)
	mu, delta := w.mu[:len(reads)], w.delta[:len(writes)]
	for k, x := range reads {
		mu[k] = r.params[x]
	}
	e.comp.Compute(j, mu, delta)
	for k, x := range writes {
		r.params[x] = delta[k]
	}
}

func (r *serialRunner) reset()                {}
func (r *serialRunner) values() []float64     { return append([]float64(nil), r.params...) }
func (r *serialRunner) setValues(v []float64) { copy(r.params, v) }

// lockingRunner is Locking (spec §6.1): a spinlock (the low bit of the metadata word, taken by
// compare-and-swap) on every parameter of the read and write sets, taken in ascending order so
// that no deadlock can occur, held while the transaction reads, computes and writes. The word's
// high half keeps the version (the writer's id, or while recording a plan its sequence number),
// which only observers and plan recording use.
type lockingRunner struct {
	slots
}

func (r *lockingRunner) txn(e *Engine, w *worker, id TxnID) {
	obs := e.opts.Observer
	j, reads, writes := e.txnSets(id)
	w.keys = unionSorted(w.keys[:0], reads, writes)
	held := w.held[:len(w.keys)]
	for i, x := range w.keys {
		held[i] = r.slots[x].lock()
	}
	rec, version := e.recording, id // the installs store the id, or while recording the sequence number
	if rec != nil {
		version = rec.step(j, held)
	}
	mu, delta := w.mu[:len(reads)], w.delta[:len(writes)]
	for k, x := range reads {
		s := &r.slots[x]
		mu[k] = math.Float64frombits(s.value)
		if obs != nil {
			obs.Read(w.id, id, x, rec.planID(TxnID(s.loadMeta()>>32)))
		}
	}
	e.comp.Compute(j, mu, delta)
	k := 0
	for i, x := range w.keys {
		s := &r.slots[x]
		if k < len(writes) && writes[k] == x {
			if obs != nil {
				obs.Write(w.id, id, x, rec.planID(TxnID(held[i]>>32)), 0)
			}
			s.value = math.Float64bits(delta[k])
			s.storeMeta(uint64(version) << 32) // new version, unlocked
			k++
		} else {
			s.storeMeta(held[i]) // same version, unlocked
		}
	}
}

// unionSorted appends the union of the ascending sets a and b to dst, ascending.
func unionSorted(dst, a, b []uint32) []uint32 {
	if sameSet(a, b) { // one set for both (SGD)
		return append(dst, a...)
	}
	i, k := 0, 0
	for i < len(a) && k < len(b) {
		switch {
		case a[i] < b[k]:
			dst = append(dst, a[i])
			i++
		case b[k] < a[i]:
			dst = append(dst, b[k])
			k++
		default:
			dst = append(dst, a[i])
			i, k = i+1, k+1
		}
	}
	return append(append(dst, a[i:]...), b[k:]...)
}

// occRunner is OCC with write-set locking validation (spec §6.2): consistent reads of (value,
// version) without locks, the computation, then the write set's locks in ascending order; the
// transaction commits if every parameter it read still has the version it read and is not
// locked by another transaction, and restarts otherwise. Values are accessed atomically since
// readers read them while writers may hold the lock.
type occRunner struct {
	slots
}

func (r *occRunner) txn(e *Engine, w *worker, id TxnID) {
	obs := e.opts.Observer
	j, reads, writes := e.txnSets(id)
	mu, delta, versions, held := w.mu[:len(reads)], w.delta[:len(writes)], w.versions[:len(reads)], w.held[:len(writes)]
	for {
		for k, x := range reads {
			mu[k], versions[k] = r.consistentRead(&r.slots[x])
			if obs != nil {
				obs.Read(w.id, id, x, versions[k])
			}
		}
		e.comp.Compute(j, mu, delta)
		for k, x := range writes {
			held[k] = r.slots[x].lock()
		}
		if r.valid(reads, versions, writes) {
			for k, x := range writes {
				s := &r.slots[x]
				if obs != nil {
					obs.Write(w.id, id, x, TxnID(held[k]>>32), 0)
				}
				atomic.StoreUint64(&s.value, math.Float64bits(delta[k]))
				s.storeMeta(uint64(id) << 32) // new version, unlocked
			}
			return
		}
		for k, x := range writes {
			r.slots[x].storeMeta(held[k]) // same version, unlocked
		}
		w.restarts++
		if obs != nil {
			obs.Restart(w.id, id)
		}
	}
}

// consistentRead reads a parameter's value and version as of one moment: the version before
// and after the value must match and be unlocked.
func (r *occRunner) consistentRead(s *slot) (float64, TxnID) {
	for spins := 0; ; spins++ {
		if before := s.loadMeta(); before&locked == 0 {
			v := atomic.LoadUint64(&s.value)
			if s.loadMeta() == before {
				return math.Float64frombits(v), TxnID(before >> 32)
			}
		}
		backoff(spins)
	}
}

// valid is OCC's validation, with the write set locked: every parameter read still has the
// version read, and none is locked by another transaction.
func (r *occRunner) valid(reads []uint32, versions []TxnID, writes []uint32) bool {
	k := 0
	for i, x := range reads {
		word := r.slots[x].loadMeta()
		mine := advanceTo(writes, &k, x)
		if TxnID(word>>32) != versions[i] || (word&locked != 0 && !mine) {
			return false
		}
	}
	return true
}

// idealRunner is Ideal (spec §6.3, Hogwild!): dense parameters read and written with atomic
// loads and stores (so that the race detector stays quiet; no compare-and-swap, no versions).
// Only an observed run keeps versions, swapped in at every install so that the history shows
// which write each one overwrote.
type idealRunner struct {
	params   []uint64
	versions []atomic.Uint32 // nil unless observed
}

func (r *idealRunner) txn(e *Engine, w *worker, id TxnID) {
	obs := e.opts.Observer
	j, reads, writes := e.txnSets(id)
	mu, delta := w.mu[:len(reads)], w.delta[:len(writes)]
	for k, x := range reads {
		if obs != nil {
			obs.Read(w.id, id, x, TxnID(r.versions[x].Load()))
		}
		mu[k] = math.Float64frombits(atomic.LoadUint64(&r.params[x]))
	}
	e.comp.Compute(j, mu, delta)
	for k, x := range writes {
		atomic.StoreUint64(&r.params[x], math.Float64bits(delta[k]))
		if obs != nil {
			obs.Write(w.id, id, x, TxnID(r.versions[x].Swap(uint32(id))), 0)
		}
	}
}

func (r *idealRunner) reset() {
	for i := range r.versions {
		r.versions[i].Store(0)
	}
}

func (r *idealRunner) values() []float64 {
	v := make([]float64, len(r.params))
	for i, bits := range r.params {
		v[i] = math.Float64frombits(bits)
	}
	return v
}

func (r *idealRunner) setValues(v []float64) {
	for i := range r.params {
		r.params[i] = math.Float64bits(v[i])
	}
}
