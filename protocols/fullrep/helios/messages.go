package helios

import (
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
)

// EntryKind distinguishes the three kinds of record Helios puts in the replicated log.
type EntryKind uint8

const (
	// Preparing announces a local transaction at its request time q (the record's timestamp),
	// with its read and write sets.
	Preparing EntryKind = iota + 1
	// Finished announces a transaction's outcome; a committed one carries its writes.
	Finished
	// Nack says the creating datacenter received Of's preparing record too late (at or after
	// q + GT) to acknowledge it (Helios-f only; spec GAP-H3).
	Nack
)

// Entry is the payload of one Helios log record. (The one-byte fields come last: a smaller
// record is cheaper to copy into every message that carries it.)
type Entry struct {
	Txn       *txn.Txn // Preparing, and Finished when Committed
	Of        txn.ID   // Finished, Nack
	Kind      EntryKind
	Committed bool // Finished
}

// Message is the partial log one Helios replica sends another every propagation interval.
type Message rlog.Message[Entry]

// SizeBytes estimates the encoded size: the table, record headers, and keys and values.
func (m *Message) SizeBytes() int {
	size := 16 + 8*len(m.Table)
	for _, r := range m.Records {
		size += 18
		if r.Payload.Txn != nil {
			size += r.Payload.Txn.SizeBytes()
		}
	}
	return size
}

// wellFormed reports whether every record carries what its kind needs, so that a corrupt or
// hostile peer cannot crash the replica.
func (m *Message) wellFormed() bool {
	for _, r := range m.Records {
		e := r.Payload
		switch {
		case e.Kind == Preparing && e.Txn == nil,
			e.Kind == Finished && e.Committed && e.Txn == nil,
			e.Kind < Preparing || e.Kind > Nack:
			return false
		}
	}
	return true
}
