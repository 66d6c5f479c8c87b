// Package rpctest provides MemBackend, an in-memory single-replica node that implements
// rpc.Backend, for tests of the gRPC service, its clients and the CLI.
package rpctest

import (
	"crypto/rand"
	"errors"
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
	key    []byte
}

// NewMemBackend returns an empty MemBackend with a random client key.
func NewMemBackend() *MemBackend { return &MemBackend{st: store.New(), key: []byte(rand.Text())} }

// NewClientID allocates the next client id, starting at 1.
func (b *MemBackend) NewClientID() (txn.ClientID, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	return b.nextID, nil
}

// ClientKey returns the backend's key, drawn when it was made.
func (b *MemBackend) ClientKey() []byte { return b.key }

// AdoptClientID refuses every id: the backend is the cluster's only node, so it allocated every
// id a client may hold, and only the token it issued proves one.
func (b *MemBackend) AdoptClientID(txn.ClientID) error {
	return errors.New("rpctest: the only node allocates every id; only the token it issued proves one")
}

// OpCodec returns nil: the backend serves no protocol operations.
func (b *MemBackend) OpCodec() protocol.Codec { return nil }

// Submit serves req and calls reply with the answer.
func (b *MemBackend) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	reply(b.serve(req), nil)
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
