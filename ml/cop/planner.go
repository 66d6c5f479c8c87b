package cop

import (
	"fmt"
	"math"
)

// paramPlan is what Alg. 12 tracks for one parameter while planning.
type paramPlan struct {
	writer  TxnID  // Planned_version_list[x]: the latest planned writer
	readers uint32 // version_readers[x]: planned readers of that writer's version so far
}

// planStep is the body of Alg. 12 for transaction id: it annotates the reads (the current
// planned version of each parameter, counting the reader) and then the writes (the version
// overwritten and its readers; the transaction becomes the latest writer). Planning in one
// pass and planning during a first epoch under Locking share it.
func planStep(params []paramPlan, id TxnID, readSet, writeSet []uint32, readVersion []TxnID, writeWords []uint64) {
	if sameSet(readSet, writeSet) { // both steps at once: the write overwrites what was read
		for k, x := range readSet {
			s := &params[x]
			readVersion[k], writeWords[k] = s.writer, packWrite(s.writer, s.readers+1)
			s.writer, s.readers = id, 0
		}
		return
	}
	for k, x := range readSet {
		s := &params[x]
		readVersion[k] = s.writer
		s.readers++
	}
	for k, x := range writeSet {
		s := &params[x]
		writeWords[k] = packWrite(s.writer, s.readers)
		s.writer, s.readers = id, 0
	}
}

// Planner plans transactions one at a time in plan order (Alg. 12): a single pass, O(1) work
// per read and write, so that it can run while a dataset loads (spec §1.3 mode 3) or at a
// collection site as its batch fills (mode 1). Its per-parameter state grows with the largest
// parameter seen.
type Planner struct {
	// While every transaction added read and wrote one set (explicit false), no parameter has
	// had a reader that did not write it: Alg. 12's readers are all 0, the write annotations
	// are implied (see Plan), and the planner keeps only each parameter's latest writer, in
	// writers, half the bytes per parameter of params; the first other transaction moves them
	// to params and spells out writeWords.
	writers     []TxnID
	params      []paramPlan
	readVersion []TxnID
	writeWords  []uint64
	explicit    bool
	n           int
}

// NewPlanner returns a planner; numParams (0 if unknown) sizes its per-parameter state ahead.
func NewPlanner(numParams int) *Planner {
	return &Planner{writers: make([]TxnID, numParams)}
}

// plannerFor returns a planner with room for the annotations of txns.
func plannerFor(txns *Txns) *Planner {
	p := &Planner{readVersion: make([]TxnID, 0, len(txns.reads))}
	if txns.shared() {
		p.writers = make([]TxnID, txns.NumParams())
	} else {
		p.explicit, p.params, p.writeWords = true, make([]paramPlan, txns.NumParams()), make([]uint64, 0, len(txns.writes))
	}
	return p
}

// Add plans the next transaction, which reads readSet and writes writeSet (ascending and
// distinct, as its entry in the Txns given to Plan will be).
func (p *Planner) Add(readSet, writeSet []uint32) {
	p.n++
	id, r := TxnID(p.n), len(p.readVersion)
	p.readVersion = extend(p.readVersion, len(readSet))
	if !p.explicit && sameSet(readSet, writeSet) { // Alg. 12 with every reader count 0
		if n := len(readSet); n > 0 && int(readSet[n-1]) >= len(p.writers) {
			p.writers = append(p.writers, make([]TxnID, int(readSet[n-1])+1-len(p.writers))...)
		}
		// Local slices: through p the compiler reloads p.writers after every store and checks
		// both indices; this loop is most of fused planning's instructions (docs/BENCHMARKS.md).
		writers, versions := p.writers, p.readVersion[r:r+len(readSet)]
		for k, x := range readSet {
			versions[k], writers[x] = writers[x], id
		}
		return
	}
	if !p.explicit { // move to the full state, and spell out the implied annotations so far
		p.explicit, p.writeWords = true, appendImpliedWrites(nil, p.readVersion[:r])
		p.params = make([]paramPlan, len(p.writers))
		for x, v := range p.writers {
			p.params[x].writer = v
		}
		p.writers = nil
	}
	p.cover(readSet)
	p.cover(writeSet)
	w := len(p.writeWords)
	p.writeWords = extend(p.writeWords, len(writeSet))
	planStep(p.params, id, readSet, writeSet, p.readVersion[r:], p.writeWords[w:])
}

