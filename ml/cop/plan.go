// Package cop implements Conflict Order Planning (spec cop.md; seed chapter 6): serializable
// parallel execution of machine-learning iterations whose read and write sets are known ahead,
// and the baselines it is measured against.
//
// Every iteration (one sample of SGD, say) is a transaction that reads some model parameters,
// computes, and writes some (the template of Alg. 10, here Computation). Planning (Alg. 12,
// Planner) fixes a serial order T1…Tn and annotates every read with the version it must observe
// and every write with the version it overwrites and how many transactions read that version
// first (Plan). Execution (Alg. 13, Engine with scheme COP) enforces the plan with version
// comparisons and one counter per parameter: no locks, no atomic sections, no aborts, and the
// final model is bit-identical to the serial run in plan order. Workers take transactions in
// plan order, which makes deadlock impossible (§5.4; the shared counter or a validated
// Schedule).
//
// Plans can be made in one pass over a dataset (Planner), fused with loading it (a Planner fed
// sample by sample), during a first epoch run under Locking (Options.RecordPlan), or per batch
// at collection sites and transposed at the central site (BatchPlan, Central). The baselines run
// the same template and the same computation: Locking (sorted per-parameter spinlocks), OCC
// (validation under write-set locks), Ideal (Hogwild!-style, not serializable) and Serial (the
// reference). An Observer sees every read and install, so that runs can be recorded as
// histories (Recorder) for the project's serializability checker.
package cop

import (
	"fmt"
	"slices"
)

// TxnID names a transaction by its position in the plan order, 1…n; 0 is the initial version
// of every parameter. It is 32 bits wide so that a parameter's version and its read counter
// share one 64-bit word (one load checks both, one store installs and resets them), which
// bounds a plan (or a stream of transposed batches) to 2^32-1 transactions.
type TxnID uint32

// PlannedRead is a read annotation (Def. 5): the transaction must read the value of Param that
// transaction Version wrote.
type PlannedRead struct {
	Param   uint32
	Version TxnID
}

// PlannedWrite is a write annotation (Def. 5): the write overwrites the version of Param that
// transaction PWriter wrote, which exactly PReaders planned transactions read first (the
// writer itself among them if it reads Param).
type PlannedWrite struct {
	Param    uint32
	PWriter  TxnID
	PReaders uint32
}

// PlannedTxn is one transaction of a plan with its annotations, in the form of spec §3.2.
type PlannedTxn struct {
	ID     TxnID
	Index  int // the transaction's index in the plan's Txns (its sample)
	Reads  []PlannedRead
	Writes []PlannedWrite
}

// Txns holds every transaction's read set and write set, each ascending and distinct, in flat
// arrays: transaction j reads reads[readStart[j]:readStart[j+1]]. The zero value is an empty
// list to Append to. For SGD on a sparse linear model both sets are the sample's features, and
// SameSets shares one array (a dataset's) for both without copying.
type Txns struct {
	readStart, writeStart []int
	reads, writes         []uint32
	numParams             int
}

// SameSets returns the transactions whose read set and write set are both
// params[start[j]:start[j+1]] (start has one entry more than there are transactions, the first
// 0). It keeps the slices, which must not change afterwards.
func SameSets(start []int, params []uint32) (*Txns, error) {
	t := &Txns{readStart: start, reads: params, writeStart: start, writes: params}
	n, err := checkSets(start, params)
	if err != nil {
		return nil, err
	}
	t.numParams = n
	return t, nil
}

// checkSets checks that start and params describe ascending, distinct sets and returns one more
// than the largest parameter.
func checkSets(start []int, params []uint32) (numParams int, err error) {
	if len(start) == 0 || start[0] != 0 || start[len(start)-1] != len(params) {
		return 0, fmt.Errorf("cop: set offsets must run from 0 to %d", len(params))
	}
	for j := 0; j+1 < len(start); j++ {
		lo, hi := start[j], start[j+1]
		if hi < lo {
			return 0, fmt.Errorf("cop: set offsets decrease at transaction %d", j)
		}
		for k := lo; k < hi; k++ {
			if k > lo && params[k] <= params[k-1] {
				return 0, fmt.Errorf("cop: the set of transaction %d is not ascending and distinct (%d after %d)", j, params[k], params[k-1])
			}
			numParams = max(numParams, int(params[k])+1)
		}
	}
	return numParams, nil
}

