package fastccs

import (
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// AppendCheckpoint implements protocol.Checkpointer (and, through the embedding, for
// fastccs-geo): the sequence number and svc, every key's committed versions (without their
// values, which the store holds: RestoreCheckpoint finds them there), the pending
// transactions with their versions, the commit queue, the early votes, the decisions, the
// clients' largest sequence numbers, the gossip tree's state, the geo extension's streams and
// the visibility tracking. Maps go in key order.
//
// Two tables share pointers, and the checkpoint writes each shared object once and refers to it
// by id, so that restoring rebuilds the sharing: the commit queue (ready) holds transactions of
// pending, written as their ids (a nil entry is a hole left by an abort); visWait holds each
// waiting WOT under every slot it waits for, written in full at its first appearance (in slot,
// then heap order) and as its index after.
func (r *Replica) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	w.Varint(r.sn)
	w.Varints(r.svc)
	keys := slices.Sorted(maps.Keys(r.keys))
	w.Strings(keys)
	for _, k := range keys {
		kv := r.keys[k]
		w.Count("fastccs versions", len(kv.list), wire.MaxCheckpointCount)
		for _, v := range kv.list {
			appendVersion(w, v, false)
		}
		appendRank(w, kv.collected)
	}
	w.Strings(slices.Sorted(maps.Keys(r.multi)))
	ids := slices.Sorted(maps.Keys(r.pending))
	w.IDs(ids)
	for _, id := range ids {
		p := r.pending[id]
		w.Varint(p.sn)
		w.Writes(p.writes)
		w.Count("fastccs pending versions", len(p.versions), wire.MaxCheckpointCount)
		for _, v := range p.versions {
			appendVersion(w, v, true)
		}
		w.Uvarint(uint64(p.client))
		w.Uvarint(p.seq)
		w.Int("fastccs coordinator", p.coordinator, wire.MaxCheckpointCount)
		w.Varint(p.deadlineUs)
		w.Int("fastccs size", p.size, wire.MaxCheckpointCount)
		appendInts(w, p.prepared)
		w.Varints(p.ct)
		w.Varints(p.final)
	}
	sns := slices.Sorted(maps.Keys(r.ready))
	w.Varints(sns)
	for _, sn := range sns {
		p := r.ready[sn]
		w.Bool(p != nil)
		if p != nil {
			w.ID(p.id)
		}
	}
	ids = slices.Sorted(maps.Keys(r.early))
	w.IDs(ids)
	for _, id := range ids {
		es := r.early[id]
		w.Count("fastccs early votes", len(es), wire.MaxCheckpointCount)
		for _, e := range es {
			w.Int("fastccs early from", e.from, wire.MaxCheckpointCount)
			w.Varint(e.sn)
			w.Varint(e.deadlineUs)
		}
	}
	w.Int("fastccs early count", r.earlyCount, wire.MaxCheckpointCount)
	ids = slices.Sorted(maps.Keys(r.decided))
	w.IDs(ids)
	for _, id := range ids {
		o := r.decided[id]
		w.Bool(o.committed)
		w.Bool(o.coordinator)
		w.Varints(o.ct)
		w.Varint(o.atUs)
	}
	w.ClientSeqs("fastccs clients", r.maxSeq)
	w.Bools(r.heard)
	w.Int("fastccs heard", r.heardCount, wire.MaxCheckpointCount)
	w.Varint(r.lastSentUs)
	for _, l := range []*treeLink{&r.up, &r.down} {
		w.Varints(l.sent)
		w.Int("fastccs tree updates", l.updates, wire.MaxCheckpointCount*fullTreeUpdateEvery)
	}
	w.Bool(r.geo != nil)
	if g := r.geo; g != nil {
		w.Count("fastccs streamed", len(g.log), wire.MaxCheckpointCount)
		for _, s := range g.log {
			w.Varint(s.prev)
			w.Varint(s.tx.SN)
			w.ID(s.tx.Tx)
			w.Writes(s.tx.Writes)
			w.Varints(s.tx.CT)
		}
		w.Varint(g.last)
		w.Varints(g.acked)
		w.Varints(g.sentUpto)
		w.Bools(g.behind)
		w.Varints(g.progressUs)
	}
	r.vis.Checkpoint(w)
	w.Bool(r.visWait != nil)
	index := map[*visPending]int{}
	for k := range r.visWait {
		tcc.CheckpointWaiting(w, &r.visWait[k], func(w *wire.Writer, vp *visPending) {
			i, seen := index[vp]
			if !seen {
				i = len(index)
				index[vp] = i
			}
			w.Int("fastccs visibility index", i, wire.MaxCheckpointCount)
			if !seen {
				tcc.CheckpointVisibility(w, vp.ev)
				w.Int("fastccs blocked", vp.blocked, wire.MaxCheckpointCount)
			}
		})
	}
	w.Int("fastccs visibility waiting", r.visWaiting, wire.MaxCheckpointCount)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer. It rebuilds the shared pointers from the
// ids AppendCheckpoint wrote, and rejects vectors of the wrong length, partitions out of range
// and references to transactions it does not hold.
func (r *Replica) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	rd := wire.NewReader(b)
	n, parts := r.slots.Len(), r.slots.Partitions
	r.sn = rd.Varint("fastccs sn")
	r.svc = readVC(rd, n, false)
	for _, k := range rd.Strings() {
		kv := &keyVersions{}
		for range rd.Count("fastccs versions", wire.MaxCheckpointCount, 7) {
			v := r.readVersion(rd, false)
			var ok bool
			if v.value, ok = r.env.Store().ValueOf(k, v.writer); !ok && rd.Err() == nil {
				rd.Fail("fastccs versions", "the store holds no version of %q by %v", k, v.writer)
			}
			kv.list = append(kv.list, v)
		}
		kv.collected = readRank(rd)
		r.keys[k] = kv
	}
	for _, k := range rd.Strings() {
		r.multi[k] = true
	}
	for _, id := range rd.IDs() {
		p := &pendingTx{id: id, sn: rd.Varint("fastccs pending sn"), writes: rd.Writes()}
		for range rd.Count("fastccs pending versions", wire.MaxCheckpointCount, 8) {
			p.versions = append(p.versions, r.readVersion(rd, true))
		}
		if len(p.versions) != len(p.writes) {
			rd.Fail("fastccs pending versions", "%d versions for %d writes", len(p.versions), len(p.writes))
		}
		p.client, p.seq = txn.ClientID(rd.Uvarint("fastccs client")), rd.Uvarint("fastccs seq")
		p.coordinator = partition(rd, parts)
		p.deadlineUs = rd.Varint("fastccs deadline")
		p.size = rd.Int("fastccs size", wire.MaxCheckpointCount)
		p.prepared = readInts(rd, parts)
		p.ct, p.final = readVC(rd, n, true), readVC(rd, n, true)
		r.pending[id] = p
	}
	for _, sn := range rd.Varints() {
		var p *pendingTx
		if rd.Bool("fastccs ready entry") {
			id := rd.ID("fastccs ready")
			if p = r.pending[id]; p == nil && rd.Err() == nil {
				rd.Fail("fastccs ready", "transaction %v is not pending", id)
			}
		}
		r.ready[sn] = p
	}
	for _, id := range rd.IDs() {
		es := make([]earlyVote, rd.Count("fastccs early votes", wire.MaxCheckpointCount, 3))
		for i := range es {
			es[i] = earlyVote{from: partition(rd, parts), sn: rd.Varint("fastccs early sn"), deadlineUs: rd.Varint("fastccs early deadline")}
		}
		r.early[id] = es
	}
	r.earlyCount = rd.Int("fastccs early count", wire.MaxCheckpointCount)
	for _, id := range rd.IDs() {
		r.decided[id] = &outcome{committed: rd.Bool("fastccs committed"), coordinator: rd.Bool("fastccs coordinated"),
			ct: readVC(rd, n, true), atUs: rd.Varint("fastccs decided at")}
	}
	rd.ClientSeqs("fastccs clients", r.maxSeq)
	if heard := rd.Bools(); len(heard) == len(r.heard) {
		r.heard = heard
	} else {
		rd.Fail("fastccs heard", "%d children, want %d", len(heard), len(r.heard))
	}
	r.heardCount = rd.Int("fastccs heard", len(r.heard))
	r.lastSentUs = rd.Varint("fastccs last sent")
	for _, l := range []*treeLink{&r.up, &r.down} {
		l.sent = readVC(rd, n, true)
		l.updates = rd.Int("fastccs tree updates", wire.MaxCheckpointCount*fullTreeUpdateEvery)
	}
	if hasGeo := rd.Bool("fastccs geo"); hasGeo != (r.geo != nil) {
		rd.Fail("fastccs geo", "geo state %v in a replica with geo %v", hasGeo, r.geo != nil)
	} else if g := r.geo; g != nil {
		dcs := r.slots.DCs
		for range rd.Count("fastccs streamed", wire.MaxCheckpointCount, 6) {
			s := streamed{prev: rd.Varint("fastccs streamed prev")}
			s.tx = ReplicatedTx{SN: rd.Varint("fastccs streamed sn"), Tx: rd.ID("fastccs streamed tx"), Writes: rd.Writes(), CT: readVC(rd, n, false)}
			g.log = append(g.log, s)
		}
		g.last = rd.Varint("fastccs streamed last")
		g.acked, g.sentUpto = readVC(rd, dcs, false), readVC(rd, dcs, false)
		if g.behind = rd.Bools(); len(g.behind) != dcs && rd.Err() == nil {
			rd.Fail("fastccs behind", "%d datacenters, want %d", len(g.behind), dcs)
		}
		g.progressUs = readVC(rd, dcs, false)
	}
	r.vis.Restore(rd)
	if rd.Bool("fastccs visibility waits") {
		r.visWait = make([]tcc.Waiting[*visPending], n)
		var seen []*visPending
		for k := range r.visWait {
			tcc.RestoreWaiting(rd, &r.visWait[k], func(rd *wire.Reader) *visPending {
				switch i := rd.Int("fastccs visibility index", len(seen)); {
				case rd.Err() != nil:
					return &visPending{}
				case i < len(seen):
					return seen[i]
				}
				vp := &visPending{ev: tcc.RestoreVisibility(rd), blocked: rd.Int("fastccs blocked", n)}
				seen = append(seen, vp)
				return vp
			})
		}
	}
	r.visWaiting = rd.Int("fastccs visibility waiting", wire.MaxCheckpointCount)
	return rd.Done()
}

