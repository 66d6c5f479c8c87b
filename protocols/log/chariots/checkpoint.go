package chariots

import (
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Checkpoints (protocol.Checkpointer) of the pipeline stages; the maintainers' and indexers'
// are package flstore's. Maps go in key order; what the configuration fixes (the layout, the
// maintainers a sender fetches from, its receivers) is rebuilt by the factory and not written.

// writeFilterMap writes a filter map: the local filters, then its epochs per host.
func writeFilterMap(w *wire.Writer, fm *FilterMap) {
	flstore.WriteNodes(w, fm.Local)
	writeHostEpochs(w, fm.Hosts)
}

// writeHostEpochs writes a filter map's epochs per host.
func writeHostEpochs(w *wire.Writer, hosts [][]FilterEpoch) {
	w.Count("hosts", len(hosts), flstore.MaxDCs)
	for _, eps := range hosts {
		w.Count("filter epochs", len(eps), wire.MaxCheckpointCount)
		for _, e := range eps {
			w.Uvarint(e.FromTOId)
			flstore.WriteNodes(w, e.Filters)
		}
	}
}

// readHostEpochs reads what writeHostEpochs wrote.
func readHostEpochs(r *wire.Reader) [][]FilterEpoch {
	var hosts [][]FilterEpoch
	for range r.Count("hosts", flstore.MaxDCs, 1) {
		var eps []FilterEpoch
		for range r.Count("filter epochs", wire.MaxCheckpointCount, 2) {
			eps = append(eps, FilterEpoch{FromTOId: r.Uvarint("from toid"), Filters: flstore.ReadNodes(r)})
		}
		hosts = append(hosts, eps)
	}
	return hosts
}

// readFilterMap reads what writeFilterMap wrote, checking it has hosts datacenters, each with a
// first epoch, and names filters of filters only.
func readFilterMap(r *wire.Reader, hosts int, filters []protocol.NodeID) *FilterMap {
	fm := &FilterMap{Local: flstore.ReadNodes(r), Hosts: readHostEpochs(r)}
	for _, eps := range fm.Hosts {
		for _, e := range eps {
			if r.Err() == nil && (len(e.Filters) == 0 || !within(e.Filters, filters)) {
				r.Fail("filter epoch", "names no filter, or a node that is not a filter of the datacenter")
			}
		}
		if r.Err() == nil && len(eps) == 0 {
			r.Fail("filter epochs", "a host without an epoch")
		}
	}
	if r.Err() == nil && (len(fm.Hosts) != hosts || len(fm.Local) == 0 || !within(fm.Local, filters)) {
		r.Fail("filter map", "%d hosts (want %d), or local filters that are not the datacenter's", len(fm.Hosts), hosts)
	}
	return fm
}

// writeRecordList writes a list of records of any length (a checkpoint's).
func writeRecordList(w *wire.Writer, what string, rs []*Record) {
	w.Count(what, len(rs), wire.MaxCheckpointCount)
	for _, rec := range rs {
		flstore.WriteRecord(w, rec)
	}
}

// readRecordList reads what writeRecordList wrote; an empty list is nil.
func readRecordList(r *wire.Reader, what string) []*Record {
	var rs []*Record
	for range r.Count(what, wire.MaxCheckpointCount, 13) {
		rs = append(rs, flstore.ReadRecord(r))
	}
	return rs
}

// writeToken writes a token or its absence.
func writeToken(w *wire.Writer, tk *Token) {
	w.Bool(tk != nil)
	if tk != nil {
		write(w, tk)
	}
}

// readToken reads what writeToken wrote.
func readToken(r *wire.Reader) *Token {
	if !r.Bool("token present") {
		return nil
	}
	tk, ok := read(r).(*Token)
	if !ok && r.Err() == nil {
		r.Fail("token", "not a token")
	}
	return tk
}

// writeSeqSet writes a set of sequence numbers: its contiguous prefix, then the numbers above.
func writeSeqSet(w *wire.Writer, s *seqSet) {
	w.Uvarint(s.upTo)
	flstore.WriteVec(w, "numbers above", slices.Sorted(maps.Keys(s.above)), wire.MaxCheckpointCount)
}

// readSeqSet reads what writeSeqSet wrote.
func readSeqSet(r *wire.Reader) *seqSet {
	s := &seqSet{upTo: r.Uvarint("numbers up to")}
	for _, n := range flstore.ReadVec(r, "numbers above", wire.MaxCheckpointCount) {
		if s.above == nil {
			s.above = map[uint64]bool{}
		}
		s.above[n] = true
	}
	return s
}

// writeBackoff writes a resend timeout's estimator: smoothed delay, its deviation, doublings.
func writeBackoff(w *wire.Writer, b backoff) {
	w.Varint(b.srttUs)
	w.Varint(b.rttvarUs)
	w.Int("backoff doublings", int(b.shift), maxBackoffShift)
}

func readBackoff(r *wire.Reader) backoff {
	return backoff{srttUs: r.Varint("smoothed delay"), rttvarUs: r.Varint("delay deviation"), shift: uint(r.Int("backoff doublings", maxBackoffShift))}
}

// checkVec fails r unless v has n entries.
func checkVec(r *wire.Reader, what string, v []uint64, n int) {
	if r.Err() == nil && len(v) != n {
		r.Fail(what, "%d entries, want %d", len(v), n)
	}
}

// AppendCheckpoint implements protocol.Checkpointer: the filter map, the buffers (by filter)
// and the records taken.
func (b *Batcher) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	writeFilterMap(w, b.fmap)
	fs := slices.Sorted(maps.Keys(b.bufs))
	w.Count("buffers", len(fs), flstore.MaxNodes)
	for _, f := range fs {
		flstore.WriteNode(w, f)
		writeRecordList(w, "buffered records", b.bufs[f])
	}
	w.Uvarint(b.n)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (b *Batcher) RestoreCheckpoint(data []byte, _ protocol.Codec) error {
	r := wire.NewReader(data)
	b.fmap = readFilterMap(r, b.cfg.DCs, b.cfg.Layout.All(b.dc, flstore.Filter))
	b.bufs = map[protocol.NodeID][]*Record{}
	for range r.Count("buffers", flstore.MaxNodes, 2) {
		f := flstore.ReadNode(r)
		b.bufs[f] = readRecordList(r, "buffered records")
	}
	b.n = r.Uvarint("records taken")
	return r.Done()
}

// AppendCheckpoint implements protocol.Checkpointer: the filter map, per host the next TOId
// expected, the TOIds logged (the last row) and the early arrivals (by TOId), the highest append
// forwarded per client, the queues and the round-robin position, the incarnation, the last batch
// number and the unacknowledged batches (by
// number: queue, records, when sent, whether resent) with their resend timeout's estimator, and
// the counts forwarded, and the token generation of its row.
func (f *Filter) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	writeFilterMap(w, f.fmap)
	flstore.WriteVec(w, "next", f.next, flstore.MaxDCs)
	flstore.WriteVec(w, "row", f.row, flstore.MaxDCs)
	for _, p := range f.pending {
		for _, t := range wire.SortedKeys(w, "early records", p) {
			flstore.WriteRecord(w, p[t])
		}
	}
	for _, c := range wire.SortedKeys(w, "clients", f.lastSeq) {
		w.Uvarint(uint64(c))
		w.Uvarint(f.lastSeq[c])
	}
	flstore.WriteNodes(w, f.queues)
	w.Int("round robin", f.rr, int(^uint(0)>>1))
	w.Uvarint(f.inc)
	w.Uvarint(f.seq)
	for _, s := range wire.SortedKeys(w, "unacknowledged batches", f.unacked) {
		p := f.unacked[s]
		w.Uvarint(s)
		flstore.WriteNode(w, p.to)
		writeRecordList(w, "batch records", p.batch.Records)
		w.Varint(p.sentAtUs)
		w.Bool(p.resent)
	}
	writeBackoff(w, f.rto)
	flstore.WriteVec(w, "forwarded", f.forwarded, flstore.MaxDCs)
	w.Uvarint(f.n)
	w.Uvarint(f.gen)
	flstore.WriteNodes(w, slices.Sorted(maps.Keys(f.unasked)))
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (f *Filter) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	r := wire.NewReader(b)
	dcs := f.cfg.DCs
	f.fmap = readFilterMap(r, dcs, f.cfg.Layout.All(f.dc, flstore.Filter))
	f.next = flstore.ReadVec(r, "next", flstore.MaxDCs)
	checkVec(r, "next", f.next, dcs)
	f.row = flstore.ReadVec(r, "row", flstore.MaxDCs)
	checkVec(r, "row", f.row, dcs)
	f.pending = make([]map[uint64]*Record, dcs)
	for h := range dcs {
		f.pending[h] = map[uint64]*Record{}
		for range r.Count("early records", wire.MaxCheckpointCount, 13) {
			rec := flstore.ReadRecord(r)
			f.pending[h][rec.TOId] = rec
		}
	}
	f.lastSeq = map[txn.ClientID]uint64{}
	for range r.Count("clients", wire.MaxCheckpointCount, 2) {
		c := r.Uvarint("client")
		if c > uint64(^txn.ClientID(0)) {
			r.Fail("client", "client id %d out of range", c)
		}
		f.lastSeq[txn.ClientID(c)] = r.Uvarint("append seq")
	}
	f.queues = flstore.ReadNodes(r)
	if r.Err() == nil && (len(f.queues) == 0 || !within(f.queues, f.cfg.Layout.All(f.dc, flstore.Queue))) {
		r.Fail("queues", "none, or nodes that are not queues of the datacenter")
	}
	f.rr = r.Int("round robin", int(^uint(0)>>1))
	f.inc = r.Uvarint("incarnation")
	f.seq = r.Uvarint("batch number")
	f.unacked = map[uint64]*pendingBatch{}
	for range r.Count("unacknowledged batches", wire.MaxCheckpointCount, 4) {
		s := r.Uvarint("batch number")
		p := &pendingBatch{to: flstore.ReadNode(r)}
		p.batch = &RecordBatch{Inc: f.inc, Seq: s, Records: readRecordList(r, "batch records")}
		p.sentAtUs = r.Varint("sent at")
		p.resent = r.Bool("resent")
		f.unacked[s] = p
	}
	f.rto = readBackoff(r)
	f.forwarded = flstore.ReadVec(r, "forwarded", flstore.MaxDCs)
	checkVec(r, "forwarded", f.forwarded, dcs)
	f.n = r.Uvarint("records forwarded")
	f.gen = r.Uvarint("token generation")
	f.unasked = map[protocol.NodeID]bool{}
	for _, b := range flstore.ReadNodes(r) {
		f.unasked[b] = true
	}
	return r.Done()
}

