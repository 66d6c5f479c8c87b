// Package txn holds the vocabulary every Meridian protocol, client and checker shares: transaction
// ids, read and write sets, and commit outcomes.
//
// Versions are named by the id of the transaction that wrote them (the spec's "version = writer
// transaction id"); the initial version of every key is written by the pseudo-transaction None.
package txn

import (
	"fmt"
	"slices"
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
	var buf [maxIDLen]byte
	return string(id.Append(buf[:0]))
}

// maxIDLen is the longest String of an ID: "t", a 32-bit client, ".", a 32-bit sequence number.
const maxIDLen = 1 + 10 + 1 + 10

// Append appends id's String form to dst: a transaction's name as bytes, such as the value
// T-YCSB writes, without building a string first.
func (id ID) Append(dst []byte) []byte {
	if id == None {
		return append(dst, "init"...)
	}
	dst = strconv.AppendUint(append(dst, 't'), uint64(id.Client()), 10)
	return strconv.AppendUint(append(dst, '.'), uint64(id.Seq()), 10)
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
	// Members is set only on a batch (NewBatch): several transactions that a state-machine
	// replication protocol orders as one instance (spec alvin.md §5.3, batch_mode=instance).
	// Clients never submit one, and no store or history ever sees one.
	Members []*Txn
	// keys caches the numbers of the keys of Reads, then of Writes, in the table keysIn
	// (KeyNumbers).
	keysIn *KeyTable
	keys   []int32
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

// PoolIndex summarises a pool of pending transactions per key: how many of them read or write
// the key, and how many write it. It answers the two conflict questions Message Futures and
// Helios ask with one look-up per key instead of a scan of the pool:
//
//   - WritesMeet(t): does some pooled transaction write a key t reads or writes (t must abort
//     at request time)?
//   - AccessedBy(w): does some pooled transaction read or write a key w writes (an incoming
//     write set may abort pooled transactions, so scan the pool)?
//
// It counts by key number (Txn.KeyNumbers) in a flat slice: every method takes the key table
// the transactions are numbered in, which must be the same table on every call. The zero value
// is an empty index.
type PoolIndex struct {
	counts []uint64 // counts[k]: key k's entry, 0 for the keys no pooled transaction accesses
}

// A key's entry packs the writer count in the high half and the access count in the low half.
const (
	poolAccess = 1
	poolWriter = 1 << 32
)

// Add records t's reads and writes.
func (p *PoolIndex) Add(t *Txn, kt *KeyTable) {
	reads, writes := t.KeyNumbers(kt)
	p.grow(kt)
	for _, k := range reads {
		p.counts[k] += poolAccess
	}
	for _, k := range writes {
		p.counts[k] += poolAccess + poolWriter
	}
}

// Remove forgets t, which must have been added.
func (p *PoolIndex) Remove(t *Txn, kt *KeyTable) {
	reads, writes := t.KeyNumbers(kt)
	for _, k := range reads {
		p.counts[k] -= poolAccess
	}
	for _, k := range writes {
		p.counts[k] -= poolAccess + poolWriter
	}
}

// AddWrites records only t's writes: enough for a pool that is only asked WritesMeet (a pool of
// remote transactions), at half the cost of Add.
func (p *PoolIndex) AddWrites(t *Txn, kt *KeyTable) {
	_, writes := t.KeyNumbers(kt)
	p.grow(kt)
	for _, k := range writes {
		p.counts[k] += poolAccess + poolWriter
	}
}

// RemoveWrites forgets a transaction added with AddWrites.
func (p *PoolIndex) RemoveWrites(t *Txn, kt *KeyTable) {
	_, writes := t.KeyNumbers(kt)
	for _, k := range writes {
		p.counts[k] -= poolAccess + poolWriter
	}
}

// grow makes room for every key numbered in kt, at least doubling the room it makes: the table
// grows a key or two at a time, and growing by that little would copy the counts each time.
func (p *PoolIndex) grow(kt *KeyTable) {
	if n := kt.Len(); n > len(p.counts) {
		if n > cap(p.counts) {
			p.counts = slices.Grow(p.counts, max(n, 2*cap(p.counts))-len(p.counts))
		}
		old := len(p.counts)
		p.counts = p.counts[:n]
		clear(p.counts[old:])
	}
}

// count returns key k's entry.
func (p *PoolIndex) count(k int32) uint64 {
	if int(k) < len(p.counts) {
		return p.counts[k]
	}
	return 0
}

// WritesMeet reports whether some pooled transaction writes a key t reads or writes.
func (p *PoolIndex) WritesMeet(t *Txn, kt *KeyTable) bool {
	reads, writes := t.KeyNumbers(kt)
	for _, k := range reads {
		if p.count(k) >= poolWriter {
			return true
		}
	}
	for _, k := range writes {
		if p.count(k) >= poolWriter {
			return true
		}
	}
	return false
}

// AccessedBy reports whether some pooled transaction reads or writes a key that w writes.
func (p *PoolIndex) AccessedBy(w *Txn, kt *KeyTable) bool {
	_, writes := w.KeyNumbers(kt)
	for _, k := range writes {
		if p.count(k) != 0 {
			return true
		}
	}
	return false
}

// SizeBytes estimates t's encoded size (keys, values, versions and a header), for the traffic
// accounting of the protocols' messages. A nil transaction has size 0.
func (t *Txn) SizeBytes() int {
	if t == nil {
		return 0
	}
	if t.Members != nil {
		size := 10
		for _, m := range t.Members {
			size += m.SizeBytes()
		}
		return size
	}
	size := 8
	for _, r := range t.Reads {
		size += len(r.Key) + 10
	}
	for _, w := range t.Writes {
		size += len(w.Key) + len(w.Value) + 4
	}
	return size
}

// BatchClientBase is the client id of the first node's batch ids: node i names its batches
// NewID(BatchClientBase+i, seq). No client gets an id in that range: servers hand out
// (node index + 1)·2^24 + n for node indexes below 254, and the simulator numbers clients from 1.
const BatchClientBase ClientID = 0xFF000000

// BatchID returns the id of the seq-th batch that node formed.
func BatchID(node uint32, seq uint32) ID { return NewID(BatchClientBase+ClientID(node), seq) }

// IsBatchID reports whether id lies in the batch ids' range.
func IsBatchID(id ID) bool { return id.Client() >= BatchClientBase }

// NewBatch returns the batch named id of members (at least two, in the order they are to be
// validated and applied). Its Reads and Writes are its conflict footprint: every key a member
// reads (version None) and every key a member writes (no value), each once, in first-use order,
// so that a batch conflicts with a transaction exactly when one of its members does, and a
// protocol that computes conflicts from read and write sets orders a batch unchanged.
func NewBatch(id ID, members []*Txn) *Txn {
	b := &Txn{ID: id, Members: members}
	reads, writes := map[string]bool{}, map[string]bool{}
	for _, m := range members {
		for _, r := range m.Reads {
			if !reads[r.Key] {
				reads[r.Key] = true
				b.Reads = append(b.Reads, Read{Key: r.Key})
			}
		}
		for _, w := range m.Writes {
			if !writes[w.Key] {
				writes[w.Key] = true
				b.Writes = append(b.Writes, Write{Key: w.Key})
			}
		}
	}
	return b
}

// Unbatch returns the transactions t stands for: a batch's members, or t itself.
func Unbatch(t *Txn) []*Txn {
	if t.Members != nil {
		return t.Members
	}
	return []*Txn{t}
}