// appendVersion writes v, with its value if withValue: a committed version's value is in the
// store (its writer installed it there at the commit), whose segments the checkpoint already
// covers, so that the checkpoint holds the key space's metadata, not a copy of its data.
func appendVersion(w *wire.Writer, v *version, withValue bool) {
	if withValue {
		w.Bytes("fastccs value", v.value, wire.MaxValueLen)
	}
	w.ID(v.writer)
	w.Varints(v.ct)
	w.Bool(v.committed)
	appendRank(w, v.rank)
	w.Varint(v.lastAccessUs)
	w.Varint(v.supersededAtUs)
}

// readVersion reads a version appendVersion wrote (withValue as it was written).
func (r *Replica) readVersion(rd *wire.Reader, withValue bool) *version {
	var value []byte
	if withValue {
		value = rd.Bytes("fastccs value", wire.MaxValueLen)
	}
	return &version{value: value, writer: rd.ID("fastccs writer"), ct: readVC(rd, r.slots.Len(), false),
		committed: rd.Bool("fastccs committed"), rank: readRank(rd), lastAccessUs: rd.Varint("fastccs last access"),
		supersededAtUs: rd.Varint("fastccs superseded")}
}

func appendRank(w *wire.Writer, rk rank) {
	for _, x := range rk {
		w.Varint(x)
	}
}

