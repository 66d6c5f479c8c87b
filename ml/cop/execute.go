package cop

import "math"

// copRunner is planned execution (Alg. 13). Each parameter's metadata word holds the version
// (the id of the transaction that wrote the current value) in its high half and the number of
// transactions that have read that version in its low half, so that:
//
//   - ReadWait is one atomic load and a comparison of the high half with the planned version;
//     the read is counted by one atomic add once the transaction has read its values;
//   - a write waits until the whole word equals PWriter<<32 | PReaders (the version it must
//     overwrite, read by every planned reader), one load and one comparison with the plan's
//     packed annotation;
//   - the install stores the value, then the word id<<32: the new version and the counter's
//     reset (Alg. 13 line 13) in one atomic store.
//
// Per parameter, version v is read by exactly PReaders planned transactions and then
// overwritten by exactly one, whose PWriter is v (§5.3): the word cannot change between a
// writer's wait and its install, since every reader of v has been counted and no one else may
// write. The Go memory model orders the plain value accesses: a writer's value store precedes
// its atomic word store, which a reader's atomic load observes before it reads the value; a
// counted reader's value load precedes its atomic add, which the next writer's load observes
// before it overwrites the value.
//
// The installs follow all the transaction's waits (A1), the values before the versions. One
// refinement of Alg. 13 keeps every wait on an earlier-planned transaction (so §6.4.2's deadlock
// freedom and §5.4's in-order dispensing still hold): a transaction does not count its own read
// of a parameter it also writes, and its write waits for PReaders-1 readers instead. Planning
// gives such a read and write the same version (Alg. 12 changes no Planned_version_list entry
// between a transaction's reads and its writes), and the reader is the writer that waits on the
// count, so its read precedes the wait in its own program order. Counting it would cost an
// atomic read-modify-write, on x86 a full barrier that keeps the next read's cache miss from
// overlapping this one; for SGD, whose read and write sets are equal, no read is counted at
// all (docs/BENCHMARKS.md measures both).
//
// Plans whose write annotations are implied by their reads run on chainRunner instead.
type copRunner struct {
	slots
}

func (r *copRunner) txn(e *Engine, w *worker, id TxnID) {
	p, obs := e.plan, e.opts.Observer
	j := p.Index(id)
	rlo, rhi := p.txns.readStart[j], p.txns.readStart[j+1]
	wlo, whi := p.txns.writeStart[j], p.txns.writeStart[j+1]
	reads, versions := p.txns.reads[rlo:rhi], p.readVersion[rlo:rhi]
	writes, words := p.txns.writes[wlo:whi], p.writeWords[wlo:whi]
	mu, delta := w.mu[:len(reads)], w.delta[:len(writes)]
	for k, x := range reads { // kept tight so that the reads' cache misses overlap
		s := &r.slots[x]
		if TxnID(s.loadMeta()>>32) != versions[k] {
			readWait(s, versions[k])
		}
		mu[k] = math.Float64frombits(s.value)
	}
	same := sameSet(reads, writes) // then every read is of a parameter the transaction overwrites
	if obs != nil || !same {
		next := 0 // the first write not below the current read
		for k, x := range reads {
			if obs != nil {
				obs.Read(w.id, id, x, versions[k])
			}
			if !same && !advanceTo(writes, &next, x) { // not overwritten here: count the read
				r.slots[x].countRead()
			}
		}
	}
	e.comp.Compute(j, mu, delta)
	next := 0 // the first read not below the current write
	for k, x := range writes {
		want := words[k]
		if same || advanceTo(reads, &next, x) {
			want-- // this transaction's own read, not counted
		}
		if s := &r.slots[x]; s.loadMeta() != want {
			writeWait(s, want)
		}
	}
	installed := uint64(id) << 32
	next = 0
	for k, x := range writes {
		s := &r.slots[x]
		if obs != nil { // what the install finds: the word its wait saw, plus its own read
			prev, readers := unpackWrite(s.loadMeta())
			if same || advanceTo(reads, &next, x) {
				readers++
			}
			obs.Write(w.id, id, x, prev, readers)
		}
		s.value = math.Float64bits(delta[k])
		s.storeMeta(installed)
	}
}

// advanceTo moves *i past the elements of the ascending set below x and reports whether the set
// holds x: membership tests of ascending keys in one merge-like pass.
func advanceTo(set []uint32, i *int, x uint32) bool {
	for *i < len(set) && set[*i] < x {
		*i++
	}
	return *i < len(set) && set[*i] == x
}

// readWait is ReadWait's slow path: it waits until the version of s is v.
func readWait(s *slot, v TxnID) {
	for spins := 0; TxnID(s.loadMeta()>>32) != v; spins++ {
		backoff(spins)
	}
}

// writeWait is a write's slow path: it waits until the metadata word of s is want.
func writeWait(s *slot, want uint64) {
	for spins := 0; s.loadMeta() != want; spins++ {
		backoff(spins)
	}
}
