package ogre

import (
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// rot is a RoT-Storage (spec §2.4, Alg. 8): it applies committed transactions only once every
// transaction they depend on is applied there — the writer of each version they read (wr), the
// writer of each version they overwrite (ww) and every committed reader of those versions (rw) —
// so the applied set is always closed under dependencies and every RoT timestamp is a
// serializable snapshot. Transactions that arrive early wait in a buffer, indexed by the keys
// they touch; applying a transaction re-checks only the waiters of its keys.
//
// A serving RoT-Storage keeps each key's versions in a chain, newest first, tagged with the RoT
// timestamp of the transaction that wrote them, and answers read-only transactions at its stable
// timestamp (Alg. 9), a chunk of keys per input (see reads). Garbage collection (spec §8 [REC])
// drops every version no snapshot can read any more: per key, the versions older than the
// newest one at or below the oldest timestamp still pinned — by a read-only transaction in
// flight, or else the stable timestamp. The replica's protocol.Env store receives the same
// transactions in the same order with their values dropped: it is the record of the version
// order that the checker reads, and it holds ids only, never the data.
//
// Without dependency tracking (ogre-basic, and a replica whose RoT-Storage runs on separate
// unit nodes) only the ww order is kept: each key's versions are recorded in version order,
// which is what the checker needs, and nothing is served.
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

	// Serving (nil chains: the RoT-Storage serves no reads).
	chains   map[string]*vnode   // each key's retained versions, newest first
	stableTS uint64              // RoT timestamp of the last applied transaction (StableTS)
	multi    map[string]struct{} // keys holding more than one version: what GC looks at
	retained int                 // versions held in chains
	reads    []*roRead           // read-only transactions in flight, oldest first
	chunk    int                 // keys a read-only transaction reads per input
	armed    bool                // a timerRead is set for the next chunk

	stats bufferStats
}

// vnode is one retained version of a key (spec §2.4 VersionNode).
type vnode struct {
	value  []byte
	writer txn.ID
	ts     uint64
	prev   *vnode
}

// roRead is a read-only transaction in flight: it reads at readTS, which pins every version it
// may still need against garbage collection until its last key is read.
type roRead struct {
	req    protocol.Request
	readTS uint64
	out    []protocol.SnapshotRead
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

// newRoT returns an empty RoT-Storage over env's store; chunk > 0 makes it serve read-only
// transactions, chunk keys per input.
func newRoT(env protocol.Env, tracking, skipDeps bool, chunk int) *rot {
	r := &rot{store: env.Store(), nowUs: env.NowUs, tracking: tracking, skipDeps: skipDeps, ver: map[string]uint64{}, writer: map[string]txn.ID{},
		histReaders: map[string]map[txn.ID]struct{}{}, buffered: map[txn.ID]*waiter{}, waiters: map[string][]*waiter{}, chunk: chunk}
	if chunk > 0 {
		r.chains, r.multi = map[string]*vnode{}, map[string]struct{}{}
	}
	return r
}

// RoTBufferStats reports how many committed transactions the RoT-Storage received, how many of
// them could not be applied on arrival and waited in its buffer, and how long those waited in
// all (µs, on the replica's clock; a transaction still waiting counts up to now). A replica
// whose RoT-Storage runs on unit nodes reports nothing: its units do.
func (r *Replica) RoTBufferStats() (ingested, everBuffered int, bufferedUs int64) {
	if len(r.units) > 0 {
		return 0, 0, 0
	}
	return r.rot.bufferStats()
}

// bufferStats is RoTBufferStats of this RoT-Storage.
func (r *rot) bufferStats() (ingested, everBuffered int, bufferedUs int64) {
	s, now := r.stats, r.nowUs()
	for _, w := range r.buffered {
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

// apply installs d at the next RoT timestamp (and records its writers in the store) and returns
// the keys it touched. Its reads of
// keys it does not write join those keys' readers (A2); its writes start their keys' new
// versions with no readers.
func (r *rot) apply(d *Decision) []string {
	t := d.Txn
	ids := make([]txn.Write, len(t.Writes))
	for i, w := range t.Writes {
		ids[i].Key = w.Key
	}
	r.store.Apply(t.ID, ids)
	if r.chains != nil {
		r.stableTS++
		for _, w := range t.Writes {
			prev := r.chains[w.Key]
			r.chains[w.Key] = &vnode{value: w.Value, writer: t.ID, ts: r.stableTS, prev: prev}
			r.retained++
			if prev != nil {
				r.multi[w.Key] = struct{}{}
			}
		}
	}
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

// serve starts the read-only transaction req at the stable timestamp (Alg. 9) and reads its
// first chunk of keys, unless older ones are in flight: the chunks are read in order, one per
// input, each later one at a timerRead (onReadTimer).
func (r *rot) serve(env protocol.Env, req protocol.Request) {
	r.reads = append(r.reads, &roRead{req: req, readTS: r.stableTS, out: make([]protocol.SnapshotRead, 0, len(req.Keys))})
	if len(r.reads) == 1 {
		r.step(env)
	}
}

// onReadTimer reads the next chunk of the read-only transactions in flight.
func (r *rot) onReadTimer(env protocol.Env) {
	r.armed = false
	r.step(env)
}

// step reads the next chunk of keys of the oldest read-only transaction in flight and answers it
// once it has read every key; while any is still in flight, a timerRead schedules the next chunk
// as an input of its own, after the inputs already waiting (committed transactions among them).
func (r *rot) step(env protocol.Env) {
	if len(r.reads) == 0 {
		return
	}
	ro := r.reads[0]
	for _, k := range ro.req.Keys[len(ro.out):min(len(ro.out)+r.chunk, len(ro.req.Keys))] {
		v := r.chains[k]
		for v != nil && v.ts > ro.readTS {
			v = v.prev
		}
		read := protocol.SnapshotRead{Key: k}
		if v != nil {
			read.Value, read.Version = v.value, v.writer
		}
		ro.out = append(ro.out, read)
	}
	if len(ro.out) == len(ro.req.Keys) {
		env.Reply(protocol.Reply{Client: ro.req.Client, Seq: ro.req.Seq, Snapshot: ro.out})
		r.reads = r.reads[1:]
	}
	if len(r.reads) > 0 && !r.armed {
		r.armed = true
		env.SetTimer(0, timerRead)
	}
}

// collect drops the versions no snapshot can read any more: for each key, those older than its
// newest version at or below the oldest pinned timestamp (the oldest read-only transaction in
// flight, or the stable timestamp).
func (r *rot) collect() {
	pin := r.stableTS
	for _, ro := range r.reads {
		pin = min(pin, ro.readTS)
	}
	for k := range r.multi {
		v := r.chains[k]
		for v.ts > pin && v.prev != nil {
			v = v.prev
		}
		for old := v.prev; old != nil; old = old.prev {
			r.retained--
		}
		v.prev = nil
		if r.chains[k] == v {
			delete(r.multi, k)
		}
	}
}