func readRank(rd *wire.Reader) rank {
	var rk rank
	for i := range rk {
		rk[i] = rd.Varint("fastccs rank")
	}
	return rk
}

// readVC reads a vector written by Writer.Varints, which must have n entries, or be nil if
// nilOK.
func readVC(rd *wire.Reader, n int, nilOK bool) VC {
	v := rd.Varints()
	if rd.Err() == nil && len(v) != n && (v != nil || !nilOK) {
		rd.Fail("fastccs vector", "%d entries, want %d", len(v), n)
		return make(VC, n)
	}
	return v
}

func appendInts(w *wire.Writer, xs []int) {
	w.Bool(xs != nil)
	w.Count("fastccs partitions", len(xs), wire.MaxCheckpointCount)
	for _, x := range xs {
		w.Int("fastccs partition", x, wire.MaxCheckpointCount)
	}
}

// readInts reads a list of partitions below parts written by appendInts.
func readInts(rd *wire.Reader, parts int) []int {
	present := rd.Bool("fastccs partitions present")
	xs := make([]int, rd.Count("fastccs partitions", wire.MaxCheckpointCount, 1))
	for i := range xs {
		xs[i] = partition(rd, parts)
	}
	if !present {
		return nil
	}
	return xs
}

// partition reads a partition index below parts.
func partition(rd *wire.Reader, parts int) int {
	return rd.Int("fastccs partition", max(parts-1, 0))
}

var _ protocol.Checkpointer = (*Replica)(nil)
