package server

import (
	"math/rand/v2"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestSubmissionsWindow checks submissions against a set of every submitted id: a commit of an
// id submitted before is refused with AlreadyExists, one more than window below the client's
// newest with OutOfRange, any other accepted (and recorded); reads are checked alike and never
// recorded.
func TestSubmissionsWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := submissions{}
	seen := map[txn.ID]bool{}
	newest := map[txn.ClientID]uint32{}
	for i := range 20_000 {
		client := txn.ClientID(1 + r.IntN(3))
		seq := uint32(1 + r.IntN(40+i/40)) // the ids creep up, with stragglers far behind
		id := txn.NewID(client, seq)
		req := protocol.Request{Client: client, Kind: protocol.Commit, Txn: &txn.Txn{ID: id}}
		if r.IntN(4) == 0 {
			req = protocol.Request{Client: client, Kind: protocol.Get, Key: "k", TxnID: id}
		}
		want := codes.OK
		switch {
		case newest[client] > seq && newest[client]-seq > window:
			want = codes.OutOfRange
		case seen[id]:
			want = codes.AlreadyExists
		}
		if got := status.Code(s.check(req)); got != want {
			t.Fatalf("step %d: %s of %s: %s, want %s", i, map[protocol.RequestKind]string{protocol.Commit: "commit", protocol.Get: "read"}[req.Kind], id, got, want)
		}
		if want == codes.OK && req.Kind == protocol.Commit {
			s.record(req)
			seen[id] = true
			newest[client] = max(newest[client], seq)
		}
	}
	if err := s.check(protocol.Request{Client: 1, Kind: protocol.Get, Key: "k"}); err != nil {
		t.Errorf("a read outside any transaction: %v", err)
	}
}
