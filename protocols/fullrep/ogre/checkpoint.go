package ogre

import (
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the current storage (versions, readers,
// pending transactions and their key counts), the RoT-Storage (rot.appendCheckpoint), the
// ingestion stream to the RoT units and their acknowledgements, the decided and forgotten
// transactions, and the coordinated ones, every map in key order. Decisions go through the
// codec. The inbox is empty between inputs.
func (r *Replica) AppendCheckpoint(dst []byte, codec protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	if len(r.inbox) > 0 {
		w.Fail("ogre inbox", "%d messages to itself are still undelivered", len(r.inbox))
	}
	for _, k := range wire.SortedKeys(w, "ogre current", r.cur) {
		c := r.cur[k]
		w.String("ogre key", k, wire.MaxKeyLen)
		w.Bytes("ogre value", c.value, wire.MaxValueLen)
		w.Uvarint(c.ver)
		w.ID(c.writer)
	}
	idSets(w, r.readers)
	w.TxnsByID(r.pending)
	counts(w, r.pendingW)
	counts(w, r.pendingR)
	r.rot.appendCheckpoint(w, codec)
	w.Count("ogre stream", len(r.stream), wire.MaxCheckpointCount)
	for _, d := range r.stream {
		w.Message(codec, d)
	}
	w.Uvarint(r.streamBase)
	w.Uvarints(r.unitAcked)
	w.Varints(r.unitResendUs)
	for _, id := range wire.SortedKeys(w, "ogre decided", r.decided) {
		w.ID(id)
		w.Bool(r.decided[id])
	}
	w.Count("ogre records", len(r.done), wire.MaxCheckpointCount)
	for _, rec := range r.done {
		w.ID(rec.id)
		w.Varint(rec.atUs)
	}
	w.ClientSeqs("ogre forgot", r.forgot)
	for _, id := range wire.SortedKeys(w, "ogre coordinated", r.coords) {
		c := r.coords[id]
		w.Txn(c.t)
		w.Uvarint(uint64(c.client))
		w.Uvarint(c.seq)
		w.Varint(c.deadlineUs)
		w.Varint(c.resendUs)
		w.Bools(c.voted)
		w.Int("ogre yes", c.yes, wire.MaxCheckpointCount)
		w.Int("ogre no", c.no, wire.MaxCheckpointCount)
		w.Int("ogre stale", c.stale, wire.MaxCheckpointCount)
		w.Varints(c.pred)
		idLists(w, c.rbdeps)
		w.Bool(c.decision != nil)
		if c.decision != nil {
			w.Message(codec, c.decision)
		}
		w.Bools(c.acked)
		w.Int("ogre unacked", c.unacked, wire.MaxCheckpointCount)
	}
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, codec protocol.Codec) error {
	rd := wire.NewReader(b)
	for range rd.Count("ogre current", wire.MaxCheckpointCount, 4) {
		k := rd.String("ogre key", wire.MaxKeyLen)
		r.cur[k] = &current{value: rd.Bytes("ogre value", wire.MaxValueLen), ver: rd.Uvarint("ogre version"), writer: rd.ID("ogre writer")}
	}
	r.readers = readIDSets(rd)
	r.pending = rd.TxnsByID()
	r.pendingW, r.pendingR = readCounts(rd), readCounts(rd)
	r.rot.restoreCheckpoint(rd, codec)
	r.stream = make([]*Decision, rd.Count("ogre stream", wire.MaxCheckpointCount, 1))
	for i := range r.stream {
		r.stream[i] = storedDecision(rd, codec)
		if rd.Err() == nil && !r.stream[i].Commit {
			rd.Fail("ogre stream", "an aborted transaction")
		}
	}
	r.streamBase = rd.Uvarint("ogre stream base")
	r.unitAcked, r.unitResendUs = rd.Uvarints(), rd.Varints()
	if rd.Err() == nil && (len(r.unitAcked) != len(r.units) || len(r.unitResendUs) != len(r.units)) {
		rd.Fail("ogre units", "%d acknowledgements and %d resend times for %d units", len(r.unitAcked), len(r.unitResendUs), len(r.units))
	}
	for _, a := range r.unitAcked {
		if a < r.streamBase || a > r.streamBase+uint64(len(r.stream)) {
			rd.Fail("ogre units", "acknowledgement %d outside the stream (%d, %d]", a, r.streamBase, r.streamBase+uint64(len(r.stream)))
		}
	}
	for range rd.Count("ogre decided", wire.MaxCheckpointCount, 2) {
		id := rd.ID("ogre decided")
		r.decided[id] = rd.Bool("ogre decided outcome")
	}
	r.done = make([]record, rd.Count("ogre records", wire.MaxCheckpointCount, 2))
	for i := range r.done {
		r.done[i] = record{id: rd.ID("ogre record"), atUs: rd.Varint("ogre record time")}
	}
	rd.ClientSeqs("ogre forgot", r.forgot)
	for range rd.Count("ogre coordinated", wire.MaxCheckpointCount, 14) {
		c := &coordinated{t: rd.Txn(), client: txn.ClientID(rd.Uvarint("ogre client")), seq: rd.Uvarint("ogre seq"),
			deadlineUs: rd.Varint("ogre deadline"), resendUs: rd.Varint("ogre resend"), voted: rd.Bools(),
			yes: rd.Int("ogre yes", wire.MaxCheckpointCount), no: rd.Int("ogre no", wire.MaxCheckpointCount),
			stale: rd.Int("ogre stale", wire.MaxCheckpointCount), pred: rd.Varints(), rbdeps: readIDLists(rd)}
		if rd.Bool("ogre decision") {
			c.decision = storedDecision(rd, codec)
		}
		c.acked, c.unacked = rd.Bools(), rd.Int("ogre unacked", wire.MaxCheckpointCount)
		if rd.Err() != nil {
			break
		}
		if c.t == nil || len(c.voted) != r.n || (c.decision != nil) != (len(c.acked) == r.n) || len(c.pred) != len(c.t.Writes) || len(c.rbdeps) != len(c.t.Writes) {
			rd.Fail("ogre coordinated", "a transaction whose votes, acknowledgements or versions do not match %d datacenters and its writes", r.n)
			break
		}
		r.coords[c.t.ID] = c
	}
	return rd.Done()
}

// appendCheckpoint writes the RoT-Storage: the applied versions and readers, the buffered
// transactions (with, per key, which of its indexed waiters are still buffered: a waiter applied
// since it was indexed stays in the index until the key is next touched), the retained version
// chains and the read-only transactions in flight, and the buffer statistics.
func (r *rot) appendCheckpoint(w *wire.Writer, codec protocol.Codec) {
	for _, k := range wire.SortedKeys(w, "rot versions", r.ver) {
		w.String("rot key", k, wire.MaxKeyLen)
		w.Uvarint(r.ver[k])
	}
	for _, k := range wire.SortedKeys(w, "rot writers", r.writer) {
		w.String("rot key", k, wire.MaxKeyLen)
		w.ID(r.writer[k])
	}
	idSets(w, r.histReaders)
	for _, id := range wire.SortedKeys(w, "rot buffered", r.buffered) {
		b := r.buffered[id]
		w.Message(codec, b.d)
		w.Varint(b.sinceUs)
	}
	for _, k := range wire.SortedKeys(w, "rot waiters", r.waiters) {
		w.String("rot key", k, wire.MaxKeyLen)
		ws := r.waiters[k]
		w.Count("rot key waiters", len(ws), wire.MaxCheckpointCount)
		for _, wt := range ws {
			w.ID(wt.d.Txn.ID)
			w.Bool(r.buffered[wt.d.Txn.ID] == wt)
		}
	}
	w.Bool(r.chains != nil)
	if r.chains != nil {
		for _, k := range wire.SortedKeys(w, "rot chains", r.chains) {
			w.String("rot key", k, wire.MaxKeyLen)
			var chain []*vnode
			for v := r.chains[k]; v != nil; v = v.prev {
				chain = append(chain, v)
			}
			w.Count("rot chain", len(chain), wire.MaxCheckpointCount)
			for _, v := range chain {
				w.Bytes("rot value", v.value, wire.MaxValueLen)
				w.ID(v.writer)
				w.Uvarint(v.ts)
			}
		}
		w.Strings(slices.Sorted(maps.Keys(r.multi)))
	}
	w.Uvarint(r.stableTS)
	w.Int("rot retained", r.retained, wire.MaxCheckpointCount)
	w.Count("rot reads", len(r.reads), wire.MaxCheckpointCount)
	for _, ro := range r.reads {
		w.Request(ro.req, codec)
		w.Uvarint(ro.readTS)
		w.Count("rot read results", len(ro.out), wire.MaxSnapshotKeys)
		for _, s := range ro.out {
			w.String("rot read key", s.Key, wire.MaxKeyLen)
			w.Bytes("rot read value", s.Value, wire.MaxValueLen)
			w.ID(s.Version)
		}
	}
	w.Bool(r.armed)
	w.Int("rot ingested", r.stats.ingested, wire.MaxCheckpointCount)
	w.Int("rot ever buffered", r.stats.everBuffered, wire.MaxCheckpointCount)
	w.Varint(r.stats.bufferedUs)
}

// restoreCheckpoint reads what appendCheckpoint wrote into a fresh RoT-Storage.
func (r *rot) restoreCheckpoint(rd *wire.Reader, codec protocol.Codec) {
	for range rd.Count("rot versions", wire.MaxCheckpointCount, 2) {
		k := rd.String("rot key", wire.MaxKeyLen)
		r.ver[k] = rd.Uvarint("rot version")
	}
	for range rd.Count("rot writers", wire.MaxCheckpointCount, 2) {
		k := rd.String("rot key", wire.MaxKeyLen)
		r.writer[k] = rd.ID("rot writer")
	}
	r.histReaders = readIDSets(rd)
	for range rd.Count("rot buffered", wire.MaxCheckpointCount, 2) {
		d := storedDecision(rd, codec)
		since := rd.Varint("rot buffered since")
		if rd.Err() != nil {
			return
		}
		if !d.Commit || r.buffered[d.Txn.ID] != nil {
			rd.Fail("rot buffered", "an aborted or repeated transaction %v", d.Txn.ID)
			return
		}
		r.buffered[d.Txn.ID] = &waiter{d: d, sinceUs: since}
	}
	for range rd.Count("rot waiters", wire.MaxCheckpointCount, 2) {
		k := rd.String("rot key", wire.MaxKeyLen)
		ws := make([]*waiter, rd.Count("rot key waiters", wire.MaxCheckpointCount, 2))
		for i := range ws {
			id, live := rd.ID("rot waiter"), rd.Bool("rot waiter buffered")
			switch {
			case !live:
				ws[i] = &waiter{d: &Decision{Txn: &txn.Txn{ID: id}}} // applied since: never the buffered one
			case r.buffered[id] != nil:
				ws[i] = r.buffered[id]
			default:
				rd.Fail("rot waiter", "transaction %v is not buffered", id)
				return
			}
		}
		r.waiters[k] = ws
	}
	if rd.Bool("rot serves") != (r.chains != nil) {
		rd.Fail("rot serves", "the checkpoint's RoT-Storage serves reads where this one does not, or the reverse")
		return
	}
	if r.chains != nil {
		for range rd.Count("rot chains", wire.MaxCheckpointCount, 2) {
			k := rd.String("rot key", wire.MaxKeyLen)
			n := rd.Count("rot chain", wire.MaxCheckpointCount, 3)
			if n == 0 {
				rd.Fail("rot chain", "key %q has an empty chain", k)
				return
			}
			var tail *vnode
			for range n {
				v := &vnode{value: rd.Bytes("rot value", wire.MaxValueLen), writer: rd.ID("rot writer"), ts: rd.Uvarint("rot timestamp")}
				if tail == nil {
					r.chains[k] = v
				} else {
					tail.prev = v
				}
				tail = v
			}
		}
		for _, k := range rd.Strings() {
			if v := r.chains[k]; v == nil || v.prev == nil {
				rd.Fail("rot multi", "key %q does not hold several versions", k)
				return
			}
			r.multi[k] = struct{}{}
		}
	}
	r.stableTS = rd.Uvarint("rot stable timestamp")
	r.retained = rd.Int("rot retained", wire.MaxCheckpointCount)
	n := rd.Count("rot reads", wire.MaxCheckpointCount, 3)
	if n > 0 && r.chains == nil {
		rd.Fail("rot reads", "read-only transactions in flight on a RoT-Storage that serves none")
		return
	}
	r.reads = make([]*roRead, n)
	for i := range r.reads {
		ro := &roRead{req: rd.Request(codec), readTS: rd.Uvarint("rot read timestamp")}
		ro.out = make([]protocol.SnapshotRead, rd.Count("rot read results", wire.MaxSnapshotKeys, 3))
		for j := range ro.out {
			ro.out[j] = protocol.SnapshotRead{Key: rd.String("rot read key", wire.MaxKeyLen), Value: rd.Bytes("rot read value", wire.MaxValueLen),
				Version: rd.ID("rot read version")}
		}
		if rd.Err() == nil && (ro.req.Kind != protocol.ReadSnapshot || len(ro.out) >= len(ro.req.Keys)) {
			rd.Fail("rot read", "a read-only transaction with %d of %d keys read", len(ro.out), len(ro.req.Keys))
			return
		}
		r.reads[i] = ro
	}
	r.armed = rd.Bool("rot armed")
	r.stats.ingested = rd.Int("rot ingested", wire.MaxCheckpointCount)
	r.stats.everBuffered = rd.Int("rot ever buffered", wire.MaxCheckpointCount)
	r.stats.bufferedUs = rd.Varint("rot buffered time")
}

// AppendCheckpoint implements protocol.Checkpointer: the unit's RoT-Storage, its position in
// the ingestion stream, the entries that arrived ahead of a gap (in stream order) and whether an
// acknowledgement is due.
func (u *Unit) AppendCheckpoint(dst []byte, codec protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	u.rot.appendCheckpoint(w, codec)
	w.Uvarint(u.next)
	seqs := slices.Sorted(maps.Keys(u.early))
	w.Count("unit early", len(seqs), maxEarly)
	for _, s := range seqs {
		w.Uvarint(s)
		w.Message(codec, u.early[s])
	}
	w.Bool(u.ackDue)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (u *Unit) RestoreCheckpoint(b []byte, codec protocol.Codec) error {
	rd := wire.NewReader(b)
	u.rot.restoreCheckpoint(rd, codec)
	u.next = rd.Uvarint("unit next")
	for range rd.Count("unit early", maxEarly, 2) {
		s := rd.Uvarint("unit early seq")
		d := storedDecision(rd, codec)
		if rd.Err() != nil {
			break
		}
		if s <= u.next+1 || !d.Commit {
			rd.Fail("unit early", "entry %d, next %d, committed %v", s, u.next+1, d.Commit)
			break
		}
		u.early[s] = d
	}
	u.ackDue = rd.Bool("unit ack due")
	return rd.Done()
}

// storedDecision reads a well-formed Decision written by wire.Writer.Message; on any other
// message it fails rd and returns an aborted empty decision.
func storedDecision(rd *wire.Reader, codec protocol.Codec) *Decision {
	d, _ := rd.Message(codec).(*Decision)
	if rd.Err() == nil && (d == nil || !wellFormed(d, true) && !wellFormed(d, false)) {
		rd.Fail("ogre decision", "not a well-formed decision")
	}
	if rd.Err() != nil {
		return &Decision{Txn: &txn.Txn{}}
	}
	return d
}

// idSets writes a map of keys to sets of transactions, keys and ids in order.
func idSets(w *wire.Writer, sets map[string]map[txn.ID]struct{}) {
	for _, k := range wire.SortedKeys(w, "ogre id sets", sets) {
		w.String("ogre key", k, wire.MaxKeyLen)
		w.IDs(slices.Sorted(maps.Keys(sets[k])))
	}
}

func readIDSets(rd *wire.Reader) map[string]map[txn.ID]struct{} {
	sets := map[string]map[txn.ID]struct{}{}
	for range rd.Count("ogre id sets", wire.MaxCheckpointCount, 2) {
		k := rd.String("ogre key", wire.MaxKeyLen)
		set := map[txn.ID]struct{}{}
		for _, id := range rd.IDs() {
			set[id] = struct{}{}
		}
		sets[k] = set
	}
	return sets
}

// counts writes a map of keys to counts, keys in order.
func counts(w *wire.Writer, m map[string]int) {
	for _, k := range wire.SortedKeys(w, "ogre counts", m) {
		w.String("ogre key", k, wire.MaxKeyLen)
		w.Int("ogre count", m[k], wire.MaxCheckpointCount)
	}
}

func readCounts(rd *wire.Reader) map[string]int {
	m := map[string]int{}
	for range rd.Count("ogre counts", wire.MaxCheckpointCount, 2) {
		k := rd.String("ogre key", wire.MaxKeyLen)
		m[k] = rd.Int("ogre count", wire.MaxCheckpointCount)
	}
	return m
}

// idLists writes a list of transaction lists.
func idLists(w *wire.Writer, lists [][]txn.ID) {
	w.Count("ogre id lists", len(lists), wire.MaxCheckpointCount)
	for _, l := range lists {
		w.IDs(l)
	}
}

func readIDLists(rd *wire.Reader) [][]txn.ID {
	lists := make([][]txn.ID, rd.Count("ogre id lists", wire.MaxCheckpointCount, 1))
	for i := range lists {
		lists[i] = rd.IDs()
	}
	return lists
}
