package rpc

import (
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/rpc/rpctest"
)

// logBackend is a node of a shared log: it answers every log operation with a fixed answer
// built from the request, and keeps the requests.
type logBackend struct {
	*rpctest.MemBackend
	reqs []protocol.Request
}

func (b *logBackend) OpCodec() protocol.Codec { return flstore.Codec }

func (b *logBackend) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	b.reqs = append(b.reqs, req)
	r := protocol.Reply{Client: req.Client, Seq: req.Seq}
	switch op := req.Op.(type) {
	case *flstore.AppendOp:
		r.Op = &flstore.AppendResult{TOId: 7, LId: 9}
	case *flstore.HLQuery:
		r.Op = &flstore.HLResult{HL: 5, Journal: flstore.Journal{{StartLId: 1, B: 10, Maintainers: []protocol.NodeID{0, 1}}}}
	case *flstore.ReadOp:
		r.Op = &flstore.ReadResult{HL: 5, Records: []*flstore.Record{{Host: 1, TOId: 2, LId: op.From, Deps: []uint64{0, 1},
			Tags: []flstore.Tag{{Name: "k", Value: []byte("v")}}, Body: []byte("b"), Client: 3, AppendSeq: 4}}}
	case *flstore.LookupOp:
		r.Op = &flstore.LookupResult{LIds: []uint64{op.MaxLId}}
	}
	reply(r, nil)
}

// TestLogRPCs: the typed log RPCs carry each operation to the node and its answer back, refuse
// malformed requests with INVALID_ARGUMENT, and refuse nodes of other protocols.
func TestLogRPCs(t *testing.T) {
	b := &logBackend{MemBackend: rpctest.NewMemBackend()}
	addr := startServer(t, b, Limits{})
	reg, err := registerOn(t, addr, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, token := reg.GetClientId(), reg.GetToken()
	cc, err := grpc.NewClient(addr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	api := meridianpb.NewMeridianClient(cc)
	ctx := ctxT(t)

	app, err := api.LogAppend(ctx, &meridianpb.LogAppendRequest{ClientId: id, Seq: 1, Token: token, Body: []byte("x"),
		Tags: []*meridianpb.LogTag{{Name: "k", Value: []byte("v")}, {Name: "bare"}}, Deps: []uint64{1, 2}, AppendSeq: 3})
	if err != nil || app.GetToid() != 7 || app.GetLid() != 9 {
		t.Fatalf("LogAppend: %v, %v", app, err)
	}
	rec := b.reqs[0].Op.(*flstore.AppendOp).Record
	if string(rec.Body) != "x" || rec.AppendSeq != 3 || len(rec.Tags) != 2 || rec.Tags[1].Value != nil || len(rec.WantDeps) != 2 {
		t.Fatalf("the node got %+v", rec)
	}
	head, err := api.LogHead(ctx, &meridianpb.LogHeadRequest{ClientId: id, Seq: 2, Token: token})
	if err != nil || head.GetHl() != 5 || len(head.GetJournal()) != 1 || len(head.GetJournal()[0].GetMaintainers()) != 2 {
		t.Fatalf("LogHead: %v, %v", head, err)
	}
	read, err := api.LogRead(ctx, &meridianpb.LogReadRequest{ClientId: id, Seq: 3, Token: token, From: 4, To: 4})
	if err != nil || len(read.GetRecords()) != 1 {
		t.Fatalf("LogRead: %v, %v", read, err)
	}
	if r, err := RecordFromPB(read.GetRecords()[0]); err != nil || r.LId != 4 || r.Host != 1 || string(r.Tags[0].Value) != "v" || r.Client != 3 {
		t.Fatalf("LogRead record: %+v, %v", r, err)
	}
	look, err := api.LogLookup(ctx, &meridianpb.LogLookupRequest{ClientId: id, Seq: 4, Token: token, Tag: "k", MaxLid: 11,
		Predicate: meridianpb.LogPredicate_LOG_PREDICATE_GE, Value: []byte("a")})
	if err != nil || len(look.GetLids()) != 1 || look.GetLids()[0] != 11 || b.reqs[3].Op.(*flstore.LookupOp).Op != flstore.Ge {
		t.Fatalf("LogLookup: %v, %v", look, err)
	}

	tooMany := make([]*meridianpb.LogTag, flstore.MaxTags+1)
	for i := range tooMany {
		tooMany[i] = &meridianpb.LogTag{Name: "t"}
	}
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"append numbered 0", func() error {
			_, err := api.LogAppend(ctx, &meridianpb.LogAppendRequest{ClientId: id, Token: token})
			return err
		}, "append_seq must be at least 1"},
		{"empty tag name", func() error {
			_, err := api.LogAppend(ctx, &meridianpb.LogAppendRequest{ClientId: id, Token: token, AppendSeq: 1, Tags: []*meridianpb.LogTag{{}}})
			return err
		}, "empty name"},
		{"too many tags", func() error {
			_, err := api.LogAppend(ctx, &meridianpb.LogAppendRequest{ClientId: id, Token: token, AppendSeq: 1, Tags: tooMany})
			return err
		}, "at most 64"},
		{"body too large", func() error {
			_, err := api.LogAppend(ctx, &meridianpb.LogAppendRequest{ClientId: id, Token: token, AppendSeq: 1, Body: make([]byte, wire.MaxValueLen+1)})
			return err
		}, "body"},
		{"range backwards", func() error {
			_, err := api.LogRead(ctx, &meridianpb.LogReadRequest{ClientId: id, Token: token, From: 3, To: 2})
			return err
		}, "after to"},
		{"unknown predicate", func() error {
			_, err := api.LogLookup(ctx, &meridianpb.LogLookupRequest{ClientId: id, Token: token, Tag: "k", Predicate: 9})
			return err
		}, "unknown predicate"},
	} {
		if st := status.Convert(tc.call()); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.want) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT %q", tc.name, st.Err(), tc.want)
		}
	}

	// Nodes of other protocols.
	for _, other := range []struct {
		b    Backend
		code codes.Code
	}{{rpctest.NewMemBackend(), codes.Unimplemented}, {newOpBackend("n0"), codes.FailedPrecondition}} {
		a := startServer(t, other.b, Limits{})
		r, err := registerOn(t, a, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := grpc.NewClient(a, plaintext)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := meridianpb.NewMeridianClient(c).LogHead(ctx, &meridianpb.LogHeadRequest{ClientId: r.GetClientId(), Token: r.GetToken()}); status.Code(err) != other.code {
			t.Errorf("LogHead at a %T: %v, want %v", other.b, err, other.code)
		}
	}
}
