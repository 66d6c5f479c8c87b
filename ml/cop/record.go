package cop

import "sync/atomic"

// planRecording is planning during an epoch under Locking (spec §4.2, mode 4). A transaction
// calls step while it holds the locks of every parameter it accesses: it takes the next
// sequence number and runs the body of Alg. 12 with it on shared per-parameter state. A
// parameter's entry is touched only under its lock, and each transaction writes only its own
// annotations, so no further synchronization is needed. The sequence numbers order conflicting
// transactions as their locks did, so the recorded plan is the serial order the epoch followed.
//
// While it records, Locking installs a transaction's sequence number as the version of what it
// writes, so that the version a held lock's word shows is Alg. 12's latest planned writer
// (Planned_version_list[x]). When every transaction reads and writes one set, that is all the
// plan needs (its write annotations are implied, see Plan): step copies the versions from the
// lock words, with no per-parameter state of its own and no access to it, a cache miss per
// parameter saved. Observers are told plan ids, translated back through the order.
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
	r.order = make([]uint32, t.Len())
	r.readVersion = make([]TxnID, len(t.reads))
	r.params, r.writeWords = nil, nil
	if !t.shared() { // else the write annotations are implied and the lock words hold the rest
		r.params = make([]paramPlan, r.numParams)
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

// step plans transaction j as the next one and returns its sequence number, which its
// installs store as their version. The caller holds the locks of the union of j's sets, and
// held has the words it took them from, in ascending parameter order.
func (r *planRecording) step(j int, held []uint64) TxnID {
	seq := TxnID(r.seq.Add(1))
	t := r.txns
	rlo, rhi, wlo, whi := t.readStart[j], t.readStart[j+1], t.writeStart[j], t.writeStart[j+1]
	if r.writeWords == nil { // one set, the union: its versions are the latest planned writers
		versions := r.readVersion[rlo:rhi]
		for k := range versions {
			versions[k] = TxnID(held[k] >> 32)
		}
	} else {
		planStep(r.params, seq, t.reads[rlo:rhi], t.writes[wlo:whi], r.readVersion[rlo:rhi], r.writeWords[wlo:whi])
	}
	r.order[seq-1] = uint32(j)
	return seq
}

// planID returns the plan id of the version a lock word shows, for observers: without a
// recording (r nil) the version is one; while recording it is the sequence number of its
// writer (0 for the initial version). The engine's plan is in its own order (NewEngine checks),
// so the id is the writer's index plus one. The caller holds a lock that the writer released
// after its step, which orders the read of its order entry after the write.
func (r *planRecording) planID(seq TxnID) TxnID {
	if r == nil || seq == 0 {
		return seq
	}
	return TxnID(r.order[seq-1]) + 1
}

// plan hands the recorded plan over; the next epoch records into new arrays.
func (r *planRecording) plan() *Plan {
	p := &Plan{txns: r.txns, order: r.order, readVersion: r.readVersion, writeWords: r.writeWords}
	r.alloc()
	return p
}