// extend lengthens s by n elements (zero, or as planStep leaves them), doubling its capacity
// when it must grow: append grows large slices by a quarter at a time, which would copy the
// annotations of a dataset loaded with fused planning (or the central site's admitted plan)
// four times over.
func extend[T any](s []T, n int) []T {
	if len(s)+n > cap(s) {
		grown := make([]T, len(s), max(2*cap(s), len(s)+n, 1024))
		copy(grown, s)
		s = grown
	}
	return s[:len(s)+n]
}

// cover grows the per-parameter state to cover every parameter of set (ascending: its last
// is its largest).
func (p *Planner) cover(set []uint32) {
	if n := len(set); n > 0 && int(set[n-1]) >= len(p.params) {
		p.params = append(p.params, make([]paramPlan, int(set[n-1])+1-len(p.params))...)
	}
}

// Len returns the number of transactions planned so far.
func (p *Planner) Len() int { return p.n }

// Summary returns, for every parameter the planned transactions touched, ascending, its latest
// planned writer and the number of planned readers of that writer's version: what a collection
// site ships with its batch so that the central site can transpose it (spec §4.3, A2).
func (p *Planner) Summary() []ParamSummary {
	var s []ParamSummary
	for x, v := range p.writers {
		if v != 0 {
			s = append(s, ParamSummary{Param: uint32(x), LastLocalWriter: v})
		}
	}
	for x, st := range p.params {
		if st.writer != 0 || st.readers != 0 {
			s = append(s, ParamSummary{Param: uint32(x), LastLocalWriter: st.writer, TailReaders: st.readers})
		}
	}
	return s
}

// Plan returns the plan of txns, which must be the transactions added, in order. The planner's
// per-parameter state is discarded (Alg. 12, line 15); it must not be used afterwards.
func (p *Planner) Plan(txns *Txns) (*Plan, error) {
	switch {
	case p.n > math.MaxUint32:
		return nil, fmt.Errorf("cop: %d transactions; a plan holds at most %d", p.n, uint32(math.MaxUint32))
	case txns.Len() != p.n || len(txns.reads) != len(p.readVersion) || len(txns.writes) != p.numWrites():
		return nil, fmt.Errorf("cop: the planner planned %d transactions (%d reads, %d writes) but %d were given (%d reads, %d writes)",
			p.n, len(p.readVersion), p.numWrites(), txns.Len(), len(txns.reads), len(txns.writes))
	}
	p.params, p.writers = nil, nil
	plan := &Plan{txns: txns, readVersion: p.readVersion, writeWords: p.writeWords}
	if !p.explicit && !txns.shared() { // the sets were given as one slice to Add, not to Txns
		plan.writeWords = appendImpliedWrites(nil, p.readVersion)
	}
	return plan, nil
}

// numWrites returns the number of writes planned so far.
func (p *Planner) numWrites() int {
	if p.explicit {
		return len(p.writeWords)
	}
	return len(p.readVersion)
}

// PlanAll plans txns in their own order in one pass (Alg. 12), as offline planning does.
func PlanAll(txns *Txns) (*Plan, error) {
	p := plannerFor(txns)
	for j := range txns.Len() {
		p.Add(txns.ReadSet(j), txns.WriteSet(j))
	}
	return p.Plan(txns)
}

// Prefetch starts bringing the planning state of set's parameters into the cache without
// waiting for it, for a loader that plans each sample one sample after parsing it: the state's
// cache misses then overlap the next sample's parsing instead of stalling the planning
// (docs/BENCHMARKS.md, issue 15). Only the state kept while every transaction reads and writes
// one set is prefetched (on amd64; elsewhere it does nothing); it changes no plan.
func (p *Planner) Prefetch(set []uint32) {
	if !p.explicit {
		prefetchWriters(p.writers, set)
	}
}
