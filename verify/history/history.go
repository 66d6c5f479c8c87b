// Package history holds what a run records for the checker: one entry per finished transaction
// and, per replica, the order in which each key's versions were installed. It also reads and
// writes the JSON Lines format that external checkers consume (`meridian bench --history`).
package history

import (
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Txn is one finished transaction as the client saw it. Reads are the versions returned to the
// client; Writes are the keys it asked to write (installed only if Status is Committed).
type Txn struct {
	ID      txn.ID
	DC      string
	Client  string
	Status  txn.Status
	Reason  txn.AbortReason
	StartUs int64 // client's virtual (or wall) time at Begin
	EndUs   int64 // client's time when the outcome arrived
	Reads   []txn.Read
	Writes  []string
	// Attempt numbers a transaction the client re-ran after aborts (bench --retry): 1 for the
	// first run (0 means 1 too), and First is the first attempt's id (txn.None: this one).
	Attempt int
	First   txn.ID
	// Snapshot marks a read-only transaction served by one datacenter's snapshot
	// (client.Session.ReadOnly, Ogre's RoT-Storage); checker.Options.SnapshotsPerDC checks such
	// transactions one datacenter at a time.
	Snapshot bool
	// Rounds is the number of client-server rounds a read-only transaction of the
	// transactional-causal protocols took (package tcc); 0 elsewhere. It is white-box data for
	// the round-bound oracle, not part of the JSON Lines contract.
	Rounds int
}

// Replica is the final state of one replica: for every key, the writers of its versions in the
// order that replica installed them (the initial version, written by txn.None, is implicit).
type Replica struct {
	Name         string
	VersionOrder map[string][]txn.ID
}

// History is everything one run recorded.
type History struct {
	Txns     []Txn
	Replicas []Replica
}
