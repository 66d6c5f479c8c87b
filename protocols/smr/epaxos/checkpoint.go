package epaxos

import (
	"cmp"
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the executor's state, the open batch
// (instance batching), every instance (status, ballots, value, attributes, whether a
// TryPreAccept set it, the drive of those this replica leads, recovery schedule, the execution
// algorithm's marks), the per-key index, the watched instances and their waiters,
// the announcements awaiting acknowledgements, the garbage-collection state, the search
// generation and the ordering counters. Maps go in key order (instances by replica, then
// slot); the promises a recovery collected go through the codec.
func (r *Replica) AppendCheckpoint(dst []byte, c protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	r.exec.Checkpoint(w)
	r.batcher.Checkpoint(w)
	insts := sortedInstances(r.insts)
	w.Count("epaxos instances", len(insts), wire.MaxCheckpointCount)
	for _, inst := range insts {
		e := r.insts[inst]
		writeInst(w, inst)
		w.Byte(byte(e.status))
		w.Uvarint(e.ballot)
		w.Uvarint(e.vballot)
		w.Bool(e.noop)
		w.OptionalTxn(e.cmd)
		writeAttrs(w, e.Attrs)
		w.Bool(e.unchanged)
		w.Bool(e.tried)
		w.Bool(e.indexed)
		w.Bool(e.drive != nil)
		if d := e.drive; d != nil {
			w.Uvarint(d.ballot)
			w.Byte(byte(d.phase))
			w.Bools(d.replied)
			w.Int("epaxos count", d.count, wire.MaxCheckpointCount)
			w.Bool(d.noop)
			w.OptionalTxn(d.cmd)
			writeAttrs(w, d.proposal)
			writeAttrs(w, d.acc)
			w.Bool(d.allUnchanged)
			w.Varint(d.fastDeadlineUs)
			w.Varint(d.retryAtUs)
			w.Count("epaxos promises", len(d.promises), wire.MaxCheckpointCount)
			w.Bool(d.promises != nil)
			for _, p := range d.promises {
				w.Bool(p != nil)
				if p != nil {
					w.Message(c, p)
				}
			}
			w.Bool(d.trying)
			w.Bools(d.holders)
			w.Bool(d.impossible)
		}
		w.Varint(e.recoverAtUs)
		w.Varint(e.backoffUs)
		w.Uvarint(e.marks.gen)
		w.Varint(int64(e.marks.index))
		w.Varint(int64(e.marks.low))
		w.Bool(e.marks.onStack)
	}
	w.Uvarint(r.nextSlot)
	for _, k := range wire.SortedKeys(w, "epaxos keys", r.keys) {
		w.String("epaxos key", k, wire.MaxKeyLen)
		instances(w, r.keys[k].writers)
		instances(w, r.keys[k].readers)
	}
	insts = sortedInstances(r.watch)
	w.Count("epaxos watch", len(insts), wire.MaxCheckpointCount)
	for _, inst := range insts {
		writeInst(w, inst)
		w.Bool(r.watch[inst])
	}
	insts = sortedInstances(r.waiters)
	w.Count("epaxos waiters", len(insts), wire.MaxCheckpointCount)
	for _, inst := range insts {
		writeInst(w, inst)
		instances(w, r.waiters[inst])
	}
	insts = sortedInstances(r.announced)
	w.Count("epaxos announced", len(insts), wire.MaxCheckpointCount)
	for _, inst := range insts {
		a := r.announced[inst]
		writeInst(w, inst)
		w.Bools(a.acked)
		w.Int("epaxos unacked", a.unacked, wire.MaxCheckpointCount)
		w.Varint(a.retryAtUs)
	}
	g := &r.gc
	w.Uvarints(g.executedUpTo)
	for _, over := range g.executedOver {
		for _, s := range wire.SortedKeys(w, "epaxos executed over", over) {
			w.Uvarint(s)
			w.Bool(over[s])
		}
	}
	for _, up := range g.peerUpTo {
		w.Uvarints(up)
	}
	w.Uvarints(g.forgotUpTo)
	w.Uvarints(g.scheduled)
	w.Count("epaxos due", len(g.due), wire.MaxCheckpointCount)
	for _, d := range g.due {
		w.Int("epaxos due space", d.space, r.n-1)
		w.Uvarint(d.upTo)
		w.Varint(d.atUs)
	}
	w.Uvarints(g.reported)
	w.Varint(g.reportAtUs)
	w.Uvarint(r.search)
	s := r.stats
	for _, v := range []int{s.FastCommits, s.SlowCommits, s.Recoveries, s.NoOps, s.Tries} {
		w.Int("epaxos counter", v, wire.MaxCheckpointCount)
	}
	for _, size := range wire.SortedKeys(w, "epaxos component sizes", s.SCCSizes) {
		w.Int("epaxos component size", size, wire.MaxCheckpointCount)
		w.Int("epaxos components", s.SCCSizes[size], wire.MaxCheckpointCount)
	}
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, c protocol.Codec) error {
	rd := wire.NewReader(b)
	r.exec.Restore(rd)
	r.batcher.Restore(rd)
	for range rd.Count("epaxos instances", wire.MaxCheckpointCount, 20) {
		inst := readInst(rd)
		e := &entry{status: Status(rd.Byte("epaxos status")), ballot: rd.Uvarint("epaxos ballot"), vballot: rd.Uvarint("epaxos vballot"),
			noop: rd.Bool("epaxos noop"), cmd: rd.OptionalTxn(), Attrs: readAttrs(rd), unchanged: rd.Bool("epaxos unchanged"),
			tried: rd.Bool("epaxos tried"), indexed: rd.Bool("epaxos indexed")}
		if e.status > Executed {
			rd.Fail("epaxos status", "unknown status %d", e.status)
		}
		if rd.Bool("epaxos drive") {
			d := &drive{ballot: rd.Uvarint("epaxos drive ballot"), phase: phase(rd.Byte("epaxos phase")), replied: rd.Bools(),
				count: rd.Int("epaxos count", wire.MaxCheckpointCount), noop: rd.Bool("epaxos drive noop"), cmd: rd.OptionalTxn(),
				proposal: readAttrs(rd), acc: readAttrs(rd), allUnchanged: rd.Bool("epaxos all unchanged"),
				fastDeadlineUs: rd.Varint("epaxos fast deadline"), retryAtUs: rd.Varint("epaxos retry")}
			n := rd.Count("epaxos promises", wire.MaxCheckpointCount, 1)
			if rd.Bool("epaxos promises present") {
				d.promises = make([]*PrepareReply, n)
			}
			for i := range n {
				if !rd.Bool("epaxos promise present") {
					continue
				}
				p, _ := rd.Message(c).(*PrepareReply)
				if p == nil {
					rd.Fail("epaxos promise", "not a prepare reply")
				} else if d.promises != nil {
					d.promises[i] = p
				}
			}
			d.trying, d.holders, d.impossible = rd.Bool("epaxos trying"), rd.Bools(), rd.Bool("epaxos impossible")
			e.drive = d
		}
		e.recoverAtUs, e.backoffUs = rd.Varint("epaxos recover at"), rd.Varint("epaxos backoff")
		e.marks = visitMarks{gen: rd.Uvarint("epaxos mark generation"), index: int(rd.Varint("epaxos mark index")),
			low: int(rd.Varint("epaxos mark low")), onStack: rd.Bool("epaxos on stack")}
		r.insts[inst] = e
	}
	r.nextSlot = rd.Uvarint("epaxos next slot")
	for range rd.Count("epaxos keys", wire.MaxCheckpointCount, 3) {
		k := rd.String("epaxos key", wire.MaxKeyLen)
		r.keys[k] = &keyIndex{writers: readInstances(rd), readers: readInstances(rd)}
	}
	for range rd.Count("epaxos watch", wire.MaxCheckpointCount, 3) {
		inst := readInst(rd)
		r.watch[inst] = rd.Bool("epaxos watched")
	}
	for range rd.Count("epaxos waiters", wire.MaxCheckpointCount, 3) {
		inst := readInst(rd)
		r.waiters[inst] = readInstances(rd)
	}
	for range rd.Count("epaxos announced", wire.MaxCheckpointCount, 5) {
		inst := readInst(rd)
		r.announced[inst] = &announcement{acked: rd.Bools(), unacked: rd.Int("epaxos unacked", wire.MaxCheckpointCount), retryAtUs: rd.Varint("epaxos announce retry")}
	}
	g := &r.gc
	g.executedUpTo = rd.Uvarints()
	for _, over := range g.executedOver {
		for range rd.Count("epaxos executed over", wire.MaxCheckpointCount, 2) {
			s := rd.Uvarint("epaxos executed slot")
			over[s] = rd.Bool("epaxos executed")
		}
	}
	for i := range g.peerUpTo {
		g.peerUpTo[i] = rd.Uvarints()
	}
	g.forgotUpTo, g.scheduled = rd.Uvarints(), rd.Uvarints()
	g.due = make([]gcDue, rd.Count("epaxos due", wire.MaxCheckpointCount, 3))
	for i := range g.due {
		g.due[i] = gcDue{space: rd.Int("epaxos due space", r.n-1), upTo: rd.Uvarint("epaxos due up to"), atUs: rd.Varint("epaxos due at")}
	}
	g.reported, g.reportAtUs = rd.Uvarints(), rd.Varint("epaxos report at")
	for _, l := range [][]uint64{g.executedUpTo, g.forgotUpTo, g.scheduled, g.reported} {
		if rd.Err() == nil && len(l) != r.n {
			rd.Fail("epaxos gc state", "%d spaces, want %d", len(l), r.n)
		}
	}
	r.search = rd.Uvarint("epaxos search")
	s := &r.stats
	for _, v := range []*int{&s.FastCommits, &s.SlowCommits, &s.Recoveries, &s.NoOps, &s.Tries} {
		*v = rd.Int("epaxos counter", wire.MaxCheckpointCount)
	}
	for range rd.Count("epaxos component sizes", wire.MaxCheckpointCount, 2) {
		size := rd.Int("epaxos component size", wire.MaxCheckpointCount)
		s.SCCSizes[size] = rd.Int("epaxos components", wire.MaxCheckpointCount)
	}
	return rd.Done()
}

// sortedInstances returns m's instances by replica, then slot.
func sortedInstances[V any](m map[Instance]V) []Instance {
	return slices.SortedFunc(maps.Keys(m), func(a, b Instance) int {
		return cmp.Or(cmp.Compare(a.Replica, b.Replica), cmp.Compare(a.Slot, b.Slot))
	})
}

// instances appends a list of instances, telling nil from empty.
func instances(w *wire.Writer, l []Instance) {
	w.Bool(l != nil)
	w.Count("epaxos instance list", len(l), wire.MaxCheckpointCount)
	for _, inst := range l {
		writeInst(w, inst)
	}
}

func readInstances(rd *wire.Reader) []Instance {
	present := rd.Bool("epaxos instance list present")
	l := make([]Instance, rd.Count("epaxos instance list", wire.MaxCheckpointCount, 2))
	for i := range l {
		l[i] = readInst(rd)
	}
	if !present {
		return nil
	}
	return l
}
