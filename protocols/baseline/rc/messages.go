package rc

import "github.com/meridian-kv/meridian/protocol/txn"

// ReadLock asks a replica for a shared lock on Key for transaction Txn and for the key's latest
// version (spec §5.1 step 1). Read names the coordinator's pending read, so replies to a
// retried or duplicated request are matched to the right Get.
type ReadLock struct {
	Txn  txn.ID
	Read uint64
	Key  string
}

// ReadReply answers a ReadLock. A granted reply carries the replica's latest version of the key
// and Count, the number of versions of the key the replica has installed: installs of a key
// happen in the same order at every replica, so the largest Count among a majority names the
// newest version (§5.1 "uses the highest version").
type ReadReply struct {
	Txn     txn.ID
	Read    uint64
	Granted bool
	Value   []byte
	Version txn.ID
	Count   uint64
}

// Accept is PaxosAccept{t, R-keys, W} (spec §5.1 step 3): validate t's reads, lock its read keys
// shared and its write keys exclusively, no-wait.
type Accept struct {
	Txn *txn.Txn
}

// Vote answers an Accept. An accepting replica reports, per write of the transaction (in
// Txn.Writes order), how many versions of that key it had installed when it took the exclusive
// lock; the coordinator's maximum over a majority plus one is the version's position in the
// key's order (see the package comment).
type Vote struct {
	Txn      txn.ID
	Accepted bool
	Counts   []uint64
}

// Decision is the coordinator's outcome for a transaction, sent to every replica and
// retransmitted until acknowledged. A committed decision carries the writes and, per write, the
// position its version takes in the key's order (1 for the first version after the initial one).
type Decision struct {
	Txn       txn.ID
	Committed bool
	Writes    []txn.Write
	Positions []uint64
}

// DecisionAck tells the coordinator that a replica holds Txn's decision.
type DecisionAck struct {
	Txn txn.ID
}

// SizeBytes estimates the encoded size.
func (m *ReadLock) SizeBytes() int { return 20 + len(m.Key) }

// SizeBytes estimates the encoded size.
func (m *ReadReply) SizeBytes() int { return 34 + len(m.Value) }

// SizeBytes estimates the encoded size.
func (m *Accept) SizeBytes() int {
	size := 8
	for _, r := range m.Txn.Reads {
		size += len(r.Key) + 10
	}
	for _, w := range m.Txn.Writes {
		size += len(w.Key) + len(w.Value) + 4
	}
	return size
}

// SizeBytes estimates the encoded size.
func (m *Vote) SizeBytes() int { return 10 + 8*len(m.Counts) }

// SizeBytes estimates the encoded size.
func (m *Decision) SizeBytes() int {
	size := 10 + 8*len(m.Positions)
	for _, w := range m.Writes {
		size += len(w.Key) + len(w.Value) + 4
	}
	return size
}

// SizeBytes estimates the encoded size.
func (m *DecisionAck) SizeBytes() int { return 8 }
