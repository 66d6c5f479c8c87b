package rpc

import (
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/server/rpc/rpctest"
)

// TestChannelCarriesManyClients: clients sharing a Channel commit and read back concurrently, their
// calls multiplexed on one Calls stream; each sees its own writes, and closing the Channel fails
// a later call with Canceled instead of hanging.
func TestChannelCarriesManyClients(t *testing.T) {
	addr := startServer(t, rpctest.NewMemBackend(), Limits{})
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ch := NewChannel(cc)
	const clients, txns = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	conns := make([]*Conn, clients)
	for i := range clients {
		conn, id, err := ch.NewConn(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = conn
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := client.NewSession(conn, id, "", fmt.Sprint("c", i), nil)
			key := fmt.Sprint("k", i)
			for j := range txns {
				tx := s.Begin()
				tx.Put(key, []byte(fmt.Sprint(j)))
				if res := await(t, tx.Commit); res.Status != txn.Committed {
					errs <- fmt.Errorf("client %d, commit %d: %+v", i, j, res)
					return
				}
				r := await(t, func(done func(protocol.Reply)) {
					conn.Call(protocol.Request{Seq: uint64(1000 + j), Kind: protocol.Get, Key: key}, done)
				})
				if r.Err != "" || string(r.Value) != fmt.Sprint(j) {
					errs <- fmt.Errorf("client %d reads back %q (%s) after writing %d", i, r.Value, r.Err, j)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ch.Close()
	var gotErr error
	r := await(t, func(done func(protocol.Reply)) {
		conns[0].call(ctxT(t), protocol.Request{Seq: 5000, Kind: protocol.Get, Key: "k0"}, func(r protocol.Reply, err error) {
			gotErr = err
			done(r)
		})
	})
	if r.Err == "" || status.Code(gotErr) != codes.Canceled {
		t.Fatalf("a call after the Channel closed: %+v, %v", r, gotErr)
	}
	for _, c := range conns {
		c.Close()
	}
}

// TestCallStreamValidates: a call on the stream is validated as its unary RPC is: a malformed one
// fails with InvalidArgument, and the stream goes on carrying the next.
func TestCallStreamValidates(t *testing.T) {
	addr := startServer(t, rpctest.NewMemBackend(), Limits{})
	conn, _ := dial(t, addr)
	var gotErr error
	r := await(t, func(done func(protocol.Reply)) {
		conn.call(ctxT(t), protocol.Request{Seq: 1, Kind: protocol.Get, Key: ""}, func(r protocol.Reply, err error) {
			gotErr = err
			done(r)
		})
	})
	if status.Code(gotErr) != codes.InvalidArgument || r.Err == "" {
		t.Fatalf("a read of the empty key: %+v, %v", r, gotErr)
	}
	r = await(t, func(done func(protocol.Reply)) {
		conn.Call(protocol.Request{Seq: 2, Kind: protocol.Get, Key: "k"}, done)
	})
	if r.Err != "" {
		t.Fatalf("the next read on the stream: %+v", r)
	}
}
