package cop

import "sync/atomic"

// planRecording is planning during an epoch under Locking (spec §4.2, mode 4). A transaction
// calls step while it holds the locks of every parameter it accesses: it takes the next
// sequence number and runs the body of Alg. 12 with it on shared per-parameter state. A
// parameter's entry is touched only under its lock, and each transaction writes only its own
// annotations, so no further synchronization is needed. The sequence numbers order conflicting
// transactions as their locks did, so the recorded plan is the serial order the epoch followed.
type planRecording struct {
	txns        *Txns
	numParams   int
	params      []paramPlan
	seq         atomic.Uint64
	order       []uint32 // sequence number-1 -> transaction index
	readVersion []TxnID
	writeWords  []uint64
	fresh       bool // the arrays are new: params need no clearing
}

func newPlanRecording(txns *Txns, numParams int) *planRecording {
	r := &planRecording{txns: txns, numParams: numParams}
	r.alloc()
	return r
}

// alloc gives the recording new arrays: at the start, and when plan has handed the last ones
// over. Allocating here rather than at the epoch barrier keeps the allocation out of the epoch
// (as offline planning's is), though not the annotations' writes.
func (r *planRecording) alloc() {
	t := r.txns
	r.params = make([]paramPlan, r.numParams)
	r.order = make([]uint32, t.Len())
	r.readVersion = make([]TxnID, len(t.reads))
	r.writeWords = nil
	if !t.shared() { // else the write annotations are implied (see Plan)
		r.writeWords = make([]uint64, len(t.writes))
	}
	r.fresh = true
	r.seq.Store(0) // nothing recorded in these
}

// reset starts recording an epoch.
func (r *planRecording) reset() {
	if !r.fresh {
		clear(r.params)
	}
	r.fresh = false
	r.seq.Store(0)
}

// step plans transaction j as the next one; the caller holds its locks.
func (r *planRecording) step(j int) {
	seq := r.seq.Add(1)
	t := r.txns
	rlo, rhi, wlo, whi := t.readStart[j], t.readStart[j+1], t.writeStart[j], t.writeStart[j+1]
	var words []uint64
	if r.writeWords != nil {
		words = r.writeWords[wlo:whi]
	}
	planStep(r.params, TxnID(seq), t.reads[rlo:rhi], t.writes[wlo:whi], r.readVersion[rlo:rhi], words)
	r.order[seq-1] = uint32(j)
}

// plan hands the recorded plan over; the next epoch records into new arrays.
func (r *planRecording) plan() *Plan {
	p := &Plan{txns: r.txns, order: r.order, readVersion: r.readVersion, writeWords: r.writeWords}
	r.alloc()
	return p
}
