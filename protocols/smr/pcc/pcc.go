// Package pcc is the execution and certification layer shared by Meridian's state-machine
// replication protocols (ALVIN, Multi-Paxos, EPaxos): ALVIN's Parallel Concurrency Control,
// spec alvin.md §4, which the spec's §5 makes the common ground of all three so that they differ
// only in how they order transactions.
//
// A transaction executes optimistically at its origin replica against a multi-version snapshot
// fixed when it begins (§4.2), buffers its writes in the client, and submits its read and write
// sets for ordering (§4.3). Each replica then validates and applies the delivered transactions in
// the order its ordering layer hands them over (§4.4): a transaction commits if nothing it read
// was overwritten before its position, and the origin answers its client.
//
// Validation compares writer ids, which are Meridian's per-key version names (txn package), not
// node-local timestamps, so every replica that delivers the same transactions in an order that
// agrees on conflicting pairs reaches the same outcomes. The spec's parallel validation is a
// performance property of a multi-threaded replica; a sans-IO replica is single-threaded, and
// delivering in order is what the spec's workers compute.
package pcc

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// MaxSnapshots bounds how many transactions' snapshots a replica remembers between their first
// read and their commit request. A client that begins transactions and never commits them (it
// crashed, or gave up) would otherwise grow the map forever; past the bound the oldest snapshot
// is forgotten, and a later read of that transaction starts a new snapshot. Its reads may then be
// mutually inconsistent, but validation at delivery still refuses to commit it if anything it
// read was overwritten, so no committed transaction is affected.
const MaxSnapshots = 1 << 16

// ReadOnly says how a read-only transaction (an empty write set) commits.
type ReadOnly uint8

const (
	// ReadOnlyOrdered sends read-only transactions through the ordering layer and validates
	// them like updates: ALVIN and EPaxos under serializability (spec §1.2 "SR").
	ReadOnlyOrdered ReadOnly = iota
	// ReadOnlyLocal commits read-only transactions at once at their origin: their reads all
	// came from one snapshot. Under Multi-Paxos every snapshot is a prefix of the total order, so
	// this is serializable (§5.1); under ALVIN it is the weaker "EUS" mode (§1.2, §4.5), in which
	// two read-only transactions may disagree on the order of non-conflicting updates.
	ReadOnlyLocal
)

// Executor is one replica's P-CC state: the snapshots of the transactions executing here and
// the clients waiting for the outcome of the transactions that originated here. It is not safe
// for concurrent use; its replica's handlers call it.
type Executor struct {
	env      protocol.Env
	name     string
	readOnly ReadOnly
	// snapshots maps a transaction to the store position its first read fixed (§4.2 BEGIN);
	// snapshotOrder lists them oldest first, for the MaxSnapshots bound.
	snapshots     map[txn.ID]uint64
	snapshotOrder []txn.ID
	// waiting maps a transaction submitted here to the commit request its client waits on.
	waiting map[txn.ID]protocol.Request
}

// New returns the executor of the replica that owns env; name prefixes the errors its clients
// receive.
func New(env protocol.Env, name string, readOnly ReadOnly) *Executor {
	return &Executor{
		env:       env,
		name:      name,
		readOnly:  readOnly,
		snapshots: make(map[txn.ID]uint64),
		waiting:   make(map[txn.ID]protocol.Request),
	}
}

// Admit serves a client request. It answers reads (a Get at its transaction's snapshot, a
// ReadSnapshot at the replica's latest position) and malformed requests, commits a read-only
// transaction at once in ReadOnlyLocal mode, and otherwise returns the transaction the replica
// must now order, with true. A transaction already waiting here is not admitted twice.
func (e *Executor) Admit(req protocol.Request) (*txn.Txn, bool) {
	switch req.Kind {
	case protocol.Get:
		v := e.env.Store().GetAt(req.Key, e.snapshot(req.TxnID))
		e.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Value: v.Value, Version: v.Writer})
		return nil, false
	case protocol.ReadSnapshot:
		protocol.ServeLocalRead(e.env, req)
		return nil, false
	}
	if !protocol.AdmitCommit(e.env, req, e.name) {
		return nil, false
	}
	t := req.Txn
	e.forgetSnapshot(t.ID)
	if len(t.Writes) == 0 && e.readOnly == ReadOnlyLocal {
		e.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Status: txn.Committed})
		return nil, false
	}
	if _, dup := e.waiting[t.ID]; dup {
		e.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: e.name + ": transaction " + t.ID.String() + " is already being committed"})
		return nil, false
	}
	e.waiting[t.ID] = req
	return t, true
}

