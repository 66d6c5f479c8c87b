package eiger

import (
	"cmp"
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the clocks, every key's versions (without
// their values, which the store holds, installed at the commit: RestoreCheckpoint finds them
// there) and pending writers, the pending and decided transactions, the coordinator's early votes and
// floors, the unacknowledged commits, the parked reads (their requests through the codec) and
// the collection state. Maps go in key order.
func (r *Replica) AppendCheckpoint(dst []byte, c protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	w.Varint(r.clock)
	w.Varint(r.commitClock)
	for _, k := range wire.SortedKeys(w, "eiger keys", r.keys) {
		ks := r.keys[k]
		w.String("eiger key", k, wire.MaxKeyLen)
		w.Count("eiger versions", len(ks.versions), wire.MaxCheckpointCount)
		for _, v := range ks.versions {
			w.ID(v.writer)
			w.Varint(v.ct)
			w.Varint(v.supersededUs)
			w.Varint(v.lastReadUs)
			w.Bool(v.collected)
		}
		w.IDs(ks.pending)
	}
	for _, id := range wire.SortedKeys(w, "eiger pending", r.pending) {
		p := r.pending[id]
		w.ID(p.id)
		w.Writes(p.writes)
		w.Varint(p.pt)
		w.Varint(p.floor)
		w.Varint(int64(p.coord))
		w.Varint(p.checkUs)
		nodes(w, p.participants)
		w.Bool(p.votes != nil)
		votes(w, p.votes)
		w.Varint(p.deadlineUs)
		w.Count("eiger waiters", len(p.waiters), wire.MaxCheckpointCount)
		for _, req := range p.waiters {
			w.Request(req, c)
		}
	}
	for _, id := range wire.SortedKeys(w, "eiger decided", r.decided) {
		w.ID(id)
		w.Bool(r.decided[id].committed)
		w.Varint(r.decided[id].ct)
	}
	for _, id := range wire.SortedKeys(w, "eiger early votes", r.earlyVotes) {
		w.ID(id)
		votes(w, r.earlyVotes[id])
	}
	for _, id := range wire.SortedKeys(w, "eiger early floors", r.earlyFloors) {
		w.ID(id)
		w.Varint(r.earlyFloors[id])
	}
	for _, id := range wire.SortedKeys(w, "eiger unacked", r.unacked) {
		u := r.unacked[id]
		w.ID(id)
		w.Varint(u.ct)
		nodes(w, u.nodes)
		w.Varint(u.nextUs)
	}
	w.Count("eiger parked", len(r.parked), wire.MaxCheckpointCount)
	for _, pr := range r.parked {
		w.Request(pr.req, c)
		w.Bool(pr.req.Op == protocol.Message(pr.m))
		if pr.req.Op != protocol.Message(pr.m) {
			w.Message(c, pr.m)
		}
		for _, id := range wire.SortedKeys(w, "eiger asked", pr.asked) {
			w.ID(id)
			w.Bool(pr.asked[id])
		}
		w.Int("eiger checks", pr.checks, wire.MaxCheckpointCount)
		w.Varint(pr.expiresUs)
	}
	gcKeys := slices.Sorted(maps.Keys(r.gcKeys))
	w.Strings(gcKeys)
	for _, k := range gcKeys {
		w.Bool(r.gcKeys[k])
	}
	w.Varint(r.nextGCUs)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, c protocol.Codec) error {
	rd := wire.NewReader(b)
	r.clock, r.commitClock = rd.Varint("eiger clock"), rd.Varint("eiger commit clock")
	for range rd.Count("eiger keys", wire.MaxCheckpointCount, 3) {
		k := rd.String("eiger key", wire.MaxKeyLen)
		ks := &keyState{versions: make([]version, rd.Count("eiger versions", wire.MaxCheckpointCount, 5))}
		for i := range ks.versions {
			v := version{writer: rd.ID("eiger writer"), ct: rd.Varint("eiger ct"),
				supersededUs: rd.Varint("eiger superseded"), lastReadUs: rd.Varint("eiger last read"), collected: rd.Bool("eiger collected")}
			if !v.collected && rd.Err() == nil {
				var ok bool
				if v.value, ok = r.env.Store().ValueOf(k, v.writer); !ok {
					rd.Fail("eiger versions", "the store holds no version of %q by %v", k, v.writer)
				}
			}
			ks.versions[i] = v
		}
		if len(ks.versions) == 0 {
			ks.versions = nil
		}
		ks.pending = rd.IDs()
		r.keys[k] = ks
	}
	for range rd.Count("eiger pending", wire.MaxCheckpointCount, 10) {
		p := &pendingTx{id: rd.ID("eiger pending"), writes: rd.Writes(), pt: rd.Varint("eiger prepare time"), floor: rd.Varint("eiger floor"),
			coord: protocol.NodeID(rd.Varint("eiger coordinator")), checkUs: rd.Varint("eiger check"), participants: readNodes(rd)}
		hasVotes := rd.Bool("eiger votes present")
		if v := readVotes(rd); hasVotes {
			p.votes = v
		}
		p.deadlineUs = rd.Varint("eiger deadline")
		if n := rd.Count("eiger waiters", wire.MaxCheckpointCount, 1); n > 0 {
			p.waiters = make([]protocol.Request, n)
			for i := range p.waiters {
				p.waiters[i] = rd.Request(c)
			}
		}
		r.pending[p.id] = p
	}
	for range rd.Count("eiger decided", wire.MaxCheckpointCount, 3) {
		id := rd.ID("eiger decided")
		r.decided[id] = decision{committed: rd.Bool("eiger committed"), ct: rd.Varint("eiger decided ct")}
	}
	for range rd.Count("eiger early votes", wire.MaxCheckpointCount, 2) {
		id := rd.ID("eiger early vote")
		r.earlyVotes[id] = readVotes(rd)
	}
	for range rd.Count("eiger early floors", wire.MaxCheckpointCount, 2) {
		id := rd.ID("eiger early floor")
		r.earlyFloors[id] = rd.Varint("eiger floor")
	}
	for range rd.Count("eiger unacked", wire.MaxCheckpointCount, 4) {
		id := rd.ID("eiger unacked")
		r.unacked[id] = &unacked{ct: rd.Varint("eiger unacked ct"), nodes: readNodes(rd), nextUs: rd.Varint("eiger unacked next")}
	}
	if n := rd.Count("eiger parked", wire.MaxCheckpointCount, 4); n > 0 {
		r.parked = make([]*parkedRead, n)
		for i := range r.parked {
			pr := &parkedRead{req: rd.Request(c), asked: map[txn.ID]bool{}}
			m := pr.req.Op
			if !rd.Bool("eiger parked op") {
				m = rd.Message(c)
			}
			if pr.m, _ = m.(*ReadByTime); pr.m == nil {
				rd.Fail("eiger parked read", "not a read by time")
			}
			for range rd.Count("eiger asked", wire.MaxCheckpointCount, 2) {
				id := rd.ID("eiger asked")
				pr.asked[id] = rd.Bool("eiger asked flag")
			}
			pr.checks, pr.expiresUs = rd.Int("eiger checks", wire.MaxCheckpointCount), rd.Varint("eiger expires")
			r.parked[i] = pr
		}
	}
	for _, k := range rd.Strings() {
		r.gcKeys[k] = rd.Bool("eiger gc key")
	}
	r.nextGCUs = rd.Varint("eiger next gc")
	return rd.Done()
}

func nodes(w *wire.Writer, ns []protocol.NodeID) {
	w.Bool(ns != nil)
	w.Count("eiger nodes", len(ns), wire.MaxCheckpointCount)
	for _, n := range ns {
		w.Varint(int64(n))
	}
}

func readNodes(rd *wire.Reader) []protocol.NodeID {
	present := rd.Bool("eiger nodes present")
	ns := make([]protocol.NodeID, rd.Count("eiger nodes", wire.MaxCheckpointCount, 1))
	for i := range ns {
		ns[i] = protocol.NodeID(rd.Varint("eiger node"))
	}
	if !present {
		return nil
	}
	return ns
}

// votes appends a node → time map in node order.
func votes(w *wire.Writer, m map[protocol.NodeID]int64) {
	ns := slices.SortedFunc(maps.Keys(m), cmp.Compare[protocol.NodeID])
	w.Count("eiger votes", len(ns), wire.MaxCheckpointCount)
	for _, n := range ns {
		w.Varint(int64(n))
		w.Varint(m[n])
	}
}

func readVotes(rd *wire.Reader) map[protocol.NodeID]int64 {
	m := map[protocol.NodeID]int64{}
	for range rd.Count("eiger votes", wire.MaxCheckpointCount, 2) {
		n := protocol.NodeID(rd.Varint("eiger vote node"))
		m[n] = rd.Varint("eiger vote")
	}
	return m
}
