package cop

import (
	"fmt"
	"math"
)

// ParamSummary is a batch's planning state of one parameter at the end of the batch: its last
// writer in the batch (0 if the batch only read it) and the number of the batch's transactions
// that read that last version (spec §3.2, A2).
type ParamSummary struct {
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
	Summary  map[uint32]ParamSummary
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
	writeWords  []uint64
	lastWriter  []TxnID  // per parameter: the last admitted writer (global id)
	trail       []uint32 // per parameter: admitted transactions that read lastWriter's version
	lastSeq     map[string]uint64
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
	for x, s := range b.Summary {
		if int(x) >= b.Plan.txns.NumParams() || int(s.LastLocalWriter) > b.Plan.Len() {
			return false, fmt.Errorf("cop: batch %d of source %q: summary of parameter %d is out of range", b.BatchSeq, b.SourceID, x)
		}
	}
	if c.lastSeq == nil {
		c.lastSeq = make(map[string]uint64)
	}
	c.lastSeq[b.SourceID] = b.BatchSeq
	if n := max(b.Plan.txns.NumParams(), c.txns.NumParams()); n > len(c.lastWriter) {
		c.lastWriter = append(c.lastWriter, make([]TxnID, n-len(c.lastWriter))...)
		c.trail = append(c.trail, make([]uint32, n-len(c.trail))...)
	}
	base := TxnID(c.txns.Len())
	local := func(v TxnID) TxnID { return base + v }
	bt := b.Plan.txns
	for j := range bt.Len() {
		reads, writes := bt.ReadSet(j), bt.WriteSet(j)
		for k, x := range reads {
			v := b.Plan.readVersion[bt.readStart[j]+k]
			if v == 0 {
				v = c.lastWriter[x]
			} else {
				v = local(v)
			}
			c.readVersion = append(c.readVersion, v)
		}
		for k, x := range writes {
			prev, readers := unpackWrite(b.Plan.writeWords[bt.writeStart[j]+k])
			if prev == 0 { // the batch's first write of x: its readers of version 0 read lastWriter[x]
				prev, readers = c.lastWriter[x], readers+c.trail[x]
			} else {
				prev = local(prev)
			}
			c.writeWords = append(c.writeWords, packWrite(prev, readers))
		}
		if err := c.txns.Append(reads, writes); err != nil {
			return false, err
		}
	}
	for x, s := range b.Summary {
		if s.LastLocalWriter != 0 {
			c.lastWriter[x], c.trail[x] = local(s.LastLocalWriter), s.TailReaders
		} else {
			c.trail[x] += s.TailReaders
		}
	}
	return true, nil
}

// Plan returns the plan of every transaction admitted so far, in global-id order. Later
// admissions do not change it.
func (c *Central) Plan() *Plan {
	txns := c.txns
	return &Plan{txns: &txns, readVersion: c.readVersion, writeWords: c.writeWords}
}
