package history

import (
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Log holds a run's transactions compactly while it records them: every key, datacenter,
// client, abort reason and version read is stored once and referred to by number, and the
// transactions and their reads and writes live in fixed-size chunks, so that recording never
// copies what it already holds and a long run costs about 72 bytes per transaction plus 8 per
// operation (a []Txn with its own Reads, Writes and key strings costs several times that). Txn
// gives a transaction back as it was appended. The zero Log is empty and ready to use; it is
// not safe for concurrent use.
type Log struct {
	names   []string          // interned strings, by number
	nameNum map[string]uint32 // string -> number in names
	ids     []txn.ID          // interned versions read, by number
	idNum   map[txn.ID]uint32 // version -> number in ids
	txns    [][]logTxn        // chunks of logChunk transactions
	ops     [][]logOp         // chunks of logChunk operations: each transaction's reads, then its writes
	nOps    uint64
	n       int
}

// logChunk is the number of transactions (and of operations) in one chunk of a Log.
const logChunk = 1 << 14

// logTxn is one transaction of a Log; strings are numbers in Log.names.
type logTxn struct {
	id, first       txn.ID
	startUs, endUs  int64
	op              uint64 // index of the first operation
	nReads, nWrites uint32
	dc, client      uint32
	reason          uint32
	attempt, rounds int32
	status          txn.Status
	snapshot        bool
}

// logOp is one read (key and version) or write (key; version unused) of a Log, as numbers in
// Log.names and Log.ids.
type logOp struct {
	key, version uint32
}

// Len returns the number of transactions appended.
func (l *Log) Len() int { return l.n }

// intern returns s's number in l.names, adding it if new.
func (l *Log) intern(s string) uint32 {
	n, ok := l.nameNum[s]
	if !ok {
		if l.nameNum == nil {
			l.nameNum = make(map[string]uint32)
		}
		n = uint32(len(l.names))
		l.nameNum[s] = n
		l.names = append(l.names, s)
	}
	return n
}

// internID returns id's number in l.ids, adding it if new.
func (l *Log) internID(id txn.ID) uint32 {
	n, ok := l.idNum[id]
	if !ok {
		if l.idNum == nil {
			l.idNum = make(map[txn.ID]uint32)
		}
		n = uint32(len(l.ids))
		l.idNum[id] = n
		l.ids = append(l.ids, id)
	}
	return n
}

// addOp appends one operation.
func (l *Log) addOp(key string, version txn.ID) {
	if l.nOps%logChunk == 0 {
		l.ops = append(l.ops, make([]logOp, 0, logChunk))
	}
	last := &l.ops[len(l.ops)-1]
	*last = append(*last, logOp{key: l.intern(key), version: l.internID(version)})
	l.nOps++
}

// Append adds t after the transactions already in l. l keeps no reference to t's slices.
func (l *Log) Append(t Txn) {
	e := logTxn{id: t.ID, first: t.First, startUs: t.StartUs, endUs: t.EndUs, op: l.nOps,
		nReads: uint32(len(t.Reads)), nWrites: uint32(len(t.Writes)),
		dc: l.intern(t.DC), client: l.intern(t.Client), reason: l.intern(string(t.Reason)),
		attempt: int32(t.Attempt), rounds: int32(t.Rounds), status: t.Status, snapshot: t.Snapshot}
	for _, r := range t.Reads {
		l.addOp(r.Key, r.Version)
	}
	for _, k := range t.Writes {
		l.addOp(k, txn.None)
	}
	if l.n%logChunk == 0 {
		l.txns = append(l.txns, make([]logTxn, 0, logChunk))
	}
	last := &l.txns[len(l.txns)-1]
	*last = append(*last, e)
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
	t := Txn{ID: e.id, First: e.first, StartUs: e.startUs, EndUs: e.endUs,
		DC: l.names[e.dc], Client: l.names[e.client], Reason: txn.AbortReason(l.names[e.reason]),
		Attempt: int(e.attempt), Rounds: int(e.rounds), Status: e.status, Snapshot: e.snapshot}
	op := e.op
	if e.nReads > 0 {
		buf.Reads = buf.Reads[:0]
		for range e.nReads {
			o := l.op(op)
			buf.Reads = append(buf.Reads, txn.Read{Key: l.names[o.key], Version: l.ids[o.version]})
			op++
		}
		t.Reads = buf.Reads
	}
	if e.nWrites > 0 {
		buf.Writes = buf.Writes[:0]
		for range e.nWrites {
			buf.Writes = append(buf.Writes, l.names[l.op(op).key])
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
