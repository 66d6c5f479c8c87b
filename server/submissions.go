package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// submissions records, per client, the transaction ids the event loop has handed the replica
// for commit, so that it can refuse an id submitted before: a protocol takes a second commit
// of an id for another transaction of the same name, and may commit both and keep stale state
// under the name (Helios's pools do). The loop records every commit it dispatches, live or
// replayed from the input log, so a restarted node refuses what it would have refused before.
//
// A session's transaction ids increase, but a client may commit its open transactions in any
// order, so a per-client high-water mark alone would refuse legitimate commits. Memory is
// bounded all the same: per client, the highest sequence number submitted and which of the
// window sequence numbers below it were. An id further below is refused as too old to tell.
type submissions map[txn.ClientID]submitted

// submitted is one client's record: its highest submitted sequence number and, in bit i of
// below, whether sequence number high-1-i was submitted too.
type submitted struct {
	high  uint32
	below uint64
}

// window is how many sequence numbers below a client's highest submitted one are remembered.
const window = 64

// txnOf returns the transaction a request names: the transaction it commits, or the one a Get
// reads for (txn.None if none).
func txnOf(req protocol.Request) txn.ID {
	if req.Kind == protocol.Commit && req.Txn != nil {
		return req.Txn.ID
	}
	return req.TxnID
}

// check refuses a request naming a transaction that its client already submitted for commit
// (AlreadyExists), or that is too old to tell (OutOfRange): the gRPC service passes the code
// on. The service already checked that the transaction is the client's own.
func (s submissions) check(req protocol.Request) error {
	id := txnOf(req)
	sub, ok := s[id.Client()]
	if id == txn.None || !ok || id.Seq() > sub.high {
		return nil
	}
	back := sub.high - id.Seq()
	switch {
	case back == 0 || back <= window && sub.below&(1<<(back-1)) != 0:
		return status.Errorf(codes.AlreadyExists, "transaction id %s was already submitted for commit; an id names one transaction, "+
			"submitted once (its outcome is the first submission's)", id)
	case back > window:
		return status.Errorf(codes.OutOfRange, "transaction id %s is more than %d transactions older than %s, the newest its client "+
			"submitted for commit: the node no longer tells whether it was submitted", id, window, txn.NewID(id.Client(), sub.high))
	}
	return nil
}

// record notes a commit handed to the replica.
func (s submissions) record(req protocol.Request) {
	if req.Kind != protocol.Commit || req.Txn == nil {
		return
	}
	id := req.Txn.ID
	sub, ok := s[id.Client()]
	switch seq := id.Seq(); {
	case !ok:
		sub = submitted{high: seq}
	case seq > sub.high:
		// The old high becomes bit seq-high-1; bits shifted past the window drop out (a shift of
		// 64 or more leaves nothing).
		sub.below = (sub.below<<1 | 1) << (seq - sub.high - 1)
		sub.high = seq
	case seq < sub.high && sub.high-seq <= window:
		sub.below |= 1 << (sub.high - seq - 1)
	}
	s[id.Client()] = sub
}
