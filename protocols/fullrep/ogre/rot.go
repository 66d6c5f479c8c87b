package ogre

import (
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// rot is a replica's RoT-Storage (spec §2.4, Alg. 8): it applies committed transactions to the
// replica's multi-version store only once every transaction they depend on is applied there —
// the writer of each version they read (wr), the writer of each version they overwrite (ww) and
// every committed reader of those versions (rw) — so the applied set is always closed under
// dependencies and every store position is a serializable snapshot. Transactions that arrive
// early wait in a buffer, indexed by the keys they touch; applying a transaction re-checks only
// the waiters of its keys. The store's positions are the RoT timestamps, and a ReadSnapshot at
// the store's latest position reads a consistent snapshot (Alg. 9).
//
// Without dependency tracking (ogre-basic) only the ww order is kept: each key's versions are
// installed in version order, which is what the checker needs, and nothing more.
type rot struct {
	store    *store.Store
	nowUs    func() int64
	tracking bool
	skipDeps bool // unsafe: ignore read-from and read-before dependencies (tests only)

	ver         map[string]uint64              // newest applied version of each key
	writer      map[string]txn.ID              // its writer
	histReaders map[string]map[txn.ID]struct{} // applied readers of each key's newest version
	buffered    map[txn.ID]*waiter
	waiters     map[string][]*waiter // buffered transactions by the keys they touch

	stats bufferStats
}

// waiter is a committed transaction whose dependencies are not all applied yet.
type waiter struct {
	d       *Decision
	sinceUs int64
}

// bufferStats counts how often committed transactions had to wait in the buffer (spec E4).
type bufferStats struct {
	ingested, everBuffered int
	bufferedUs             int64 // total waiting time of the buffered ones, on the replica's clock
}

func newRoT(env protocol.Env, tracking, skipDeps bool) *rot {
	return &rot{store: env.Store(), nowUs: env.NowUs, tracking: tracking, skipDeps: skipDeps, ver: map[string]uint64{}, writer: map[string]txn.ID{},
		histReaders: map[string]map[txn.ID]struct{}{}, buffered: map[txn.ID]*waiter{}, waiters: map[string][]*waiter{}}
}

// RoTBufferStats reports how many committed transactions the RoT-Storage received, how many of
// them could not be applied on arrival and waited in its buffer, and how long those waited in
// all (µs, on the replica's clock; a transaction still waiting counts up to now).
func (r *Replica) RoTBufferStats() (ingested, everBuffered int, bufferedUs int64) {
	s, now := r.rot.stats, r.env.NowUs()
	for _, w := range r.rot.buffered {
		s.bufferedUs += now - w.sinceUs
	}
	return s.ingested, s.everBuffered, s.bufferedUs
}

// ingest receives a committed transaction: it is applied at once if its dependencies are, and
// buffered otherwise; every buffered transaction it unblocks is applied after it.
func (r *rot) ingest(d *Decision) {
	r.stats.ingested++
	if !r.ready(d) {
		w := &waiter{d: d, sinceUs: r.nowUs()}
		r.buffered[d.Txn.ID] = w
		r.stats.everBuffered++
		for _, k := range keysOf(d.Txn) {
			r.waiters[k] = append(r.waiters[k], w)
		}
		return
	}
	touched := r.apply(d)
	for len(touched) > 0 {
		k := touched[0]
		touched = touched[1:]
		var still []*waiter
		for _, w := range r.waiters[k] {
			switch {
			case r.buffered[w.d.Txn.ID] != w:
				// applied since it was indexed here
			case r.ready(w.d):
				delete(r.buffered, w.d.Txn.ID)
				r.stats.bufferedUs += r.nowUs() - w.sinceUs
				touched = append(touched, r.apply(w.d)...)
			default:
				still = append(still, w)
			}
		}
		if len(still) == 0 {
			delete(r.waiters, k)
		} else {
			r.waiters[k] = still
		}
	}
}

// ready reports whether every dependency of d is applied: the versions it read are the newest,
// the versions it overwrites are the newest, and their readers are all applied (A3: ⊆).
func (r *rot) ready(d *Decision) bool {
	deps := r.tracking && !r.skipDeps
	if deps {
		for _, rd := range d.Txn.Reads {
			if r.writer[rd.Key] != rd.Version {
				return false
			}
		}
	}
	for i, w := range d.Txn.Writes {
		if r.ver[w.Key] != d.Pred[i] {
			return false
		}
		if !deps {
			continue
		}
		readers := r.histReaders[w.Key]
		for _, dep := range d.RBDeps[i] {
			if _, ok := readers[dep]; !ok {
				return false
			}
		}
	}
	return true
}

// apply installs d at the store's next position and returns the keys it touched. Its reads of
// keys it does not write join those keys' readers (A2); its writes start their keys' new
// versions with no readers.
func (r *rot) apply(d *Decision) []string {
	t := d.Txn
	r.store.Apply(t.ID, t.Writes)
	if r.tracking {
		for _, rd := range t.Reads {
			if slices.ContainsFunc(t.Writes, func(w txn.Write) bool { return w.Key == rd.Key }) {
				continue
			}
			set := r.histReaders[rd.Key]
			if set == nil {
				set = map[txn.ID]struct{}{}
				r.histReaders[rd.Key] = set
			}
			set[t.ID] = struct{}{}
		}
	}
	for i, w := range t.Writes {
		delete(r.histReaders, w.Key)
		r.ver[w.Key], r.writer[w.Key] = d.Pred[i]+1, t.ID
	}
	return keysOf(t)
}

// keysOf lists the keys t reads or writes.
func keysOf(t *txn.Txn) []string {
	keys := make([]string, 0, len(t.Reads)+len(t.Writes))
	for _, rd := range t.Reads {
		keys = append(keys, rd.Key)
	}
	for _, w := range t.Writes {
		keys = append(keys, w.Key)
	}
	return keys
}
