package twopc

import (
	"fmt"
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// This file holds the coordinator's lock table (spec §5.2 steps 1–3, GAP-B2) and the
// transaction records every replica keeps: the outcome of every transaction it decided, aborted
// or applied from the log in the last gc_after, so that late, duplicated or reordered requests,
// and requests that reach a later coordinator, are answered consistently.

// txnState is where a transaction stands at this replica.
type txnState uint8

const (
	active     txnState = iota // reading under shared locks
	committing                 // commit requested: acquiring exclusive locks
	deciding                   // commit decided and in the log, waiting for a majority
	committed                  // chosen and applied here; locks released
	aborted                    // aborted; locks released
)

// tctx is a replica's record of one transaction. Finished ones are kept (without their locks
// and data) so that late or duplicated requests are answered consistently.
type tctx struct {
	id       txn.ID
	from     int // datacenter of the replica forwarding its requests
	st       txnState
	reason   txn.AbortReason
	t        *txn.Txn          // the commit request
	next     int               // exclusive locks of t.Writes acquired so far
	held     map[string]bool   // locked keys: exclusive?
	waiting  []string          // keys whose queue holds a request of this transaction
	readRids map[string]uint64 // Gets waiting for a shared lock: key → request number
	notify   []int             // further datacenters to tell the outcome
	index    uint64            // deciding: its log position
}

type lockReq struct {
	id   txn.ID
	excl bool
}

// lock is one key's lock: its holders (shared or one exclusive) and a FIFO queue of waiters in
// which upgrades (a shared holder asking for exclusive) go ahead of other requests.
type lock struct {
	holders map[txn.ID]bool // holder → exclusive?
	queue   []lockReq
}

type grant struct {
	id  txn.ID
	key string
}

// record is a finished transaction the coordinator may forget from atUs on.
type record struct {
	id   txn.ID
	atUs int64
}

// coordinator is the lock table, used while this replica coordinates, and the transaction
// records, kept at every replica whatever its role.
type coordinator struct {
	r        *Replica
	txns     map[txn.ID]*tctx
	locks    map[string]*lock
	ready    []grant // granted lock requests not yet acted on
	finished []record
	forgot   map[txn.ClientID]uint32 // per client: highest sequence number forgotten
	// term is the ballot of the term the lock table belongs to (0: none, not coordinating).
	term uint64
	// decidingAt maps the log position of every deciding transaction to its id.
	decidingAt map[uint64]txn.ID
}

func newCoordinator(r *Replica) *coordinator {
	return &coordinator{r: r, txns: map[txn.ID]*tctx{}, locks: map[string]*lock{}, forgot: map[txn.ClientID]uint32{},
		decidingAt: map[uint64]txn.ID{}}
}

func (c *coordinator) ctx(id txn.ID, from int) *tctx {
	t, ok := c.txns[id]
	if !ok {
		t = &tctx{id: id, from: from, held: map[string]bool{}, readRids: map[string]uint64{}}
		c.txns[id] = t
	}
	return t
}

func (c *coordinator) isFinished(t *tctx) bool { return t.st == committed || t.st == aborted }

// forgotten reports whether id is untracked and at or below its client's watermark.
func (c *coordinator) forgotten(id txn.ID) bool {
	if _, ok := c.txns[id]; ok {
		return false
	}
	w, ok := c.forgot[id.Client()]
	return ok && id.Seq() <= w
}

// finish schedules t's record to be forgotten gc_after from now.
func (c *coordinator) finish(t *tctx) {
	c.finished = append(c.finished, record{id: t.id, atUs: c.r.env.NowUs() + c.r.gcAfterUs})
}

// collect forgets the transactions finished more than gc_after ago.
func (c *coordinator) collect() {
	now := c.r.env.NowUs()
	for len(c.finished) > 0 && now >= c.finished[0].atUs {
		id := c.finished[0].id
		c.finished = c.finished[1:]
		delete(c.txns, id)
		if cl := id.Client(); id.Seq() > c.forgot[cl] {
			c.forgot[cl] = id.Seq()
		}
	}
}

// onRead takes a shared lock for a Get and answers it once granted.
func (c *coordinator) onRead(m *ReadReq) {
	if c.forgotten(m.Txn) {
		c.r.send(m.From, &ReadResp{Rid: m.Rid, Txn: m.Txn, Aborted: true, Reason: ReasonForgotten})
		return
	}
	t, ok := c.txns[m.Txn]
	switch {
	case ok && t.st == aborted:
		c.r.send(m.From, &ReadResp{Rid: m.Rid, Txn: m.Txn, Aborted: true, Reason: t.reason})
		return
	case ok && t.st != active:
		return // a stale copy from before the commit request: nobody waits for it
	}
	t = c.ctx(m.Txn, m.From)
	if _, held := t.held[m.Key]; held {
		c.sendRead(t, m.Key, m.Rid)
		return
	}
	t.readRids[m.Key] = m.Rid
	if slices.Contains(t.waiting, m.Key) {
		return
	}
	if c.acquire(t, m.Key, false) == granted {
		delete(t.readRids, m.Key)
		c.sendRead(t, m.Key, m.Rid)
	}
}

func (c *coordinator) sendRead(t *tctx, key string, rid uint64) {
	v := c.r.env.Store().Get(key)
	c.r.send(t.from, &ReadResp{Rid: rid, Txn: t.id, Value: v.Value, Version: v.Writer})
}

// onCommit starts the commit of a transaction: check its read locks, then take its write locks.
func (c *coordinator) onCommit(m *CommitReq) {
	if c.forgotten(m.Txn.ID) {
		c.r.send(m.From, &Outcome{Txn: m.Txn.ID, Status: txn.Unknown})
		return
	}
	t, ok := c.txns[m.Txn.ID]
	if ok {
		switch t.st {
		case aborted, committed:
			c.sendOutcome(t, m.From)
			return
		case deciding:
			c.addNotify(t, m.From)
			return
		case committing:
			return // duplicate
		}
	}
	t = c.ctx(m.Txn.ID, m.From)
	t.t = m.Txn
	c.addNotify(t, m.From)
	if len(t.waiting) > 0 {
		c.abort(t, ReasonLockLost)
		return
	}
	st := c.r.env.Store()
	for _, rd := range m.Txn.Reads {
		if _, held := t.held[rd.Key]; !held {
			c.abort(t, ReasonLockLost)
			return
		}
		if st.Get(rd.Key).Writer != rd.Version {
			c.abort(t, txn.ReasonStaleRead)
			return
		}
	}
	t.st = committing
	c.advance(t)
}

// onAbort aborts a transaction unless its commit is already decided, and answers with the
// outcome (once known). An unknown transaction is recorded as aborted, unless forgotten.
func (c *coordinator) onAbort(m *AbortReq) {
	if c.forgotten(m.Txn) {
		c.r.send(m.From, &Outcome{Txn: m.Txn, Status: txn.Unknown})
		return
	}
	t := c.ctx(m.Txn, m.From)
	c.addNotify(t, m.From)
	switch t.st {
	case active, committing:
		c.abort(t, ReasonTimeout)
	case aborted, committed:
		c.sendOutcome(t, m.From)
	}
}

func (c *coordinator) addNotify(t *tctx, dc int) {
	if !slices.Contains(t.notify, dc) {
		t.notify = append(t.notify, dc)
	}
}

func (c *coordinator) sendOutcome(t *tctx, dc int) {
	status := txn.Committed
	if t.st == aborted {
		status = txn.Aborted
	}
	c.r.send(dc, &Outcome{Txn: t.id, Status: status, Reason: t.reason})
}

type acquired uint8

const (
	granted acquired = iota
	waits
	deadlocked
)

// acquire requests key for t, shared or exclusive. If the request must wait, it is queued and
// the wait-for graph searched from t: if t closes a cycle it is aborted at once (GAP-B2).
func (c *coordinator) acquire(t *tctx, key string, excl bool) acquired {
	l := c.locks[key]
	if l == nil {
		l = &lock{holders: map[txn.ID]bool{}}
		c.locks[key] = l
	}
	cur, holds := l.holders[t.id]
	if holds && (cur || !excl) {
		return granted
	}
	if compatible(l, t.id, excl) && (holds || len(l.queue) == 0) {
		l.holders[t.id] = excl || cur
		t.held[key] = excl || cur
		return granted
	}
	req := lockReq{id: t.id, excl: excl}
	if holds { // an upgrade goes ahead of every waiter that is not an upgrade
		i := 0
		for i < len(l.queue) {
			if _, h := l.holders[l.queue[i].id]; !h {
				break
			}
			i++
		}
		l.queue = slices.Insert(l.queue, i, req)
	} else {
		l.queue = append(l.queue, req)
	}
	t.waiting = append(t.waiting, key)
	if c.closesCycle(t.id) {
		c.abort(t, ReasonDeadlock)
		return deadlocked
	}
	return waits
}

// compatible reports whether id may hold l in the given mode alongside its other holders.
func compatible(l *lock, id txn.ID, excl bool) bool {
	for h, hx := range l.holders {
		if h != id && (excl || hx) {
			return false
		}
	}
	return true
}

// waitsFor calls f for every transaction id waits for: incompatible holders of, and
// incompatible requests queued ahead of it for, each key it waits on.
func (c *coordinator) waitsFor(id txn.ID, f func(txn.ID)) {
	t := c.txns[id]
	if t == nil {
		return
	}
	for _, key := range t.waiting {
		l := c.locks[key]
		if l == nil {
			continue
		}
		pos := slices.IndexFunc(l.queue, func(q lockReq) bool { return q.id == id })
		if pos < 0 {
			continue
		}
		excl := l.queue[pos].excl
		for h, hx := range l.holders {
			if h != id && (excl || hx) {
				f(h)
			}
		}
		for _, q := range l.queue[:pos] {
			if q.id != id && (excl || q.excl) {
				f(q.id)
			}
		}
	}
}

// closesCycle reports whether start reaches itself in the wait-for graph. New edges only ever
// leave or enter the transaction that just started waiting, so checking from it on every wait
// keeps the graph acyclic.
func (c *coordinator) closesCycle(start txn.ID) bool {
	seen := map[txn.ID]bool{}
	stack := []txn.ID{start}
	found := false
	for len(stack) > 0 && !found {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c.waitsFor(x, func(y txn.ID) {
			if y == start {
				found = true
			} else if !seen[y] {
				seen[y] = true
				stack = append(stack, y)
			}
		})
	}
	return found
}

// release drops all of t's locks and queued requests and grants what that unblocks.
func (c *coordinator) release(t *tctx) {
	affected := slices.Sorted(maps.Keys(t.held))
	for _, key := range affected {
		if l := c.locks[key]; l != nil {
			delete(l.holders, t.id)
		}
	}
	for _, key := range t.waiting {
		if l := c.locks[key]; l != nil {
			l.queue = slices.DeleteFunc(l.queue, func(q lockReq) bool { return q.id == t.id })
		}
		affected = append(affected, key)
	}
	t.held, t.waiting, t.readRids = nil, nil, nil
	slices.Sort(affected)
	for _, key := range slices.Compact(affected) {
		c.grantWaiters(key)
	}
}

// grantWaiters grants key's queued requests in FIFO order while they are compatible.
func (c *coordinator) grantWaiters(key string) {
	l := c.locks[key]
	if l == nil {
		return
	}
	for len(l.queue) > 0 {
		q := l.queue[0]
		if !compatible(l, q.id, q.excl) {
			break
		}
		l.queue = l.queue[1:]
		mode := q.excl || l.holders[q.id]
		l.holders[q.id] = mode
		if t := c.txns[q.id]; t != nil && t.held != nil {
			t.held[key] = mode
			t.waiting = slices.DeleteFunc(t.waiting, func(k string) bool { return k == key })
		}
		c.ready = append(c.ready, grant{id: q.id, key: key})
	}
	if len(l.holders) == 0 && len(l.queue) == 0 {
		delete(c.locks, key)
	}
}

// onGranted continues whatever waited for a lock: a Get is answered, a commit takes its next
// lock.
func (c *coordinator) onGranted(g grant) {
	t := c.txns[g.id]
	if t == nil || c.isFinished(t) {
		return
	}
	if rid, ok := t.readRids[g.key]; ok {
		delete(t.readRids, g.key)
		c.sendRead(t, g.key, rid)
	}
	if t.st == committing {
		c.advance(t)
	}
}

// abort aborts t (never once its commit is decided), releases its locks and tells whoever waits.
func (c *coordinator) abort(t *tctx, reason txn.AbortReason) {
	if t.st != active && t.st != committing {
		return
	}
	rids := t.readRids
	t.st, t.reason = aborted, reason
	c.release(t)
	t.t = nil
	c.finish(t)
	for _, key := range slices.Sorted(maps.Keys(rids)) {
		c.r.send(t.from, &ReadResp{Rid: rids[key], Txn: t.id, Aborted: true, Reason: reason})
	}
	for _, dc := range t.notify {
		c.sendOutcome(t, dc)
	}
}

// advance takes t's exclusive locks one at a time and decides commit once it holds them all.
func (c *coordinator) advance(t *tctx) {
	for t.next < len(t.t.Writes) {
		if c.acquire(t, t.t.Writes[t.next].Key, true) != granted {
			return
		}
		t.next++
	}
	c.decide(t)
}

// decide appends t's commit to the log (phase 2; see Replica.propose).
func (c *coordinator) decide(t *tctx) {
	t.st = deciding
	t.index = c.r.propose(&txn.Txn{ID: t.id, Writes: t.t.Writes})
	c.decidingAt[t.index] = t.id
	c.r.advanceCommit()
}

// onApplied installs log entry idx, chosen and applied in log order at every replica, and
// brings the records up to date: the transaction is committed (its locks released and the
// waiting replicas told, if this replica decided it), and a transaction this replica had
// decided for the same position lost it to a new coordinator's recovery and is aborted.
func (c *coordinator) onApplied(idx uint64, t *txn.Txn) {
	if len(t.Writes) > 0 {
		c.r.env.Store().Apply(t.ID, t.Writes)
	}
	if id, ok := c.decidingAt[idx]; ok {
		delete(c.decidingAt, idx)
		if rec := c.txns[id]; id != t.ID && rec != nil && rec.st == deciding {
			c.lose(rec)
		}
	}
	if t.ID == txn.None {
		return
	}
	rec, ok := c.txns[t.ID]
	switch {
	case !ok:
		if c.forgotten(t.ID) {
			return
		}
		rec = &tctx{id: t.ID, st: committed}
		c.txns[t.ID] = rec
		c.finish(rec)
	case rec.st == deciding:
		rec.st = committed
		c.release(rec)
		rec.t = nil
		c.finish(rec)
		for _, dc := range rec.notify {
			c.sendOutcome(rec, dc)
		}
	default:
		panic(fmt.Sprintf("2pc-paxos: %s chosen at log position %d but recorded here as %d: two coordinators decided it", t.ID, idx, rec.st))
	}
}

// lose aborts a deciding transaction whose log position went to another value: a new
// coordinator recovered the log without it, so it can never be chosen (see Replica.recover).
func (c *coordinator) lose(t *tctx) {
	delete(c.decidingAt, t.index)
	t.st, t.reason = aborted, ReasonFailover
	t.t = nil
	c.finish(t)
	for _, dc := range t.notify {
		c.sendOutcome(t, dc)
	}
}

// resign ends this replica's term as coordinator: every transaction still reading or taking
// its locks is aborted (its locks live in this lock table only), waiting replicas are told, and
// the lock table is dropped. Deciding transactions keep their records until their log position
// is applied (onApplied) or recovered (rebuild).
func (c *coordinator) resign() {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		if t.st == deciding {
			t.held, t.waiting = nil, nil
		}
		if t.st != active && t.st != committing {
			continue
		}
		rids := t.readRids
		t.st, t.reason = aborted, ReasonFailover
		t.held, t.waiting, t.readRids, t.t = nil, nil, nil, nil
		c.finish(t)
		for _, key := range slices.Sorted(maps.Keys(rids)) {
			c.r.send(t.from, &ReadResp{Rid: rids[key], Txn: t.id, Aborted: true, Reason: ReasonFailover})
		}
		for _, dc := range t.notify {
			c.sendOutcome(t, dc)
		}
	}
	c.locks, c.ready, c.term = map[string]*lock{}, nil, 0
}

// rebuild prepares the lock table of a new term whose recovered log (positions up to end, at
// which recovered gives the transaction id) is not a continuation of this replica's own term:
// the old lock table is dropped (resign), and deciding transactions whose position the recovered
// log does not hold for them are aborted.
func (c *coordinator) rebuild(end uint64, recovered func(uint64) txn.ID) {
	c.resign()
	for _, idx := range slices.Sorted(maps.Keys(c.decidingAt)) {
		if t := c.txns[c.decidingAt[idx]]; t != nil && (idx > end || recovered(idx) != t.id) {
			c.lose(t)
		}
	}
}

// onAck records an acceptor's progress.
