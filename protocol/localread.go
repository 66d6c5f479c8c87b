package protocol

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// ServeLocalRead answers Get and ReadSnapshot requests from env's store and reports whether it
// did. Protocols whose reads are purely local (Message Futures, Helios) call it first in
// HandleRequest. A ReadSnapshot is answered within one handler call, so all its reads see the
// same installation position: a consistent snapshot of this replica.
func ServeLocalRead(env Env, req Request) bool {
	switch req.Kind {
	case Get:
		v := env.Store().Get(req.Key)
		env.Reply(Reply{Client: req.Client, Seq: req.Seq, Value: v.Value, Version: v.Writer})
		return true
	case ReadSnapshot:
		st := env.Store()
		at := st.Seq()
		out := make([]SnapshotRead, len(req.Keys))
		for i, k := range req.Keys {
			v := st.GetAt(k, at)
			out[i] = SnapshotRead{Key: k, Value: v.Value, Version: v.Writer}
		}
		env.Reply(Reply{Client: req.Client, Seq: req.Seq, Snapshot: out})
		return true
	}
	return false
}

// ValidateCommit returns a description of what is wrong with a Commit request, or "" if it is
// well formed: a transaction is present, it is not a batch (nor named like one: txn.IsBatchID),
// and no key is empty or repeated within its reads or within its writes.
func ValidateCommit(req Request) string {
	if req.Txn == nil {
		return "commit request without a transaction"
	}
	if req.Txn.Members != nil || txn.IsBatchID(req.Txn.ID) {
		return "transaction " + req.Txn.ID.String() + " is a batch or named like one; clients commit single transactions"
	}
	if key, bad := badKey(req.Txn.Reads, func(r txn.Read) string { return r.Key }); bad {
		return "empty or repeated key " + `"` + key + `"` + " in read set"
	}
	if key, bad := badKey(req.Txn.Writes, func(w txn.Write) string { return w.Key }); bad {
		return "empty or repeated key " + `"` + key + `"` + " in write set"
	}
	return ""
}

// scanKeysUpTo is the set size up to which badKey compares keys pairwise: cheaper than a map
// for the handful of keys most transactions have.
const scanKeysUpTo = 16

// badKey returns the first key of set that is empty or repeats an earlier one.
func badKey[E any](set []E, keyOf func(E) string) (string, bool) {
	var seen map[string]bool
	if len(set) > scanKeysUpTo {
		seen = make(map[string]bool, len(set))
	}
	for i, e := range set {
		key := keyOf(e)
		switch {
		case key == "":
			return key, true
		case seen != nil:
			if seen[key] {
				return key, true
			}
			seen[key] = true
		case slices.ContainsFunc(set[:i], func(f E) bool { return keyOf(f) == key }):
			return key, true
		}
	}
	return "", false
}

// AdmitCommit is the common start of HandleRequest for protocols that read locally: it answers
// Get and ReadSnapshot from the local store, rejects unknown request kinds and malformed commit
// requests with an error naming the protocol, and reports whether req is a well-formed Commit
// that the protocol must now decide.
func AdmitCommit(env Env, req Request, protocolName string) bool {
	if ServeLocalRead(env, req) {
		return false
	}
	msg := ValidateCommit(req)
	if req.Kind != Commit {
		msg = fmt.Sprintf("unknown request kind %d", req.Kind)
	}
	if msg != "" {
		env.Reply(Reply{Client: req.Client, Seq: req.Seq, Err: protocolName + ": " + msg})
		return false
	}
	return true
}

// LocalReader is implemented by replicas that answer some requests from their local state
// alone (ServeLocalRead): for a request it reports local, HandleRequest replies at once and
// changes nothing — no replica state, no store, no randomness drawn, no message, no timer. The
// network server neither records such a request in its input log nor waits for an fsync of it
// (only for the inputs before it, whose state the reply shows): a replay without it rebuilds the
// same state. The simulator ignores it.
type LocalReader interface {
	// ServesLocally reports whether req is answered locally, as above.
	ServesLocally(req Request) bool
}