// AppendCheckpoint implements protocol.Checkpointer: the records held, the batches taken per
// filter (by filter: the contiguous prefix and the numbers above it), the token held, the last
// hop taken, the token as last held, the token passed on and its successor, the unacknowledged
// assignments (by position: record, maintainer, when sent, whether resent) with their resend
// timeout's estimator, the elasticity events waiting, the records assigned, the token generation,
// the highest head of the log reported in it, the start time, when the token was last here and
// the rebuild under way (writeRebuild).
func (q *Queue) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	writeRecordList(w, "held records", q.held)
	fs := slices.Sorted(maps.Keys(q.seen))
	w.Count("filters seen", len(fs), flstore.MaxNodes)
	for _, f := range fs {
		flstore.WriteNode(w, f)
		for i, s := range q.seen[f].seen {
			w.Bool(s != nil)
			if s != nil {
				w.Uvarint(q.seen[f].inc[i])
				writeSeqSet(w, s)
			}
		}
	}
	writeToken(w, q.tok)
	w.Uvarint(q.lastHop)
	writeToken(w, q.lastTok)
	writeToken(w, q.outTok)
	flstore.WriteNode(w, q.outTo)
	for _, l := range wire.SortedKeys(w, "unacknowledged assignments", q.unacked) {
		p := q.unacked[l]
		flstore.WriteRecord(w, p.rec)
		flstore.WriteNode(w, p.to)
		w.Varint(p.sentAtUs)
		w.Bool(p.resent)
	}
	writeBackoff(w, q.rto)
	flstore.WriteNodes(w, q.addRing)
	flstore.WriteNodes(w, q.addMaint)
	w.Bool(q.added)
	w.Uvarint(q.n)
	w.Uvarint(q.gen)
	w.Uvarint(q.hlSeen)
	w.Uvarint(q.startUs)
	w.Uvarint(q.rebuilds)
	writeRebuild(w, q.rb)
	return w.Finish()
}

