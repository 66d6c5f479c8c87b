package cop

import (
	"fmt"
	"math"
)

// ParamSummary is a batch's planning state of one parameter at the end of the batch: its last
// writer in the batch (0 if the batch only read it) and the number of the batch's transactions
// that read that last version (spec §3.2, A2).
type ParamSummary struct {
	Param           uint32
	LastLocalWriter TxnID
	TailReaders     uint32
}

// BatchPlan is what a collection site ships to the central site (spec §1.3 mode 1, §3.2): a
// batch of transactions planned locally (ids 1…n in the batch, version 0 meaning "whatever was
// current before the batch") and the summary the central site needs to transpose them.
type BatchPlan struct {
	SourceID string
	BatchSeq uint64 // 1, 2, … per source
	Plan     *Plan
	// Summary holds the state of every parameter the batch touches, ascending by parameter
	// (spec §3.2 has a map; a sorted list costs less to make, ship and apply).
	Summary []ParamSummary
}

// NewBatch plans txns in their order (Alg. 12) as batch seq of source.
func NewBatch(source string, seq uint64, txns *Txns) (*BatchPlan, error) {
	p := plannerFor(txns)
	for j := range txns.Len() {
		p.Add(txns.ReadSet(j), txns.WriteSet(j))
	}
	summary := p.Summary()
	plan, err := p.Plan(txns)
	if err != nil {
		return nil, err
	}
	return &BatchPlan{SourceID: source, BatchSeq: seq, Plan: plan, Summary: summary}, nil
}

// Central is the central site's admission of batch plans (spec §4.3): it admits batches one at a
// time, gives their transactions global ids after those already admitted, and transposes their
// dependencies on version 0 to the last versions of earlier batches, so that the result is the
// plan Alg. 12 makes in one pass over the concatenated batches. The zero value is ready to use.
type Central struct {
	txns        Txns
	readVersion []TxnID
	// writeWords stays nil while every batch admitted had its write annotations implied by
	// its reads (see Plan): then so has the concatenation, and the trails stay 0.
	writeWords []uint64
	explicit   bool // writeWords is kept
	// params holds, per parameter, the last admitted writer (global id; LastWriter[x] of §4.3)
	// and the admitted transactions that read its version (Trail[x]): Alg. 12's state over
	// every batch admitted so far, side by side so that one cache miss fetches both.
	params  []paramPlan
	lastSeq map[string]uint64
}

// Admit admits batch b and reports whether it was new: a batch a source sends again (its
// BatchSeq already admitted) is ignored, so that sources may resend until acknowledged. A gap in
// a source's sequence, or a batch whose plan is not in its own order, is an error.
func (c *Central) Admit(b *BatchPlan) (bool, error) {
	last := c.lastSeq[b.SourceID]
	switch {
	case b.BatchSeq <= last:
		return false, nil
	case b.BatchSeq != last+1:
		return false, fmt.Errorf("cop: batch %d of source %q arrived before batch %d", b.BatchSeq, b.SourceID, last+1)
	case b.Plan.order != nil:
		return false, fmt.Errorf("cop: batch %d of source %q is not planned in its own order", b.BatchSeq, b.SourceID)
	case c.txns.Len()+b.Plan.Len() > math.MaxUint32:
		return false, fmt.Errorf("cop: admitting batch %d of source %q would exceed %d transactions", b.BatchSeq, b.SourceID, uint32(math.MaxUint32))
	}
	for i, s := range b.Summary {
		if int(s.Param) >= b.Plan.txns.NumParams() || int(s.LastLocalWriter) > b.Plan.Len() || i > 0 && s.Param <= b.Summary[i-1].Param {
			return false, fmt.Errorf("cop: batch %d of source %q: summary of parameter %d is out of range or order", b.BatchSeq, b.SourceID, s.Param)
		}
	}
	if c.lastSeq == nil {
		c.lastSeq = make(map[string]uint64)
	}
	c.lastSeq[b.SourceID] = b.BatchSeq
	if n := max(b.Plan.txns.NumParams(), c.txns.NumParams()); n > len(c.params) {
		c.params = append(c.params, make([]paramPlan, n-len(c.params))...)
	}
	base := TxnID(c.txns.Len())
	local := func(v TxnID) TxnID { return base + v }
	bt := b.Plan.txns
	if !c.explicit && (!b.Plan.impliedWrites() || c.txns.Len() > 0 && !c.txns.shared()) {
		c.explicit, c.writeWords = true, appendImpliedWrites(nil, c.readVersion)
	}
	r0 := len(c.readVersion)
	c.readVersion = extend(c.readVersion, len(bt.reads))
	for k, x := range bt.reads {
		v := b.Plan.readVersion[k]
		if v == 0 {
			v = c.params[x].writer
		} else {
			v = local(v)
		}
		c.readVersion[r0+k] = v
	}
	if c.explicit {
		c.transposeWrites(b.Plan, base)
	}
	c.txns.appendTxns(bt)
	for _, s := range b.Summary {
		x := s.Param
		if s.LastLocalWriter != 0 {
			c.params[x] = paramPlan{writer: local(s.LastLocalWriter), readers: s.TailReaders}
		} else {
			c.params[x].readers += s.TailReaders
		}
	}
	return true, nil
}

