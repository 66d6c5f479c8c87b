package alvin

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// AppendCheckpoint implements protocol.Checkpointer: the P-CC executor, the open batch (instance
// batching), the DQueue's entries, the instances this node leads and the recoveries it runs, the
// delivery waiters, the collected ids, the report echoes and the counters, every map in id order. The conflict index is left out:
// it is rebuilt from the entries (an entry is indexed exactly while it has a payload and is not
// a NO-OP). Promises go through the codec. The inbox and the ready queue are empty between
// inputs.
func (r *Replica) AppendCheckpoint(dst []byte, codec protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	if len(r.inbox) > 0 || len(r.ready) > 0 {
		w.Fail("alvin inbox", "%d messages to itself and %d deliveries are still pending", len(r.inbox), len(r.ready))
	}
	r.exec.Checkpoint(w)
	r.batcher.Checkpoint(w)
	w.Uvarint(r.maxSeen)
	ids := sortedIDs(r.entries)
	w.Count("alvin entries", len(ids), wire.MaxCheckpointCount)
	for _, id := range ids {
		e := r.entries[id]
		w.ID(id)
		w.OptionalTxn(e.t)
		w.Bool(e.noop)
		w.Uvarint(e.pos)
		w.IDs(e.deps)
		w.Byte(byte(e.status))
		w.Uvarint(e.promised)
		w.Uvarint(e.maxEpoch)
		w.Uvarint(e.accEpoch)
		w.Bool(e.hasProposal)
		w.Uvarint(e.proposedEpoch)
		w.Uvarint(e.proposedPos)
		w.IDs(e.proposedDeps)
		w.Bool(e.delivered)
		w.Uvarint(e.deliveredBy)
		w.Varint(e.sinceUs)
		w.Bool(e.fetched)
		w.Int("alvin attempts", e.attempts, wire.MaxCheckpointCount)
	}
	ids = sortedIDs(r.leads)
	w.Count("alvin leads", len(ids), wire.MaxCheckpointCount)
	for _, id := range ids {
		l := r.leads[id]
		w.ID(id)
		w.Uvarint(l.epoch)
		w.Byte(byte(l.phase))
		w.Uvarint(l.pos0)
		w.IDs(l.deps0)
		w.Count("alvin replies", len(l.replies), wire.MaxCheckpointCount)
		for _, rep := range l.replies {
			w.Bool(rep.ok)
			w.Uvarint(rep.pos)
			w.IDs(rep.deps)
		}
		w.Int("alvin count", l.count, wire.MaxCheckpointCount)
		w.Uvarint(l.pos)
		w.IDs(l.deps)
		w.Bool(l.noop)
		w.Varint(l.startUs)
		w.Varint(l.sentUs)
		w.Bools(l.havePayload)
		w.Bool(l.fastDecision)
	}
	ids = sortedIDs(r.recs)
	w.Count("alvin recoveries", len(ids), wire.MaxCheckpointCount)
	for _, id := range ids {
		rec := r.recs[id]
		w.ID(id)
		w.Uvarint(rec.epoch)
		w.Count("alvin promises", len(rec.promises), wire.MaxCheckpointCount)
		for _, p := range rec.promises {
			w.Bool(p != nil)
			if p != nil {
				w.Message(codec, p)
			}
		}
		w.Int("alvin promise count", rec.count, wire.MaxCheckpointCount)
		w.Varint(rec.sentUs)
	}
	ids = sortedIDs(r.waiters)
	w.Count("alvin waiters", len(ids), wire.MaxCheckpointCount)
	for _, id := range ids {
		w.ID(id)
		w.IDs(r.waiters[id])
	}
	w.Count("alvin gone", len(r.goneOrder), wire.MaxCheckpointCount)
	for _, id := range r.goneOrder {
		w.ID(id)
	}
	ids = sortedIDs(r.gone)
	w.Count("alvin gone times", len(ids), wire.MaxCheckpointCount)
	for _, id := range ids {
		w.ID(id)
		w.Varint(r.gone[id])
	}
	w.Count("alvin echoes", len(r.echo), wire.MaxCheckpointCount)
	for _, ids := range r.echo {
		w.IDs(ids)
	}
	w.Varint(r.reportAt)
	for _, c := range []int{r.stats.FastDecisions, r.stats.SlowDecisions, r.stats.Recoveries, r.stats.NoOps} {
		w.Int("alvin counter", c, wire.MaxCheckpointCount)
	}
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (r *Replica) RestoreCheckpoint(b []byte, codec protocol.Codec) error {
	rd := wire.NewReader(b)
	r.exec.Restore(rd)
	r.batcher.Restore(rd)
	r.maxSeen = rd.Uvarint("alvin max seen")
	for range rd.Count("alvin entries", wire.MaxCheckpointCount, 18) {
		id := rd.ID("alvin entry")
		e := &entry{t: rd.OptionalTxn(), noop: rd.Bool("alvin noop"), pos: rd.Uvarint("alvin pos"), deps: rd.IDs(),
			status: Status(rd.Byte("alvin status")), promised: rd.Uvarint("alvin promised"), maxEpoch: rd.Uvarint("alvin max epoch"),
			accEpoch: rd.Uvarint("alvin accepted epoch"), hasProposal: rd.Bool("alvin has proposal"),
			proposedEpoch: rd.Uvarint("alvin proposed epoch"), proposedPos: rd.Uvarint("alvin proposed pos"), proposedDeps: rd.IDs(),
			delivered: rd.Bool("alvin delivered"), deliveredBy: rd.Uvarint("alvin delivered by"), sinceUs: rd.Varint("alvin since"),
			fetched: rd.Bool("alvin fetched"), attempts: rd.Int("alvin attempts", wire.MaxCheckpointCount)}
		if rd.Err() != nil {
			break
		}
		switch {
		case e.status > StableStatus:
			rd.Fail("alvin status", "unknown status %d", e.status)
		case e.t != nil && e.t.ID != id:
			rd.Fail("alvin entry", "entry %v holds transaction %v", id, e.t.ID)
		case r.entries[id] != nil:
			rd.Fail("alvin entry", "entry %v twice", id)
		}
		if rd.Err() != nil {
			break
		}
		r.entries[id] = e
		r.reindex(e)
	}
	for range rd.Count("alvin leads", wire.MaxCheckpointCount, 13) {
		id := rd.ID("alvin lead")
		l := &lead{epoch: rd.Uvarint("alvin lead epoch"), phase: phase(rd.Byte("alvin phase")), pos0: rd.Uvarint("alvin pos0"), deps0: rd.IDs()}
		l.replies = make([]reply, rd.Count("alvin replies", wire.MaxCheckpointCount, 3))
		for i := range l.replies {
			l.replies[i] = reply{ok: rd.Bool("alvin reply ok"), pos: rd.Uvarint("alvin reply pos"), deps: rd.IDs()}
		}
		l.count, l.pos, l.deps = rd.Int("alvin count", wire.MaxCheckpointCount), rd.Uvarint("alvin lead pos"), rd.IDs()
		l.noop, l.startUs, l.sentUs = rd.Bool("alvin lead noop"), rd.Varint("alvin start"), rd.Varint("alvin sent")
		l.havePayload, l.fastDecision = rd.Bools(), rd.Bool("alvin fast decision")
		if rd.Err() != nil {
			break
		}
		if l.phase < proposing || l.phase > decided || (len(l.replies) != 0 && len(l.replies) != r.n) || len(l.havePayload) != r.n {
			rd.Fail("alvin lead", "phase %d, %d replies and %d payload flags for %d nodes", l.phase, len(l.replies), len(l.havePayload), r.n)
			break
		}
		r.leads[id] = l
	}
	for range rd.Count("alvin recoveries", wire.MaxCheckpointCount, 4) {
		id := rd.ID("alvin recovery")
		rec := &recovery{epoch: rd.Uvarint("alvin recovery epoch")}
		rec.promises = make([]*Promise, rd.Count("alvin promises", wire.MaxCheckpointCount, 1))
		for i := range rec.promises {
			if rd.Bool("alvin promise present") {
				rec.promises[i], _ = rd.Message(codec).(*Promise)
				if rd.Err() == nil && rec.promises[i] == nil {
					rd.Fail("alvin promise", "not a promise")
				}
			}
		}
		rec.count, rec.sentUs = rd.Int("alvin promise count", wire.MaxCheckpointCount), rd.Varint("alvin recovery sent")
		if rd.Err() == nil && len(rec.promises) != r.n {
			rd.Fail("alvin recovery", "%d promises for %d nodes", len(rec.promises), r.n)
		}
		if rd.Err() != nil {
			break
		}
		r.recs[id] = rec
	}
	for range rd.Count("alvin waiters", wire.MaxCheckpointCount, 2) {
		id := rd.ID("alvin waiter")
		r.waiters[id] = rd.IDs()
	}
	r.goneOrder = make([]txn.ID, rd.Count("alvin gone", wire.MaxCheckpointCount, 1))
	for i := range r.goneOrder {
		r.goneOrder[i] = rd.ID("alvin gone")
	}
	for range rd.Count("alvin gone times", wire.MaxCheckpointCount, 2) {
		id := rd.ID("alvin gone")
		r.gone[id] = rd.Varint("alvin gone time")
	}
	echo := make([][]txn.ID, rd.Count("alvin echoes", wire.MaxCheckpointCount, 1))
	for i := range echo {
		echo[i] = rd.IDs()
	}
	if rd.Err() == nil && len(echo) != r.n {
		rd.Fail("alvin echoes", "%d echoes for %d nodes", len(echo), r.n)
	}
	r.echo = echo
	r.reportAt = rd.Varint("alvin report at")
	for _, c := range []*int{&r.stats.FastDecisions, &r.stats.SlowDecisions, &r.stats.Recoveries, &r.stats.NoOps} {
		*c = rd.Int("alvin counter", wire.MaxCheckpointCount)
	}
	return rd.Done()
}
