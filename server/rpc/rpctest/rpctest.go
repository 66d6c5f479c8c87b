// Package rpctest provides MemBackend, an in-memory single-replica node that implements
// rpc.Backend, for tests of the gRPC service, its clients and the CLI.
package rpctest

import (
	"fmt"
	"sync"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// MemBackend is one replica with no peers: it serves reads from a store.Store and commits every
// transaction whose reads are all still the latest versions, aborting the others with
// txn.ReasonStaleRead. It answers each request before Submit returns, on the caller's
// goroutine. The zero value is not usable; call NewMemBackend.
type MemBackend struct {
	mu     sync.Mutex
	st     *store.Store
	nextID txn.ClientID
}

// NewMemBackend returns an empty MemBackend.
func NewMemBackend() *MemBackend { return &MemBackend{st: store.New()} }

// NewClientID allocates the next client id, starting at 1.
func (b *MemBackend) NewClientID() (txn.ClientID, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	return b.nextID, nil
}

// AdoptClientID accepts the ids the backend allocated: it is the cluster's only node.
func (b *MemBackend) AdoptClientID(id txn.ClientID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id == 0 || id > b.nextID {
		return fmt.Errorf("rpctest: client id %d was never allocated", id)
	}
	return nil
}

// OpCodec returns nil: the backend serves no protocol operations.
func (b *MemBackend) OpCodec() protocol.Codec { return nil }

// Submit serves req and calls reply with the answer.
func (b *MemBackend) Submit(req protocol.Request, reply func(protocol.Reply)) {
	reply(b.serve(req))
}

func (b *MemBackend) serve(req protocol.Request) protocol.Reply {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := protocol.Reply{Client: req.Client, Seq: req.Seq}
	switch req.Kind {
	case protocol.Get:
		v := b.st.Get(req.Key)
		r.Value, r.Version = v.Value, v.Writer
	case protocol.ReadSnapshot:
		at := b.st.Seq()
		for _, k := range req.Keys {
			v := b.st.GetAt(k, at)
			r.Snapshot = append(r.Snapshot, protocol.SnapshotRead{Key: k, Value: v.Value, Version: v.Writer})
		}
	case protocol.Commit:
		if msg := protocol.ValidateCommit(req); msg != "" {
			r.Err = msg
		} else if b.st.Stale(req.Txn.Reads) {
			r.Status, r.Reason = txn.Aborted, txn.ReasonStaleRead
		} else {
			b.st.Apply(req.Txn.ID, req.Txn.Writes)
			r.Status = txn.Committed
		}
	default:
		r.Err = "rpctest: unknown request kind"
	}
	return r
}