// transposeWrites appends the write annotations of batch plan b, whose local ids start after
// base, transposed (spec §4.3): a batch's first write of a parameter overwrites its last admitted
// writer's version, which the batch's readers of version 0 and the trail read.
func (c *Central) transposeWrites(b *Plan, base TxnID) {
	w0 := len(c.writeWords)
	c.writeWords = extend(c.writeWords, len(b.txns.writes))
	words := b.explicitWrites()
	for k, x := range b.txns.writes {
		prev, readers := unpackWrite(words[k])
		if prev == 0 { // the batch's first write of x: its readers of version 0 read lastWriter[x]
			p := c.params[x]
			prev, readers = p.writer, readers+p.readers
		} else {
			prev += base
		}
		c.writeWords[w0+k] = packWrite(prev, readers)
	}
}

// Plan returns the plan of every transaction admitted so far, in global-id order. Later
// admissions do not change it.
func (c *Central) Plan() *Plan {
	txns := c.txns
	return &Plan{txns: &txns, readVersion: c.readVersion, writeWords: c.writeWords}
}

// Annotations returns the plan's annotations beside its transactions' access sets: the read at
// position k of the concatenated read sets must read version readVersion[k], and the write at
// position k of the concatenated write sets waits for writeWords[k], PWriter<<32 | PReaders.
// With Annotate they let a collection site ship a batch plan and the central site rebuild it.
// The slices are the plan's own (writeWords is new if the plan keeps its write annotations
// implied) and must not be modified.
func (p *Plan) Annotations() (readVersion []TxnID, writeWords []uint64) {
	return p.readVersion, p.explicitWrites()
}

// Annotate returns the plan of txns, in their own order, with the given annotations (as
// Annotations returns them; the slices are kept, except write annotations implied by the reads,
// which are dropped: see Plan). It checks what a plan received from elsewhere
// must satisfy to be run without an index out of range or a wait on a later transaction: one
// annotation per access, every version and overwritten writer planned before the transaction
// itself, and no more readers than transactions up to it.
func Annotate(txns *Txns, readVersion []TxnID, writeWords []uint64) (*Plan, error) {
	if len(readVersion) != len(txns.reads) || len(writeWords) != len(txns.writes) {
		return nil, fmt.Errorf("cop: %d read and %d write annotations for %d reads and %d writes",
			len(readVersion), len(writeWords), len(txns.reads), len(txns.writes))
	}
	for j := range txns.Len() {
		id := TxnID(j + 1)
		for _, v := range readVersion[txns.readStart[j]:txns.readStart[j+1]] {
			if v >= id {
				return nil, fmt.Errorf("cop: T%d reads version %d, not planned before it", id, v)
			}
		}
		for _, w := range writeWords[txns.writeStart[j]:txns.writeStart[j+1]] {
			if prev, readers := unpackWrite(w); prev >= id || readers > uint32(id) {
				return nil, fmt.Errorf("cop: T%d overwrites version %d read by %d transactions", id, prev, readers)
			}
		}
	}
	return &Plan{txns: txns, readVersion: readVersion, writeWords: dropImpliedWrites(txns, readVersion, writeWords)}, nil
}
