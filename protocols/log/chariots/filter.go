package chariots

import (
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Filter forwards each record it champions exactly once (spec 5.4): local records once per
// client append (by client and append number), other datacenters' records once and in TOId
// order per host (the next expected TOId of the host among those it champions, and the early
// arrivals pending). It numbers its batches to queues and resends each until acknowledged.
type Filter struct {
	env     protocol.Env
	cfg     Config
	self    protocol.NodeID
	dc      int
	fmap    *FilterMap
	next    []uint64                 // per host: the next TOId this filter champions and expects
	row     []uint64                 // per host: the TOIds logged, as the token's row last said
	pending []map[uint64]*Record     // per host: early arrivals
	lastSeq map[txn.ClientID]uint64  // per client: the highest append forwarded
	queues  []protocol.NodeID        // the queues batches go to, round robin
	rr      int                      // round-robin position
	inc     uint64                   // incarnation: the clock when it started
	seq     uint64                   // last batch number
	unacked map[uint64]*pendingBatch // batches awaiting a queue's acknowledgement
	rto     backoff                  // their resend timeout
	gen     uint64                   // the token generation of the last row taken
	// unasked are the batchers that have not answered the filter map this filter sent them at
	// start (resent every retry period until they do): a filter restarted empty has the
	// initial map, and if a split took records from it it would never see one it does not
	// champion, the only other way it learns the split (it would wait forever for the split
	// filter's records; seed 1312 of the 10,000-seed chariots swarm).
	unasked map[protocol.NodeID]bool
	// forwarded counts, per host, the other datacenters' records forwarded.
	forwarded []uint64
	n         uint64 // every record forwarded
}

// Handled counts the records the filter forwarded.
func (f *Filter) Handled() uint64 { return f.n }

// Forwarded returns how many of host h's records the filter forwarded.
func (f *Filter) Forwarded(h int) uint64 { return f.forwarded[h] }

type pendingBatch struct {
	to       protocol.NodeID
	batch    *RecordBatch
	sentAtUs int64
	resent   bool
}

func newFilter(c Config, self protocol.NodeID, dc int, env protocol.Env) *Filter {
	f := &Filter{env: env, cfg: c, self: self, dc: dc, fmap: initialFilterMap(c, dc), lastSeq: map[txn.ClientID]uint64{},
		queues: c.Layout.Active(dc, flstore.Queue), unacked: map[uint64]*pendingBatch{}}
	f.forwarded, f.row = make([]uint64, c.DCs), make([]uint64, c.DCs)
	for h := range c.DCs {
		f.next = append(f.next, f.fmap.nextChampioned(self, h, 1))
		f.pending = append(f.pending, map[uint64]*Record{})
	}
	return f
}

// Start takes the filter's incarnation, which numbers its batches apart from those of a filter
// that ran before it with the same id (and restarted empty), and arms the resend timer.
func (f *Filter) Start() {
	f.inc = uint64(max(f.env.NowUs(), 1))
	f.env.SetTimer(f.cfg.RetryUs, retryTimer)
	f.unasked = map[protocol.NodeID]bool{}
	for _, b := range f.cfg.Layout.All(f.dc, flstore.Batcher) {
		f.unasked[b] = true
	}
	f.askMaps()
}

// askMaps sends the filter map to the batchers that have not answered it yet; a batcher answers
// with its own map, from which the filter adopts the epochs it lacks.
func (f *Filter) askMaps() {
	if len(f.unasked) == 0 {
		return
	}
	sync := f.fmap.sync()
	for _, b := range f.cfg.Layout.All(f.dc, flstore.Batcher) {
		if f.unasked[b] {
			f.env.Send(b, sync)
		}
	}
}

// HandleTimer resends the batches no queue acknowledged within the resend period.
func (f *Filter) HandleTimer(id protocol.TimerID) {
	if id != retryTimer {
		return
	}
	f.env.SetTimer(f.cfg.RetryUs, retryTimer)
	seqs := make([]uint64, 0, len(f.unacked))
	for s := range f.unacked {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	now, timeout, resent := f.env.NowUs(), f.rto.timeoutUs(f.cfg.RetryUs), false
	for _, s := range seqs {
		if p := f.unacked[s]; now-p.sentAtUs >= timeout {
			p.sentAtUs, p.resent, resent = now, true, true
			f.env.Send(p.to, p.batch) // to the same queue: queues deduplicate per filter
		}
	}
	if resent {
		f.rto.resent()
	}
	f.askMaps()
}

// HandleMessage filters a batcher's batch, or takes a queue's acknowledgement.
func (f *Filter) HandleMessage(from protocol.NodeID, m protocol.Message) {
	switch m := m.(type) {
	case *BatchAck:
		if p := f.unacked[m.Seq]; p != nil && m.Inc == f.inc {
			f.rto.acked(f.env.NowUs()-p.sentAtUs, !p.resent)
			delete(f.unacked, m.Seq)
		}
	case *RowUpdate:
		if !containsNode(f.cfg.Layout.All(f.dc, flstore.Queue), from) || len(m.Row) != f.cfg.DCs {
			return
		}
		if m.Gen > f.gen {
			f.reset(m.Gen, m.Row)
		} else if m.Gen == f.gen {
			f.skipLogged(m.Row)
		}
	case *RecordBatch:
		var out []*Record
		foreign := false
		for _, r := range m.Records {
			if r != nil {
				out, foreign = f.filter(r, out, foreign)
			}
		}
		f.forward(out)
		if foreign && containsNode(f.cfg.Layout.All(f.dc, flstore.Batcher), from) {
			f.env.Send(from, f.fmap.sync())
		}
	case *FilterMapSync:
		if !containsNode(f.cfg.Layout.All(f.dc, flstore.Batcher), from) && !containsNode(f.cfg.Layout.All(f.dc, flstore.Filter), from) {
			return
		}
		delete(f.unasked, from)
		for _, u := range f.fmap.missing(m.Hosts, f.cfg.Layout.All(f.dc, flstore.Filter)) {
			f.applyUpdate(u)
		}
		if f.fmap.ahead(m.Hosts) {
			f.env.Send(from, f.fmap.sync())
		}
	}
}

// filter appends to out what r lets through; foreign becomes true if r is another
// datacenter's record this filter does not champion.
func (f *Filter) filter(r *Record, out []*Record, foreign bool) ([]*Record, bool) {
	if r.TOId == 0 { // local: once per client append
		if r.AppendSeq <= f.lastSeq[r.Client] && !f.cfg.FilterNoDedupe {
			return out, foreign
		}
		f.lastSeq[r.Client] = max(f.lastSeq[r.Client], r.AppendSeq)
		return append(out, r), foreign
	}
	h := r.Host
	if h < 0 || h >= f.cfg.DCs {
		return out, foreign
	}
	if f.fmap.Champion(r) != f.self {
		// Not ours: the batcher or this filter has an older map (FilterMapSync settles which);
		// the sender's resend reaches the champion.
		return out, true
	}
	if f.cfg.FilterNoDedupe {
		f.forwarded[h]++
		return append(out, r), foreign
	}
	if r.TOId < f.next[h] || f.pending[h][r.TOId] != nil {
		return out, foreign // a copy
	}
	f.pending[h][r.TOId] = r // early, or the next expected: drain forwards it and what follows
	return f.drain(h, out), foreign
}

// drain forwards host h's pending records from the next expected one on, while they follow.
func (f *Filter) drain(h int, out []*Record) []*Record {
	for p := f.pending[h][f.next[h]]; p != nil; p = f.pending[h][f.next[h]] {
		delete(f.pending[h], p.TOId)
		out = append(out, p)
		f.forwarded[h]++
		f.next[h] = f.fmap.nextChampioned(f.self, h, p.TOId+1)
	}
	return out
}

// skipLogged moves past what the datacenter has logged (row: the token's MaxTOId): a filter
// that became a host's champion under a boundary the log had already passed would otherwise
// wait forever for records no sender ships again.
func (f *Filter) skipLogged(row []uint64) {
	if len(row) != f.cfg.DCs || f.cfg.FilterNoDedupe {
		return
	}
	f.row = flstore.MaxVec(f.row, row)
	var out []*Record
	for h, logged := range row {
		if f.next[h] == flstore.None || logged < f.next[h] {
			continue
		}
		out = f.expectAfter(h, logged, out)
	}
	f.forward(out)
}

// reset takes a rebuilt token's row (generation gen): the log may have been truncated below
// what this filter forwarded, so it expects each host's records from the row on again (backwards
// too) and forgets which local appends it forwarded; the clients' retries and the senders'
// resends bring back what was truncated, and the queues drop what is logged.
func (f *Filter) reset(gen uint64, row []uint64) {
	f.gen, f.row = gen, append([]uint64(nil), row...)
	clear(f.lastSeq)
	var out []*Record
	for h, logged := range row {
		out = f.expectAfter(h, logged, out)
	}
	f.forward(out)
}

// expectAfter drops host h's pending records up to logged (the datacenter has them), expects h's
// next championed record after logged, and appends to out what is then ready in order.
func (f *Filter) expectAfter(h int, logged uint64, out []*Record) []*Record {
	for t := range f.pending[h] {
		if t <= logged {
			delete(f.pending[h], t)
		}
	}
	f.next[h] = f.fmap.nextChampioned(f.self, h, logged+1)
	return f.drain(h, out)
}

// forward sends rs to the next queue as one numbered batch, kept until acknowledged.
func (f *Filter) forward(rs []*Record) {
	if len(rs) == 0 {
		return
	}
	f.seq++
	f.n += uint64(len(rs))
	q := f.queues[f.rr%len(f.queues)]
	f.rr++
	b := &RecordBatch{Inc: f.inc, Seq: f.seq, Records: rs}
	f.unacked[f.seq] = &pendingBatch{to: q, batch: b, sentAtUs: f.env.NowUs()}
	f.env.Send(q, b)
}

// HandleRequest takes elasticity events: a filter map update or a new queue.
func (f *Filter) HandleRequest(req protocol.Request) {
	reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
	switch op := req.Op.(type) {
	case *FilterMapUpdate:
		if !within(op.Filters, f.cfg.Layout.All(f.dc, flstore.Filter)) {
			reply.Err = "chariots: not filters of this datacenter"
		} else {
			f.applyUpdate(op)
		}
	case *AddQueue:
		if !containsNode(f.cfg.Layout.All(f.dc, flstore.Queue), op.Node) {
			reply.Err = "chariots: not a queue of this datacenter"
		} else if !containsNode(f.queues, op.Node) {
			f.queues = append(f.queues, op.Node)
		}
	default:
		reply.Err = "chariots: a filter takes elasticity events only"
	}
	f.env.Reply(acknowledge(reply, req))
}

// applyUpdate extends the filter map with u, if new, and refiles the host's early arrivals
// under it.
func (f *Filter) applyUpdate(u *FilterMapUpdate) {
	if !f.fmap.apply(u) {
		return
	}
	h := u.Host
	// Past what it forwarded under the old map; a new champion starts at the epoch. An epoch
	// that starts at or below that (learnt late, FilterMapSync: this filter restarted) may give
	// it TOIds below it that it never forwarded: it starts again past what is logged, and the
	// queues drop what it forwards twice.
	start := f.next[h]
	if start == flstore.None || u.FromTOId <= start {
		start = max(u.FromTOId, f.row[h]+1)
	}
	f.next[h] = f.fmap.nextChampioned(f.self, h, start)
	var out []*Record
	ts := make([]uint64, 0, len(f.pending[h]))
	for t := range f.pending[h] {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	early := f.pending[h]
	f.pending[h] = map[uint64]*Record{}
	for _, t := range ts { // refile the early arrivals under the new map
		out, _ = f.filter(early[t], out, false)
	}
	f.forward(out)
}

func containsNode(ns []protocol.NodeID, n protocol.NodeID) bool {
	for _, x := range ns {
		if x == n {
			return true
		}
	}
	return false
}
