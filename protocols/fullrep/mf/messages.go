package mf

import (
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
)

// Entry is the payload of one Message Futures log record: Ep(t) (pending) or Ec(t) (finished).
// Only write sets travel; read sets stay at the origin (spec §2.3).
type Entry struct {
	Finished  bool     // false: Ep(t); true: Ec(t)
	Committed bool     // Ec only
	Txn       *txn.Txn // ID and Writes only (Writes empty for an aborted Ec)
}

// Message is the partial log one MF replica sends another every propagation interval.
type Message rlog.Message[Entry]

// SizeBytes estimates the encoded size: the table, record headers, and written keys and values.
func (m *Message) SizeBytes() int {
	size := 16 + 8*len(m.Table)
	for _, r := range m.Records {
		size += 18
		for _, w := range r.Payload.Txn.Writes {
			size += len(w.Key) + len(w.Value) + 4
		}
	}
	return size
}

// wellFormed reports whether every record carries its transaction, so that a corrupt or hostile
// peer cannot crash the replica.
func (m *Message) wellFormed() bool {
	for _, r := range m.Records {
		if r.Payload.Txn == nil {
			return false
		}
	}
	return true
}
