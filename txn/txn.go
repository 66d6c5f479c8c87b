// Package txn holds the vocabulary every Meridian protocol, client and checker shares: transaction
// ids, read and write sets, and commit outcomes.
//
// Versions are named by the id of the transaction that wrote them (the spec's "version = writer
// transaction id"); the initial version of every key is written by the pseudo-transaction None.
package txn

import (
	"fmt"
	"strconv"
	"strings"
)

// ClientID names one client session. Client ids start at 1 so that no real transaction id can
// collide with None.
type ClientID uint32

// ID identifies a transaction globally without coordination: the issuing client's id in the high
// 32 bits and that client's transaction sequence number in the low 32 bits.
type ID uint64

// None is the writer of every key's initial version.
const None ID = 0

// NewID returns the id of the seq-th transaction of client c.
func NewID(c ClientID, seq uint32) ID { return ID(uint64(c)<<32 | uint64(seq)) }

// Client returns the client that issued the transaction.
func (id ID) Client() ClientID { return ClientID(id >> 32) }

// Seq returns the transaction's sequence number within its client.
func (id ID) Seq() uint32 { return uint32(id) }

// String renders the id as "t<client>.<seq>", or "init" for None.
func (id ID) String() string {
	if id == None {
		return "init"
	}
	return "t" + strconv.FormatUint(uint64(id.Client()), 10) + "." + strconv.FormatUint(uint64(id.Seq()), 10)
}

// ParseID is the inverse of ID.String.
func ParseID(s string) (ID, error) {
	if s == "init" {
		return None, nil
	}
	client, seq, ok := strings.Cut(strings.TrimPrefix(s, "t"), ".")
	if !ok || !strings.HasPrefix(s, "t") {
		return 0, fmt.Errorf("txn: malformed transaction id %q (want t<client>.<seq>)", s)
	}
	c, err := strconv.ParseUint(client, 10, 32)
	if err != nil || c == 0 {
		return 0, fmt.Errorf("txn: malformed client in transaction id %q", s)
	}
	n, err := strconv.ParseUint(seq, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("txn: malformed sequence in transaction id %q", s)
	}
	return NewID(ClientID(c), uint32(n)), nil
}

// Read records one read: the key and the version (writer id) the transaction observed.
type Read struct {
	Key     string
	Version ID
}

// Write is one buffered write.
type Write struct {
	Key   string
	Value []byte
}

// Txn is what a client submits at commit time: every version it read and every value it wants to
// write. Keys are distinct within Reads and within Writes. A Txn is immutable once submitted:
// protocols share it between replicas in the simulator without copying.
type Txn struct {
	ID     ID
	Reads  []Read
	Writes []Write
}

// WritesKey reports whether t writes key.
func (t *Txn) WritesKey(key string) bool {
	for _, w := range t.Writes {
		if w.Key == key {
			return true
		}
	}
	return false
}

// Accesses reports whether t reads or writes key.
func (t *Txn) Accesses(key string) bool {
	for _, r := range t.Reads {
		if r.Key == key {
			return true
		}
	}
	return t.WritesKey(key)
}

// WriteConflicts reports whether other's write set meets t's read or write set, the directional
// conflict conflicts(t, other) that Message Futures and Helios test: other's writes would
// invalidate or overwrite what t accessed.
func (t *Txn) WriteConflicts(other *Txn) bool {
	for _, w := range other.Writes {
		if t.Accesses(w.Key) {
			return true
		}
	}
	return false
}

// Status is the outcome of a commit request.
type Status uint8

const (
	// Committed: the transaction's writes are installed and it is serialized.
	Committed Status = iota + 1
	// Aborted: none of the transaction's writes are ever installed.
	Aborted
	// Unknown: the client never learned the outcome (its node crashed or the connection broke
	// after the commit request left). The transaction may have committed or not; the checker
	// decides from the replicas (committed if and only if its writes were installed).
	Unknown
)

// String returns "committed" or "aborted".
func (s Status) String() string {
	switch s {
	case Committed:
		return "committed"
	case Aborted:
		return "aborted"
	case Unknown:
		return "unknown"
	}
	return "unknown"
}

// AbortReason says why a transaction aborted, so that users and benchmarks can tell contention
// from failures.
type AbortReason string

// Abort reasons shared by the protocols; a protocol may define more.
const (
	// ReasonStaleRead: a version the transaction read was overwritten before it could commit.
	ReasonStaleRead AbortReason = "stale-read"
	// ReasonLocalConflict: a pending transaction at the same replica writes what this one accesses.
	ReasonLocalConflict AbortReason = "local-conflict"
	// ReasonRemoteConflict: a transaction from another datacenter writes what this one accesses.
	ReasonRemoteConflict AbortReason = "remote-conflict"
	// ReasonNoAcks: too many datacenters refused (NACKed) the transaction for it to ever commit.
	ReasonNoAcks AbortReason = "no-acks"
)

// WriterIndex counts, per key, how many transactions of a set write it, so that "does any
// transaction in the set write something t accesses" costs one lookup per key of t. Protocols
// keep one per pool of pending transactions.
type WriterIndex map[string]int

// Add records t's writes.
func (w WriterIndex) Add(t *Txn) {
	for _, wr := range t.Writes {
		w[wr.Key]++
	}
}

// Remove forgets t's writes; t must have been added.
func (w WriterIndex) Remove(t *Txn) {
	for _, wr := range t.Writes {
		decrement(w, wr.Key)
	}
}

// Meets reports whether some indexed transaction writes a key t reads or writes.
func (w WriterIndex) Meets(t *Txn) bool {
	for _, r := range t.Reads {
		if w[r.Key] > 0 {
			return true
		}
	}
	for _, wr := range t.Writes {
		if w[wr.Key] > 0 {
			return true
		}
	}
	return false
}

// AccessIndex counts, per key, how many transactions of a set read or write it, so that "does
// this write set meet any transaction in the set" costs one lookup per written key. Protocols
// use it to skip scanning their pending transactions for the common case of no conflict.
type AccessIndex map[string]int

// Add records every key t reads or writes.
func (a AccessIndex) Add(t *Txn) {
	for _, r := range t.Reads {
		a[r.Key]++
	}
	for _, w := range t.Writes {
		a[w.Key]++
	}
}

// Remove forgets t's keys; t must have been added.
func (a AccessIndex) Remove(t *Txn) {
	for _, r := range t.Reads {
		decrement(a, r.Key)
	}
	for _, w := range t.Writes {
		decrement(a, w.Key)
	}
}

// decrement lowers a key's count, deleting the key at zero so indexes stay small.
func decrement[M ~map[string]int](m M, key string) {
	if n := m[key]; n > 1 {
		m[key] = n - 1
	} else {
		delete(m, key)
	}
}

// MetBy reports whether some indexed transaction accesses a key that writes writes.
func (a AccessIndex) MetBy(writes []Write) bool {
	for _, w := range writes {
		if a[w.Key] > 0 {
			return true
		}
	}
	return false
}
