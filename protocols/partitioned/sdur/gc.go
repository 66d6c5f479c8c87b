package sdur

import (
	"slices"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// Garbage collection: a replica forgets what it knew about decided transactions once no
// message about them can take effect any more, so its memory is bounded by the transactions of
// the last gc_horizon (H), not by the run.
//
// The rule that makes forgetting safe is a function of the delivery order alone, so every
// replica of a partition applies it identically: each TERMINATE and ABORTREQ carries its
// transaction's COMMIT time at the coordinator (SubmitUs), and the partition's stamp is the
// greatest SubmitUs delivered so far (stampUs). A payload is, at its delivery,
//
//   - fresh if its age (stamp − SubmitUs) is at most H/2: processed as usual;
//   - late if its age is in (H/2, H]: a TERMINATE then only votes abort, as an ABORTREQ would
//     (an abort never contradicts a vote of this partition: had it delivered the transaction
//     before, the record saying so would still be here), so that no transaction becomes
//     pending here whose votes and abort requests might come after the others forgot it;
//   - expired beyond H: ignored.
//
// A record of transaction t (seen, the broadcast's delivered keys, decided slots) is forgotten
// only once the stamp is more than H past t's SubmitUs: any later copy of t's TERMINATE or
// ABORTREQ has then expired, whatever the record would have said, so forgetting changes no
// decision. Pending transactions keep their records. Votes for transactions not pending here
// are forgotten H after they arrived.
//
// What this costs, and the bound on clocks: a transaction whose TERMINATE reaches a partition
// more than H/2 after its COMMIT aborts; one pending at a partition whose vote, or abort
// request, reaches another partition more than H after its COMMIT (partitions cut off from
// each other that long) stays pending, as if the other partition had lost its majority; a
// replica more than H behind its group can no longer catch up from the others' decided slots
// (state transfer is not implemented). Coordinators' clocks must agree to well within H/2 for
// transactions to commit; safety does not depend on clocks. The default H (60 s) is twelve
// vote timeouts.

// admission is how a TERMINATE or ABORTREQ is treated at delivery.
type admission uint8

const (
	fresh admission = iota
	late
	expired
)

// admit classifies a payload submitted at submitUs by its age at delivery, and advances the
// partition's stamp.
func (r *Replica) admit(submitUs int64) admission {
	age := r.stampUs - submitUs
	r.stampUs = max(r.stampUs, submitUs)
	switch {
	case age > r.cfg.gcHorizonUs:
		return expired
	case age > r.cfg.gcHorizonUs/2:
		return late
	}
	return fresh
}

// stampOf is the stamp a delivered payload's key is remembered with: its submission time for a
// TERMINATE or ABORTREQ (the key may be forgotten once every copy of it has expired), the
// partition's stamp for the others (their duplicates are harmless: a FINAL of a transaction not
// pending, a tick below DC, a snapshot decision or hold of an earlier round are ignored).
func (r *Replica) stampOf(p Payload) int64 {
	switch p := p.(type) {
	case *Terminate:
		return max(p.SubmitUs, r.stampUs)
	case *AbortReq:
		return max(p.SubmitUs, r.stampUs)
	}
	return r.stampUs
}

// logKeep bounds the completion log (log): once it holds 2·logKeep entries the oldest logKeep
// are dropped. Only tests and introspection read it.
const logKeep = 1 << 12

func (r *Replica) appendLog(id txn.ID) {
	if len(r.log) >= 2*logKeep {
		r.log = slices.Delete(r.log, 0, logKeep)
		r.logBase += logKeep
	}
	r.log = append(r.log, id)
}

// collect forgets, every H/4, the records of transactions whose copies have all expired: seen
// entries, votes of transactions not pending, the broadcast's delivered keys and decided slots.
func (r *Replica) collect(now int64) {
	h := r.cfg.gcHorizonUs
	if now-r.gcUs < h/4 {
		return
	}
	r.gcUs = now
	floor := r.stampUs - h
	pending := make(map[txn.ID]bool, len(r.pending))
	for _, p := range r.pending {
		pending[p.t.Tx] = true
	}
	for id, s := range r.seen {
		if s.submitUs < floor && s.completed && !pending[id] {
			delete(r.seen, id)
		}
	}
	for id, at := range r.voteUs {
		if now-at > h && !pending[id] {
			delete(r.votes, id)
			delete(r.voteUs, id)
		}
	}
	r.ab.collect(floor)
}

// Footprint counts the records a replica holds about transactions and its broadcast: what
// garbage collection bounds (tests, monitoring).
type Footprint struct {
	Seen, Votes, Delivered, Slots, Log int
}

// Footprint returns the replica's current record counts.
func (r *Replica) Footprint() Footprint {
	return Footprint{Seen: len(r.seen), Votes: len(r.votes), Delivered: len(r.ab.done), Slots: len(r.ab.slots), Log: len(r.log)}
}
