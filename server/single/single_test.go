package single

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned/sdur"
)

func call(t *testing.T, s *Store, op protocol.Message) protocol.Reply {
	t.Helper()
	var out protocol.Reply
	s.Submit(protocol.Request{Kind: protocol.Operation, Op: op}, func(r protocol.Reply, err error) {
		if err != nil {
			t.Fatal(err)
		}
		out = r
	})
	return out
}

// TestStoreCertifiesAndReadsSnapshots: a commit installs its writes as the next version; a read
// at an older snapshot sees the older version; a transaction that read a key written after its
// snapshot aborts; blind writes and keys with a zero byte are refused.
func TestStoreCertifiesAndReadsSnapshots(t *testing.T) {
	s, err := Open(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	commit := func(id txn.ID, st uint64, key, value string) protocol.Reply {
		return call(t, s, &sdur.CommitReq{Tx: id, Slices: []sdur.Slice{{Part: 0, RS: []string{key}, WS: []txn.Write{{Key: key, Value: []byte(value)}}, St: st}}})
	}
	if r := commit(txn.NewID(1, 1), 0, "p0/x", "a"); r.Op.(*sdur.CommitReply).Status != txn.Committed {
		t.Fatalf("first commit: %+v", r)
	}
	if r := commit(txn.NewID(1, 2), 1, "p0/x", "b"); r.Op.(*sdur.CommitReply).Status != txn.Committed {
		t.Fatalf("second commit: %+v", r)
	}
	if r := commit(txn.NewID(1, 3), 1, "p0/x", "c"); r.Op.(*sdur.CommitReply).Status != txn.Aborted {
		t.Fatalf("stale commit: %+v", r)
	}
	for st, want := range map[uint64]string{0: "", 1: "a", 2: "b"} {
		r := call(t, s, &sdur.ReadReq{Key: "p0/x", St: st, HasSt: true}).Op.(*sdur.ReadReply)
		if string(r.Value) != want || r.St != st {
			t.Errorf("read at %d: %q at %d, want %q", st, r.Value, r.St, want)
		}
	}
	if r := call(t, s, &sdur.ReadReq{Key: "p0/x"}).Op.(*sdur.ReadReply); string(r.Value) != "b" || r.Version != txn.NewID(1, 2) || r.St != 2 {
		t.Errorf("latest read %+v", r)
	}
	if r := call(t, s, &sdur.SnapReq{}).Op.(*sdur.SnapReply); r.M != 2 || len(r.S) != 1 || r.S[0] != 2 {
		t.Errorf("snapshot %+v", r)
	}
	blind := &sdur.CommitReq{Tx: txn.NewID(1, 4), Slices: []sdur.Slice{{Part: 0, WS: []txn.Write{{Key: "p0/y"}}}}}
	for _, op := range []protocol.Message{blind, &sdur.ReadReq{Key: "p0/\x00"}, &sdur.ReadReq{Key: "p0/x", St: 9, HasSt: true}} {
		if r := call(t, s, op); r.Err == "" {
			t.Errorf("%+v accepted: %+v", op, r)
		}
	}
}