// Append adds a transaction reading readSet and writing writeSet (each ascending and distinct;
// the slices are copied).
func (t *Txns) Append(readSet, writeSet []uint32) error {
	for _, set := range [][]uint32{readSet, writeSet} {
		if _, err := checkSets([]int{0, len(set)}, set); err != nil {
			return err
		}
		if n := len(set); n > 0 {
			t.numParams = max(t.numParams, int(set[n-1])+1)
		}
	}
	if len(t.readStart) == 0 {
		t.readStart, t.writeStart = []int{0}, []int{0}
	}
	t.reads = append(t.reads, readSet...)
	t.writes = append(t.writes, writeSet...)
	t.readStart = append(t.readStart, len(t.reads))
	t.writeStart = append(t.writeStart, len(t.writes))
	return nil
}

// shared reports whether t keeps its read and write sets in one array, as SameSets makes it.
func (t *Txns) shared() bool {
	return len(t.readStart) > 0 && &t.readStart[0] == &t.writeStart[0] && len(t.reads) == len(t.writes) &&
		(len(t.reads) == 0 || &t.reads[0] == &t.writes[0])
}

// appendTxns appends every transaction of o (valid, as every Txns is) to t. While both keep
// their read and write sets in one array (SameSets, as SGD's do), so does the result, which
// lets execution treat every read as the read of a parameter the transaction overwrites.
func (t *Txns) appendTxns(o *Txns) {
	if o.Len() == 0 {
		return
	}
	keepShared := o.shared() && (t.Len() == 0 || t.shared())
	if len(t.readStart) == 0 {
		t.readStart = []int{0}
		t.writeStart = t.readStart
		t.writes = t.reads
	}
	if !keepShared && t.shared() { // the lists part ways from here on
		t.writes, t.writeStart = slices.Clone(t.writes), slices.Clone(t.writeStart)
	}
	t.reads, t.readStart = appendShifted(t.reads, t.readStart, o.reads, o.readStart)
	if keepShared {
		t.writes, t.writeStart = t.reads, t.readStart
	} else {
		t.writes, t.writeStart = appendShifted(t.writes, t.writeStart, o.writes, o.writeStart)
	}
	t.numParams = max(t.numParams, o.numParams)
}

// appendShifted appends the sets of (params, start) to those of (dst, dstStart).
func appendShifted(dst []uint32, dstStart []int, params []uint32, start []int) ([]uint32, []int) {
	base, n := len(dst), len(dstStart)
	dst = extend(dst, len(params))
	copy(dst[base:], params)
	dstStart = extend(dstStart, len(start)-1)
	for i, end := range start[1:] {
		dstStart[n+i] = base + end
	}
	return dst, dstStart
}

// sameSet reports whether a read set and a write set are one slice, as SameSets makes them.
func sameSet(reads, writes []uint32) bool {
	return len(reads) == len(writes) && (len(reads) == 0 || &reads[0] == &writes[0])
}

// Len returns the number of transactions.
func (t *Txns) Len() int { return max(len(t.readStart)-1, 0) }

// NumParams returns one more than the largest parameter any transaction accesses.
func (t *Txns) NumParams() int { return t.numParams }

// ReadSet returns transaction j's read set (not to be modified).
func (t *Txns) ReadSet(j int) []uint32 { return t.reads[t.readStart[j]:t.readStart[j+1]] }

// WriteSet returns transaction j's write set (not to be modified).
func (t *Txns) WriteSet(j int) []uint32 { return t.writes[t.writeStart[j]:t.writeStart[j+1]] }

// Plan is a planned partial order (Def. 4) with its annotations (Def. 5) over a list of
// transactions. The annotations are stored beside the access sets they annotate: the read at
// Txns' reads[k] must read version readVersion[k], and so on.
//
// When every transaction reads and writes one set (SameSets, as SGD's do), Alg. 12 makes every
// write annotation a function of the read beside it: the write overwrites the version the
// transaction read (planning changes nothing between a transaction's reads and its writes),
// and that version has exactly one planned reader, the writer itself (every reader of a
// parameter also writes it, so the next reader of a version is its next writer). Such a plan
// keeps no write annotations at all (writeWords nil: impliedWrites), which saves planning and
// execution 8 of the 12 bytes per access, and lets execution run on chainRunner: no write
// checks, and no per-parameter versions.
type Plan struct {
	txns        *Txns
	order       []uint32 // plan id-1 -> transaction index; nil: the identity
	readVersion []TxnID  // beside txns.reads
	writeWords  []uint64 // beside txns.writes: see packWrite; nil if implied by readVersion
}

