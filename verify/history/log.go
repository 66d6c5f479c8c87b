package history

import (
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Log holds a run's transactions compactly while it records them: every key, datacenter,
// client, abort reason and version read is stored once and referred to by number (keys in a
// txn.Strings table, which holds no pointer per key), and the transactions and their reads and
// writes live in fixed-size chunks, so that recording never copies what it already holds and a
// long run costs 80 bytes per transaction (40 with CheckOnly) plus 8 per operation (a
// []Txn with its own Reads, Writes and key strings costs several times that). Txn gives a
// transaction back as it was appended. The zero Log is empty and ready to use; it is not safe
// for concurrent use.
type Log struct {
	// CheckOnly, set before the first Append, keeps only what package checker reads: a
	// transaction's ID, DC, Status, Reads, Writes, Snapshot and Rounds. Txn then gives zero
	// Client, Reason, StartUs, EndUs, Attempt and First. A run that does not keep its history
	// (bench without --history) saves 40 bytes a transaction, a third of a TCC run's log.
	CheckOnly bool

	names txn.Strings  // keys, datacenters, clients and abort reasons, by number
	ids   []txn.ID     // interned versions read, by number
	idNum idTable      // version -> number in ids
	txns  [][]logTxn   // chunks of logChunk transactions
	extra [][]logExtra // chunks of logChunk: each transaction's fields CheckOnly drops (unless set)
	ops   [][]logOp    // chunks of logChunk operations: each transaction's reads, then its writes
	nOps  uint64
	n     int
}

// logChunk is the number of transactions (and of operations) in one chunk of a Log.
const logChunk = 1 << 14

// logTxn is one transaction of a Log, as much as the checker reads; strings are numbers in
// Log.names.
type logTxn struct {
	id              txn.ID
	op              uint64 // index of the first operation
	nReads, nWrites uint32
	dc              uint32
	rounds          int32
	status          txn.Status
	snapshot        bool
}

// logExtra is the rest of a transaction of a Log, which Log.CheckOnly drops.
type logExtra struct {
	first          txn.ID
	startUs, endUs int64
	client, reason uint32
	attempt        int32
}

// logOp is one read (key and version) or write (key; version unused) of a Log, as numbers in
// Log.names and Log.ids.
type logOp struct {
	key, version uint32
}

// appendChunked appends e to the chunks, starting a new chunk of logChunk elements when the
// last one is full.
func appendChunked[T any](chunks *[][]T, e T) {
	if n := len(*chunks); n == 0 || len((*chunks)[n-1]) == logChunk {
		*chunks = append(*chunks, make([]T, 0, logChunk))
	}
	last := &(*chunks)[len(*chunks)-1]
	*last = append(*last, e)
}

// Len returns the number of transactions appended.
func (l *Log) Len() int { return l.n }

// internID returns id's number in l.ids, adding it if new.
func (l *Log) internID(id txn.ID) uint32 {
	slot := l.idNum.find(id)
	if slot >= 0 && l.idNum.slots[slot].numPlus != 0 {
		return l.idNum.slots[slot].numPlus - 1
	}
	n := uint32(len(l.ids))
	l.ids = append(l.ids, id)
	if 4*len(l.ids) > 3*len(l.idNum.slots) {
		l.idNum.grow(l.ids)
	} else {
		l.idNum.slots[slot] = idSlot{id: id, numPlus: n + 1}
	}
	return n
}

// idTable finds a version's number in a Log's ids: an open-addressing array of 16-byte slots,
// a power of two at most 3/4 full. A look-up reads one slot, where a map[txn.ID]uint32 reads a
// control word and a slot, most often in two cache lines.
type idTable struct {
	slots []idSlot
}

// idSlot is an empty slot of an idTable (numPlus 0) or version id's number plus 1.
type idSlot struct {
	id      txn.ID
	numPlus uint32
}

// find returns the slot that holds id's number, or the empty slot where it belongs (-1 if the
// table has no slot at all).
func (t *idTable) find(id txn.ID) int {
	if len(t.slots) == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for i := idHash(id) & mask; ; i = (i + 1) & mask {
		if e := &t.slots[i]; e.numPlus == 0 || e.id == id {
			return i
		}
	}
}

// grow doubles the table (or makes the first one) and slots every version of ids in again.
func (t *idTable) grow(ids []txn.ID) {
	t.slots = make([]idSlot, max(2*len(t.slots), 64))
	mask := len(t.slots) - 1
	for n, id := range ids {
		i := idHash(id) & mask
		for t.slots[i].numPlus != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = idSlot{id: id, numPlus: uint32(n) + 1}
	}
}

// idHash spreads a version's bits (a client in the high half, a sequence number in the low one)
// over an int, high bits first (Fibonacci hashing).
func idHash(id txn.ID) int { return int((uint64(id) * 0x9e3779b97f4a7c15) >> 32) }

// addOp appends one operation.
func (l *Log) addOp(key string, version txn.ID) {
	appendChunked(&l.ops, logOp{key: l.names.Intern(key), version: l.internID(version)})
	l.nOps++
}

// Append adds t after the transactions already in l. l keeps no reference to t's slices.
func (l *Log) Append(t Txn) {
	e := logTxn{id: t.ID, op: l.nOps, nReads: uint32(len(t.Reads)), nWrites: uint32(len(t.Writes)),
		dc: l.names.Intern(t.DC), rounds: int32(t.Rounds), status: t.Status, snapshot: t.Snapshot}
	for _, r := range t.Reads {
		l.addOp(r.Key, r.Version)
	}
	for _, k := range t.Writes {
		l.addOp(k, txn.None)
	}
	appendChunked(&l.txns, e)
	if !l.CheckOnly {
		appendChunked(&l.extra, logExtra{first: t.First, startUs: t.StartUs, endUs: t.EndUs, client: l.names.Intern(t.Client),
			reason: l.names.Intern(string(t.Reason)), attempt: int32(t.Attempt)})
	}
	l.n++
}

func (l *Log) op(i uint64) *logOp { return &l.ops[i/logChunk][i%logChunk] }

// Txn returns the i-th transaction appended (from 0), equal to what was appended except that
// empty Reads and Writes are nil. Its slices are new: the caller may keep or change them.
func (l *Log) Txn(i int) Txn { return l.TxnReusing(i, &Txn{}) }

// TxnReusing is Txn with the Reads and Writes in buf's slices (grown as needed, and left in
// buf for the next call), for a caller that reads the transactions one after the other: what
// it returns is valid only until the next call with the same buf.
func (l *Log) TxnReusing(i int, buf *Txn) Txn {
	e := &l.txns[i/logChunk][i%logChunk]
	t := Txn{ID: e.id, DC: l.names.At(e.dc), Rounds: int(e.rounds), Status: e.status, Snapshot: e.snapshot}
	if !l.CheckOnly {
		x := &l.extra[i/logChunk][i%logChunk]
		t.First, t.StartUs, t.EndUs, t.Attempt = x.first, x.startUs, x.endUs, int(x.attempt)
		t.Client, t.Reason = l.names.At(x.client), txn.AbortReason(l.names.At(x.reason))
	}
	op := e.op
	if e.nReads > 0 {
		buf.Reads = buf.Reads[:0]
		for range e.nReads {
			o := l.op(op)
			buf.Reads = append(buf.Reads, txn.Read{Key: l.names.At(o.key), Version: l.ids[o.version]})
			op++
		}
		t.Reads = buf.Reads
	}
	if e.nWrites > 0 {
		buf.Writes = buf.Writes[:0]
		for range e.nWrites {
			buf.Writes = append(buf.Writes, l.names.At(l.op(op).key))
			op++
		}
		t.Writes = buf.Writes
	}
	return t
}

// Txns returns every transaction of l, in order (Txn of each).
func (l *Log) Txns() []Txn {
	out := make([]Txn, l.n)
	for i := range out {
		out[i] = l.Txn(i)
	}
	return out
}
