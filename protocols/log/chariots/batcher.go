package chariots

import (
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Timer ids of the pipeline stages (each stage uses its own).
const (
	flushTimer protocol.TimerID = iota + 1
	retryTimer
	passTimer
	shipTimer
)

// Batcher buffers records per filter and flushes a buffer when it reaches the threshold or on
// the flush timer (spec 5.3, A7). It keeps no other state: a lost batch is recovered upstream.
type Batcher struct {
	env  protocol.Env
	cfg  Config
	self protocol.NodeID
	dc   int
	fmap *FilterMap
	bufs map[protocol.NodeID][]*Record
	n    uint64 // records taken
}

// Handled counts the records the batcher took.
func (b *Batcher) Handled() uint64 { return b.n }

func newBatcher(c Config, self protocol.NodeID, dc int, env protocol.Env) *Batcher {
	return &Batcher{env: env, cfg: c, self: self, dc: dc, fmap: initialFilterMap(c, dc), bufs: map[protocol.NodeID][]*Record{}}
}

// Start arms the flush timer.
func (b *Batcher) Start() { b.env.SetTimer(b.cfg.FlushUs, flushTimer) }

// HandleTimer flushes every non-empty buffer.
func (b *Batcher) HandleTimer(id protocol.TimerID) {
	if id != flushTimer {
		return
	}
	b.env.SetTimer(b.cfg.FlushUs, flushTimer)
	fs := make([]protocol.NodeID, 0, len(b.bufs))
	for f := range b.bufs {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i] < fs[j] })
	for _, f := range fs {
		b.flush(f)
	}
}

// HandleMessage takes a receiver's batch of other datacenters' records, or a filter's map
// (FilterMapSync: the batcher adopts the epochs it lacks, and answers with its map, which a
// starting filter waits for; Filter.unasked).
func (b *Batcher) HandleMessage(from protocol.NodeID, m protocol.Message) {
	if sync, ok := m.(*FilterMapSync); ok {
		fs := b.cfg.Layout.All(b.dc, flstore.Filter)
		if !containsNode(fs, from) {
			return
		}
		for _, u := range b.fmap.missing(sync.Hosts, fs) {
			b.fmap.apply(u)
		}
		b.env.Send(from, b.fmap.sync())
		return
	}
	batch, ok := m.(*RecordBatch)
	if !ok {
		return
	}
	for _, r := range batch.Records {
		if r != nil && r.TOId > 0 && r.Host != b.dc && r.Host >= 0 && r.Host < b.cfg.DCs && len(r.Deps) == b.cfg.DCs {
			b.add(r)
		}
	}
}

// HandleRequest takes a client's append, or a filter map update.
func (b *Batcher) HandleRequest(req protocol.Request) {
	switch op := req.Op.(type) {
	case *flstore.AppendOp:
		if op.Record == nil || (op.Record.WantDeps != nil && len(op.Record.WantDeps) != b.cfg.DCs) {
			b.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "chariots: malformed append"})
			return
		}
		r := op.Record.Clone()
		r.Host, r.TOId, r.LId, r.Deps, r.Client, r.CallSeq, r.Via, r.NoOp, r.Collected = b.dc, 0, 0, nil, req.Client, req.Seq, b.self, false, false
		b.add(r) // the owner maintainer answers once the record is persisted
	case *FilterMapUpdate:
		reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
		if within(op.Filters, b.cfg.Layout.All(b.dc, flstore.Filter)) {
			b.fmap.apply(op)
		} else {
			reply.Err = "chariots: not filters of this datacenter"
		}
		b.env.Reply(acknowledge(reply, req))
	default:
		b.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "chariots: a batcher takes appends"})
	}
}

func (b *Batcher) add(r *Record) {
	b.n++
	f := b.fmap.Champion(r)
	b.bufs[f] = append(b.bufs[f], r)
	if len(b.bufs[f]) >= b.cfg.BatchThreshold {
		b.flush(f)
	}
}

func (b *Batcher) flush(f protocol.NodeID) {
	if len(b.bufs[f]) == 0 {
		return
	}
	b.env.Send(f, &RecordBatch{Records: b.bufs[f]})
	delete(b.bufs, f)
}