// appendImpliedWrites appends to dst the write annotations that the read annotations
// readVersion imply when every transaction reads and writes one set: each write overwrites the
// version read beside it, whose one reader is the writer itself.
func appendImpliedWrites(dst []uint64, readVersion []TxnID) []uint64 {
	n := len(dst)
	dst = extend(dst, len(readVersion))
	for k, v := range readVersion {
		dst[n+k] = packWrite(v, 1)
	}
	return dst
}

// impliedWrites reports whether p is annotated and keeps no write annotations because they are
// implied by the reads (see Plan).
func (p *Plan) impliedWrites() bool {
	return p.writeWords == nil && p.txns.Len() > 0 && p.txns.shared() && len(p.readVersion) == len(p.txns.reads)
}

// writeWord returns the annotation of the write at position k of the concatenated write sets.
func (p *Plan) writeWord(k int) uint64 {
	if p.writeWords == nil {
		return packWrite(p.readVersion[k], 1)
	}
	return p.writeWords[k]
}

// explicitWrites returns the plan's write annotations, spelled out if they are implied (a new
// slice then).
func (p *Plan) explicitWrites() []uint64 {
	if p.writeWords != nil || !p.impliedWrites() {
		return p.writeWords
	}
	return appendImpliedWrites(nil, p.readVersion)
}

// dropImpliedWrites returns writeWords, or nil if txns read and write one set each and every
// write annotation is the one implied by the read beside it (see Plan).
func dropImpliedWrites(txns *Txns, readVersion []TxnID, writeWords []uint64) []uint64 {
	if txns.Len() == 0 || !txns.shared() || len(writeWords) != len(readVersion) {
		return writeWords
	}
	for k, w := range writeWords {
		if w != packWrite(readVersion[k], 1) {
			return writeWords
		}
	}
	return nil
}

// packWrite packs a write annotation as the metadata word its install waits for in COP's
// execution, PWriter<<32 | PReaders: one load and one comparison check both.
func packWrite(prev TxnID, readers uint32) uint64 { return uint64(prev)<<32 | uint64(readers) }

// unpackWrite is the inverse of packWrite.
func unpackWrite(w uint64) (prev TxnID, readers uint32) { return TxnID(w >> 32), uint32(w) }

// Unannotated returns txns in their own order without annotations: what the baselines run, and
// what planning during the first epoch starts from.
func Unannotated(txns *Txns) *Plan { return &Plan{txns: txns} }

// annotated reports whether p carries annotations (Unannotated's plans do not).
func (p *Plan) annotated() bool {
	return len(p.readVersion) == len(p.txns.reads) && (len(p.writeWords) == len(p.txns.writes) || p.impliedWrites())
}

// Len returns the number of planned transactions.
func (p *Plan) Len() int { return p.txns.Len() }

// Txns returns the transactions the plan annotates.
func (p *Plan) Txns() *Txns { return p.txns }

// Index returns the index in Txns of the transaction planned at position id (1…Len()).
func (p *Plan) Index(id TxnID) int {
	if p.order == nil {
		return int(id) - 1
	}
	return int(p.order[id-1])
}

// Txn returns the transaction planned at position id (1…Len()) with its annotations; p must be
// annotated (not Unannotated's).
func (p *Plan) Txn(id TxnID) PlannedTxn {
	j := p.Index(id)
	t := PlannedTxn{ID: id, Index: j}
	for k := p.txns.readStart[j]; k < p.txns.readStart[j+1]; k++ {
		t.Reads = append(t.Reads, PlannedRead{Param: p.txns.reads[k], Version: p.readVersion[k]})
	}
	for k := p.txns.writeStart[j]; k < p.txns.writeStart[j+1]; k++ {
		prev, readers := unpackWrite(p.writeWord(k))
		t.Writes = append(t.Writes, PlannedWrite{Param: p.txns.writes[k], PWriter: prev, PReaders: readers})
	}
	return t
}
