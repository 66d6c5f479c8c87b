package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
)

// typedLogRPCs drives the typed log RPCs against the running Chariots cluster cfg the way a
// client in another language would: register at a batcher of west and append there, find the
// record's maintainer from a head-of-log answer's journal, read it back, look its tag up at the
// indexer; and checks the refusals (an append numbered 0, a read at a batcher).
func typedLogRPCs(t *testing.T, cfg *cluster.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	api := func(name string) meridianpb.MeridianClient {
		i, _, err := cfg.Node(name)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(cfg.Nodes[i].ClientAddr, plaintext)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return meridianpb.NewMeridianClient(cc)
	}
	batcher, maintainer, indexer := api("west-batcher0"), api("west-maintainer0"), api("west-indexer0")
	reg, err := batcher.Register(ctx, &meridianpb.RegisterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id, token := reg.GetClientId(), reg.GetToken()
	for _, other := range []meridianpb.MeridianClient{maintainer, indexer} {
		if _, err := other.Register(ctx, &meridianpb.RegisterRequest{ClientId: id, Token: token}); err != nil {
			t.Fatal(err)
		}
	}
	seq := uint64(0)
	next := func() uint64 { seq++; return seq }
	if _, err := batcher.LogAppend(ctx, &meridianpb.LogAppendRequest{ClientId: id, Seq: next(), Token: token, Body: []byte("x")}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("an append numbered 0: %v, want INVALID_ARGUMENT", err)
	}
	app, err := batcher.LogAppend(ctx, &meridianpb.LogAppendRequest{ClientId: id, Seq: next(), Token: token, Body: []byte("typed"),
		Tags: []*meridianpb.LogTag{{Name: "typed", Value: []byte("yes")}}, AppendSeq: 1})
	if err != nil {
		t.Fatalf("LogAppend: %v", err)
	}
	if _, err := batcher.LogRead(ctx, &meridianpb.LogReadRequest{ClientId: id, Seq: next(), Token: token, From: 1, To: 1}); status.Code(err) != codes.Unavailable {
		t.Fatalf("a read at a batcher: %v, want UNAVAILABLE", err)
	}
	var head *meridianpb.LogHeadResponse
	for head == nil || head.GetHl() < app.GetLid() {
		if head, err = maintainer.LogHead(ctx, &meridianpb.LogHeadRequest{ClientId: id, Seq: next(), Token: token}); err != nil {
			t.Fatalf("LogHead: %v", err)
		}
	}
	var journal flstore.Journal
	for _, e := range head.GetJournal() {
		ep := flstore.Epoch{StartLId: e.GetStartLid(), B: e.GetRangeSize()}
		for _, m := range e.GetMaintainers() {
			ep.Maintainers = append(ep.Maintainers, protocol.NodeID(m))
		}
		journal = append(journal, ep)
	}
	owner := api(cfg.Nodes[journal.Owner(app.GetLid())].Name)
	if _, err := owner.Register(ctx, &meridianpb.RegisterRequest{ClientId: id, Token: token}); err != nil {
		t.Fatal(err)
	}
	read, err := owner.LogRead(ctx, &meridianpb.LogReadRequest{ClientId: id, Seq: next(), Token: token, From: app.GetLid(), To: app.GetLid(), Hl: head.GetHl()})
	if err != nil || len(read.GetRecords()) != 1 {
		t.Fatalf("LogRead: %v, %d records", err, len(read.GetRecords()))
	}
	rec, err := rpc.RecordFromPB(read.GetRecords()[0])
	if err != nil || string(rec.Body) != "typed" || rec.Host != 1 || rec.TOId != app.GetToid() || rec.LId != app.GetLid() || len(rec.Deps) != 2 {
		t.Fatalf("LogRead returned %+v (%v)", rec, err)
	}
	for try := 0; ; try++ { // indexers learn tags asynchronously
		look, err := indexer.LogLookup(ctx, &meridianpb.LogLookupRequest{ClientId: id, Seq: next(), Token: token, Tag: "typed",
			Predicate: meridianpb.LogPredicate_LOG_PREDICATE_EQ, Value: []byte("yes"), MaxLid: head.GetHl()})
		if err != nil {
			t.Fatalf("LogLookup: %v", err)
		}
		if slices.Contains(look.GetLids(), app.GetLid()) {
			break
		}
		if try == 20 {
			t.Fatalf("LogLookup: positions %v, want %d among them", look.GetLids(), app.GetLid())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