// writeRebuild writes a rebuild or its absence: its generation, the token copy, the maintainers'
// progress (by maintainer), the queues that answered, and from the truncation on the Truncate,
// the maintainers that answered it and their records.
func writeRebuild(w *wire.Writer, rb *rebuild) {
	w.Bool(rb != nil)
	if rb == nil {
		return
	}
	w.Uvarint(rb.gen)
	writeToken(w, rb.copy)
	for _, m := range wire.SortedKeys(w, "frozen maintainers", rb.frozen) {
		flstore.WriteNode(w, m)
		write(w, rb.frozen[m])
	}
	flstore.WriteNodes(w, slices.Sorted(maps.Keys(rb.copied)))
	flstore.WriteNodes(w, rb.added)
	w.Bool(rb.truncate != nil)
	if rb.truncate != nil {
		write(w, rb.truncate)
		flstore.WriteNodes(w, slices.Sorted(maps.Keys(rb.truncated)))
		writeRecordList(w, "truncation records", rb.records)
	}
}

// readRebuild reads what writeRebuild wrote.
func readRebuild(r *wire.Reader) *rebuild {
	if !r.Bool("rebuild present") {
		return nil
	}
	rb := &rebuild{gen: r.Uvarint("rebuild generation"), copy: readToken(r), frozen: map[protocol.NodeID]*flstore.FreezeAck{},
		copied: map[protocol.NodeID]bool{}, truncated: map[protocol.NodeID]bool{}}
	for range r.Count("frozen maintainers", flstore.MaxNodes, 3) {
		m := flstore.ReadNode(r)
		a, ok := read(r).(*flstore.FreezeAck)
		if !ok && r.Err() == nil {
			r.Fail("freeze answer", "not a FreezeAck")
		}
		rb.frozen[m] = a
	}
	for _, n := range flstore.ReadNodes(r) {
		rb.copied[n] = true
	}
	rb.added = flstore.ReadNodes(r)
	if r.Bool("truncation present") {
		t, ok := read(r).(*flstore.Truncate)
		if !ok && r.Err() == nil {
			r.Fail("truncation", "not a Truncate")
		}
		rb.truncate = t
		for _, n := range flstore.ReadNodes(r) {
			rb.truncated[n] = true
		}
		rb.records = readRecordList(r, "truncation records")
	}
	return rb
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (q *Queue) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	r := wire.NewReader(b)
	q.held = readRecordList(r, "held records")
	q.seen = map[protocol.NodeID]*filterSeen{}
	for range r.Count("filters seen", flstore.MaxNodes, 3) {
		f := flstore.ReadNode(r)
		fs := &filterSeen{}
		for i := range fs.seen {
			if r.Bool("incarnation present") {
				fs.inc[i], fs.seen[i] = r.Uvarint("filter incarnation"), readSeqSet(r)
			}
		}
		q.seen[f] = fs
	}
	q.tok = readToken(r)
	q.lastHop = r.Uvarint("last hop")
	q.lastTok = readToken(r)
	q.outTok = readToken(r)
	q.outTo = flstore.ReadNode(r)
	for _, tk := range []*Token{q.tok, q.lastTok, q.outTok} {
		if tk != nil && r.Err() == nil && !q.validToken(tk) {
			r.Fail("token", "not a token of this datacenter")
		}
	}
	q.unacked = map[uint64]*pendingAssign{}
	for range r.Count("unacknowledged assignments", wire.MaxCheckpointCount, 15) {
		p := &pendingAssign{rec: flstore.ReadRecord(r), to: flstore.ReadNode(r), sentAtUs: r.Varint("sent at"), resent: r.Bool("resent")}
		q.unacked[p.rec.LId] = p
	}
	q.rto = readBackoff(r)
	q.addRing = flstore.ReadNodes(r)
	q.addMaint = flstore.ReadNodes(r)
	q.added = r.Bool("added to the ring")
	q.n = r.Uvarint("records assigned")
	q.gen, q.hlSeen, q.startUs = r.Uvarint("token generation"), r.Uvarint("head of log seen"), r.Uvarint("start")
	q.rebuilds = r.Uvarint("token rebuilds")
	q.rb = readRebuild(r)
	if q.rb != nil && q.rb.copy != nil && r.Err() == nil && !q.validToken(q.rb.copy) {
		r.Fail("token copy", "not a token of this datacenter")
	}
	return r.Done()
}