// Deliver validates t and, if it is valid, installs its writes (§4.4); if t's client waits here,
// it gets the outcome. A batch (txn.NewBatch) is its members delivered so, one after the other
// in batch order: each is validated against what the members before it installed, and commits
// or aborts on its own. It reports whether t (every member of a batch) committed. The ordering
// layer calls Deliver exactly once per transaction or batch per replica, in an order that
// agrees, on every replica, on every pair of conflicting ones.
func (e *Executor) Deliver(t *txn.Txn) (committed bool) {
	committed = true
	for _, m := range txn.Unbatch(t) {
		committed = e.deliverOne(m) && committed
	}
	return committed
}

// deliverOne validates and applies one transaction and answers its client if it waits here.
func (e *Executor) deliverOne(t *txn.Txn) (committed bool) {
	st := e.env.Store()
	committed = !st.Stale(t.Reads)
	if committed && len(t.Writes) > 0 {
		st.Apply(t.ID, t.Writes)
	}
	if req, ok := e.waiting[t.ID]; ok {
		delete(e.waiting, t.ID)
		r := protocol.Reply{Client: req.Client, Seq: req.Seq, Status: txn.Committed}
		if !committed {
			r.Status, r.Reason = txn.Aborted, txn.ReasonStaleRead
		}
		e.env.Reply(r)
	}
	return committed
}

// Abandon answers the clients waiting here for t (for each member of a batch), if any, with an
// abort for reason: the ordering layer decided that t will never be delivered (ALVIN's NO-OP,
// spec alvin.md §3.7; EPaxos recovery replacing its instance by a no-op), so none of its writes
// is ever installed. A nil t (a replica that never held the payload, so no client of it waits
// here) abandons nothing.
func (e *Executor) Abandon(t *txn.Txn, reason txn.AbortReason) {
	if t == nil {
		return
	}
	for _, m := range txn.Unbatch(t) {
		if req, ok := e.waiting[m.ID]; ok {
			delete(e.waiting, m.ID)
			e.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Status: txn.Aborted, Reason: reason})
		}
	}
}

// Waiting reports how many transactions submitted here wait for their delivery.
func (e *Executor) Waiting() int { return len(e.waiting) }

// snapshot returns the store position transaction id reads at, fixing it at the latest
// position on the transaction's first read. Reads outside a transaction (id None) read the
// latest position.
func (e *Executor) snapshot(id txn.ID) uint64 {
	st := e.env.Store()
	if id == txn.None {
		return st.Seq()
	}
	if at, ok := e.snapshots[id]; ok {
		return at
	}
	if len(e.snapshotOrder) >= MaxSnapshots {
		e.compactSnapshotOrder()
		if len(e.snapshotOrder) >= MaxSnapshots {
			delete(e.snapshots, e.snapshotOrder[0])
			e.snapshotOrder = e.snapshotOrder[1:]
		}
	}
	at := st.Seq()
	e.snapshots[id] = at
	e.snapshotOrder = append(e.snapshotOrder, id)
	return at
}

// forgetSnapshot drops id's snapshot once its commit request arrives. The id stays in
// snapshotOrder until the next compaction.
func (e *Executor) forgetSnapshot(id txn.ID) { delete(e.snapshots, id) }

// compactSnapshotOrder drops the ids whose snapshots were forgotten, keeping the order.
func (e *Executor) compactSnapshotOrder() {
	live := e.snapshotOrder[:0]
	for _, id := range e.snapshotOrder {
		if _, ok := e.snapshots[id]; ok {
			live = append(live, id)
		}
	}
	clear(e.snapshotOrder[len(live):])
	e.snapshotOrder = live
}
