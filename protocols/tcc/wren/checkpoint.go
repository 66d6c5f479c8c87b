package wren

import (
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// AppendCheckpoint implements protocol.Checkpointer: the clocks, the versions of every key (the
// version order, every version ever committed, is on the replica's Disk), the prepared WOTs, the coordinated WOTs (once each, by id: a session's and the
// unfinished set share them), the sessions, the unfinished WOTs by id, and the visibility
// records. Maps go in key order; the client requests a coordinated WOT answers go through the
// codec.
func (r *Replica) AppendCheckpoint(dst []byte, c protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	w.Varint(r.clock.lastUs)
	w.Varint(r.lst)
	w.Varints(r.known)
	w.Varint(r.minKnown)
	for _, k := range wire.SortedKeys(w, "wren versions", r.versions) {
		w.String("wren key", k, wire.MaxKeyLen)
		vs := r.versions[k]
		w.Count("wren key versions", len(vs), wire.MaxCheckpointCount)
		for _, v := range vs {
			stamp(w, v.Stamp)
			w.Bytes("wren value", v.value, wire.MaxValueLen)
			w.Varint(v.supersededAtUs)
			w.Bool(v.superseded)
		}
	}
	w.Strings(slices.Sorted(maps.Keys(r.collectable)))
	w.Varint(r.gcFloorCt)
	for _, id := range wire.SortedKeys(w, "wren pending", r.pending) {
		p := r.pending[id]
		w.ID(id)
		w.Varint(p.pt)
		w.Writes(p.writes)
		w.Int("wren coordinator", p.coord, len(r.nodes)-1)
	}
	coords := map[txn.ID]*coordTx{}
	for _, s := range r.sessions {
		for _, ct := range s.coord {
			coords[ct.id] = ct
		}
	}
	for _, ct := range r.unfinished {
		coords[ct.id] = ct
	}
	for _, id := range wire.SortedKeys(w, "wren coordinated", coords) {
		r.checkpointCoord(w, c, coords[id])
	}
	for _, cl := range wire.SortedKeys(w, "wren sessions", r.sessions) {
		s := r.sessions[cl]
		w.Uvarint(uint64(cl))
		w.Uvarint(uint64(s.floor))
		for _, seq := range wire.SortedKeys(w, "wren session coordinated", s.coord) {
			w.Uvarint(uint64(seq))
			w.ID(s.coord[seq].id)
		}
		for _, seq := range wire.SortedKeys(w, "wren session done", s.done) {
			w.Uvarint(uint64(seq))
		}
	}
	w.IDs(slices.Sorted(maps.Keys(r.unfinished)))
	r.vis.Checkpoint(w)
	tcc.CheckpointWaiting(w, &r.visWait, tcc.CheckpointVisibility)
	return w.Finish()
}

func (r *Replica) checkpointCoord(w *wire.Writer, codec protocol.Codec, c *coordTx) {
	w.ID(c.id)
	w.Varint(c.startUs)
	w.Varint(c.clock)
	w.Count("wren participants", len(c.participants), len(r.nodes))
	for _, p := range c.participants {
		w.Int("wren participant", p, len(r.nodes)-1)
	}
	w.Count("wren shares", len(c.shares), len(r.nodes))
	for _, s := range c.shares {
		w.Writes(s)
	}
	w.Varints(c.votes)
	w.Bools(c.acked)
	w.Bool(c.decided)
	w.Bool(c.committed)
	w.Varint(c.ct)
	w.Varint(c.decidedUs)
	w.Count("wren waiting", len(c.waiting), wire.MaxCheckpointCount)
	for _, req := range c.waiting {
		w.Request(req, codec)
	}
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, c protocol.Codec) error {
	rd := wire.NewReader(b)
	r.clock.lastUs, r.lst = rd.Varint("wren clock"), rd.Varint("wren lst")
	if r.known = rd.Varints(); rd.Err() == nil && len(r.known) != len(r.nodes) {
		rd.Fail("wren known", "%d partitions, want %d", len(r.known), len(r.nodes))
	}
	r.minKnown = rd.Varint("wren min known")
	for range rd.Count("wren versions", wire.MaxCheckpointCount, 2) {
		k := rd.String("wren key", wire.MaxKeyLen)
		vs := make([]version, rd.Count("wren key versions", wire.MaxCheckpointCount, 5))
		for i := range vs {
			vs[i] = version{Stamp: readStamp(rd), value: rd.Bytes("wren value", wire.MaxValueLen), supersededAtUs: rd.Varint("wren superseded at"),
				superseded: rd.Bool("wren superseded")}
		}
		r.versions[k] = vs
	}
	for _, k := range rd.Strings() {
		r.collectable[k] = struct{}{}
	}
	r.gcFloorCt = rd.Varint("wren gc floor")
	for range rd.Count("wren pending", wire.MaxCheckpointCount, 4) {
		id := rd.ID("wren pending")
		r.pending[id] = &prepared{pt: rd.Varint("wren prepare time"), writes: rd.Writes(), coord: rd.Int("wren coordinator", len(r.nodes)-1)}
	}
	coords := map[txn.ID]*coordTx{}
	for range rd.Count("wren coordinated", wire.MaxCheckpointCount, 12) {
		ct := r.restoreCoord(rd, c)
		coords[ct.id] = ct
	}
	coord := func(id txn.ID) *coordTx {
		ct := coords[id]
		if ct == nil && rd.Err() == nil {
			rd.Fail("wren coordinated", "no transaction %v", id)
		}
		return ct
	}
	for range rd.Count("wren sessions", wire.MaxCheckpointCount, 4) {
		cl := txn.ClientID(rd.Uvarint("wren client"))
		s := &session{floor: uint32(rd.Int("wren floor", 1<<32-1)), coord: map[uint32]*coordTx{}, done: map[uint32]struct{}{}}
		for range rd.Count("wren session coordinated", wire.MaxCheckpointCount, 2) {
			seq := uint32(rd.Int("wren seq", 1<<32-1))
			s.coord[seq] = coord(rd.ID("wren coordinated id"))
		}
		for range rd.Count("wren session done", wire.MaxCheckpointCount, 1) {
			s.done[uint32(rd.Int("wren seq", 1<<32-1))] = struct{}{}
		}
		r.sessions[cl] = s
	}
	for _, id := range rd.IDs() {
		r.unfinished[id] = coord(id)
	}
	r.vis.Restore(rd)
	tcc.RestoreWaiting(rd, &r.visWait, tcc.RestoreVisibility)
	return rd.Done()
}

func (r *Replica) restoreCoord(rd *wire.Reader, codec protocol.Codec) *coordTx {
	n := len(r.nodes)
	c := &coordTx{id: rd.ID("wren coordinated"), startUs: rd.Varint("wren start"), clock: rd.Varint("wren coordinator clock")}
	c.participants = make([]int, rd.Count("wren participants", n, 1))
	for i := range c.participants {
		c.participants[i] = rd.Int("wren participant", n-1)
	}
	if len(c.participants) == 0 {
		c.participants = nil
	}
	c.shares = make([][]txn.Write, rd.Count("wren shares", n, 1))
	for i := range c.shares {
		c.shares[i] = rd.Writes()
	}
	if len(c.shares) == 0 {
		c.shares = nil
	}
	c.votes, c.acked = rd.Varints(), rd.Bools()
	c.decided, c.committed = rd.Bool("wren decided"), rd.Bool("wren committed")
	c.ct, c.decidedUs = rd.Varint("wren commit time"), rd.Varint("wren decided at")
	c.waiting = make([]protocol.Request, rd.Count("wren waiting", wire.MaxCheckpointCount, 1))
	for i := range c.waiting {
		c.waiting[i] = rd.Request(codec)
	}
	return c
}

func stamp(w *wire.Writer, s tcc.Stamp) {
	w.Varint(s.Time)
	w.ID(s.Writer)
}

func readStamp(rd *wire.Reader) tcc.Stamp {
	return tcc.Stamp{Time: rd.Varint("stamp time"), Writer: rd.ID("stamp writer")}
}