// AppendCheckpoint implements protocol.Checkpointer: the highest TOId fetched per maintainer,
// the cached own records (by TOId), the ATable, per destination its shipped TOIds, known row
// entry and last move, and the records shipped.
func (s *Sender) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	ms := slices.Sorted(maps.Keys(s.fetched))
	w.Count("maintainers fetched", len(ms), flstore.MaxNodes)
	for _, m := range ms {
		flstore.WriteNode(w, m)
		w.Uvarint(s.fetched[m])
	}
	for _, t := range wire.SortedKeys(w, "cached records", s.cache) {
		flstore.WriteRecord(w, s.cache[t])
	}
	writeTable(w, s.table)
	for _, d := range s.dests {
		w.Bool(d != nil)
		if d != nil {
			flstore.WriteVec(w, "shipped", slices.Sorted(maps.Keys(d.shipped)), wire.MaxCheckpointCount)
			w.Uvarint(d.known)
			w.Varint(d.lastMoveUs)
		}
	}
	w.Uvarint(s.n)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (s *Sender) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	r := wire.NewReader(b)
	s.fetched = map[protocol.NodeID]uint64{}
	for range r.Count("maintainers fetched", flstore.MaxNodes, 2) {
		m := flstore.ReadNode(r)
		s.fetched[m] = r.Uvarint("fetched")
	}
	s.cache = map[uint64]*Record{}
	for range r.Count("cached records", wire.MaxCheckpointCount, 13) {
		rec := flstore.ReadRecord(r)
		s.cache[rec.TOId] = rec
	}
	s.table = readTable(r)
	if r.Err() == nil && len(s.table) != s.cfg.DCs {
		r.Fail("table", "%d rows, want %d", len(s.table), s.cfg.DCs)
	}
	for i := range s.table {
		checkVec(r, "table row", s.table[i], s.cfg.DCs)
	}
	for _, d := range s.dests { // the factory built the destinations the configuration fixes
		if present := r.Bool("destination"); r.Err() == nil && present != (d != nil) {
			r.Fail("destination", "present in the checkpoint and not in the configuration, or the reverse")
		}
		if d == nil || r.Err() != nil {
			continue
		}
		d.shipped = map[uint64]bool{}
		for _, t := range flstore.ReadVec(r, "shipped", wire.MaxCheckpointCount) {
			d.shipped[t] = true
		}
		d.known, d.lastMoveUs = r.Uvarint("known"), r.Varint("last move")
	}
	s.n = r.Uvarint("records shipped")
	return r.Done()
}

// AppendCheckpoint implements protocol.Checkpointer: the batchers, the round-robin position
// and the records received.
func (r *Receiver) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	flstore.WriteNodes(w, r.batchers)
	w.Int("round robin", r.rr, int(^uint(0)>>1))
	w.Uvarint(r.n)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Receiver) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	r.batchers = flstore.ReadNodes(rd)
	if rd.Err() == nil && (len(r.batchers) == 0 || !within(r.batchers, r.cfg.Layout.All(r.dc, flstore.Batcher))) {
		rd.Fail("batchers", "none, or nodes that are not batchers of the datacenter")
	}
	r.rr = rd.Int("round robin", int(^uint(0)>>1))
	r.n = rd.Uvarint("records received")
	return rd.Done()
}

var (
	_ protocol.Checkpointer = (*Batcher)(nil)
	_ protocol.Checkpointer = (*Filter)(nil)
	_ protocol.Checkpointer = (*Queue)(nil)
	_ protocol.Checkpointer = (*Sender)(nil)
	_ protocol.Checkpointer = (*Receiver)(nil)
)
