package rpc

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// The shared logs' typed RPCs (LogAppend, LogHead, LogRead, LogLookup): each is one
// flstore operation at this node, the same the Operate RPC carries in the protocol's encoding.

// logOperation checks the caller, puts op through the node's codec (as the input log will: a
// protocol that cannot encode it is not a shared log, and a request beyond a wire limit is
// refused here), submits it, and returns the node's answer, which must be a T.
func logOperation[T protocol.Message](s *service, ctx context.Context, client uint32, seq uint64, token []byte, op protocol.Message) (T, error) {
	var zero T
	codec := s.b.OpCodec()
	if codec == nil {
		return zero, status.Error(codes.Unimplemented, "this node's protocol is not a shared log (flstore, chariots)")
	}
	cs, err := s.client(client, token)
	if err != nil {
		return zero, err
	}
	if _, err := codec.Append(nil, &flstore.HLQuery{}); err != nil {
		return zero, status.Error(codes.FailedPrecondition, "this node's protocol is not a shared log (flstore, chariots): use Operate")
	}
	b, err := codec.Append(nil, op)
	if err != nil {
		return zero, invalid("%v", err)
	}
	if len(b) > s.lim.MaxOpBytes {
		return zero, invalid("operation of %d bytes exceeds the limit of %d bytes", len(b), s.lim.MaxOpBytes)
	}
	answer, err := s.operate(ctx, cs, client, seq, op)
	if err != nil {
		return zero, err
	}
	out, ok := answer.(T)
	if !ok {
		return zero, status.Errorf(codes.Internal, "node answered %T with %T", op, answer)
	}
	return out, nil
}

// LogAppend appends a record at this node (a Chariots batcher, an FLStore maintainer).
func (s *service) LogAppend(ctx context.Context, in *meridianpb.LogAppendRequest) (*meridianpb.LogAppendResponse, error) {
	if in.GetAppendSeq() == 0 {
		return nil, invalid("append_seq must be at least 1 (a client numbers its appends 1, 2, 3, ...)")
	}
	tags, err := tagsFromPB(in.GetTags())
	if err != nil {
		return nil, err
	}
	rec := &flstore.Record{Body: in.GetBody(), Tags: tags, WantDeps: in.GetDeps(), MinLId: in.GetMinLid(), AppendSeq: in.GetAppendSeq()}
	if len(rec.WantDeps) == 0 {
		rec.WantDeps = nil
	}
	res, err := logOperation[*flstore.AppendResult](s, ctx, in.GetClientId(), in.GetSeq(), in.GetToken(), &flstore.AppendOp{Record: rec})
	if err != nil {
		return nil, err
	}
	return &meridianpb.LogAppendResponse{Toid: res.TOId, Lid: res.LId}, nil
}

// LogHead returns this maintainer's head of the log and journal.
func (s *service) LogHead(ctx context.Context, in *meridianpb.LogHeadRequest) (*meridianpb.LogHeadResponse, error) {
	res, err := logOperation[*flstore.HLResult](s, ctx, in.GetClientId(), in.GetSeq(), in.GetToken(), &flstore.HLQuery{})
	if err != nil {
		return nil, err
	}
	out := &meridianpb.LogHeadResponse{Hl: res.HL}
	for _, e := range res.Journal {
		pe := &meridianpb.LogEpoch{StartLid: e.StartLId, RangeSize: e.B}
		for _, m := range e.Maintainers {
			pe.Maintainers = append(pe.Maintainers, uint32(m))
		}
		out.Journal = append(out.Journal, pe)
	}
	return out, nil
}

// LogRead returns the records at positions this maintainer owns.
func (s *service) LogRead(ctx context.Context, in *meridianpb.LogReadRequest) (*meridianpb.LogReadResponse, error) {
	if in.GetFrom() > in.GetTo() {
		return nil, invalid("from %d is after to %d", in.GetFrom(), in.GetTo())
	}
	res, err := logOperation[*flstore.ReadResult](s, ctx, in.GetClientId(), in.GetSeq(), in.GetToken(),
		&flstore.ReadOp{From: in.GetFrom(), To: in.GetTo(), HL: in.GetHl()})
	if err != nil {
		return nil, err
	}
	out := &meridianpb.LogReadResponse{Hl: res.HL}
	for _, r := range res.Records {
		out.Records = append(out.Records, recordToPB(r))
	}
	return out, nil
}

// LogLookup returns the positions of the records with a tag, from this indexer.
func (s *service) LogLookup(ctx context.Context, in *meridianpb.LogLookupRequest) (*meridianpb.LogLookupResponse, error) {
	p := in.GetPredicate()
	if p < meridianpb.LogPredicate_LOG_PREDICATE_ANY || p > meridianpb.LogPredicate_LOG_PREDICATE_GE {
		return nil, invalid("unknown predicate %d", p)
	}
	if in.GetLimit() > flstore.MaxRecords {
		return nil, invalid("limit %d exceeds %d", in.GetLimit(), flstore.MaxRecords)
	}
	op := &flstore.LookupOp{Tag: in.GetTag(), Op: flstore.Compare(p), Value: in.GetValue(), MaxLId: in.GetMaxLid(),
		Limit: int(in.GetLimit()), MostRecentFirst: in.GetMostRecentFirst()}
	res, err := logOperation[*flstore.LookupResult](s, ctx, in.GetClientId(), in.GetSeq(), in.GetToken(), op)
	if err != nil {
		return nil, err
	}
	return &meridianpb.LogLookupResponse{Lids: res.LIds}, nil
}

// tagsFromPB converts tags, refusing an empty name or more than flstore.MaxTags.
func tagsFromPB(in []*meridianpb.LogTag) ([]flstore.Tag, error) {
	if len(in) > flstore.MaxTags {
		return nil, invalid("%d tags, at most %d", len(in), flstore.MaxTags)
	}
	var out []flstore.Tag
	for i, t := range in {
		if t.GetName() == "" {
			return nil, invalid("tag %d has an empty name", i)
		}
		tag := flstore.Tag{Name: t.GetName()}
		if len(t.GetValue()) > 0 {
			tag.Value = t.GetValue()
		}
		out = append(out, tag)
	}
	return out, nil
}

// recordToPB converts a record.
func recordToPB(r *flstore.Record) *meridianpb.LogRecord {
	out := &meridianpb.LogRecord{Host: uint32(r.Host), Toid: r.TOId, Lid: r.LId, Deps: r.Deps, Body: r.Body,
		ClientId: uint32(r.Client), AppendSeq: r.AppendSeq, NoOp: r.NoOp, Collected: r.Collected}
	for _, t := range r.Tags {
		out.Tags = append(out.Tags, &meridianpb.LogTag{Name: t.Name, Value: t.Value})
	}
	return out
}

// RecordFromPB converts a record of a LogRead answer back (for Go callers of the typed RPCs).
func RecordFromPB(r *meridianpb.LogRecord) (*flstore.Record, error) {
	if r == nil {
		return nil, errors.New("rpc: nil record")
	}
	if r.GetHost() >= flstore.MaxDCs {
		return nil, fmt.Errorf("rpc: record host %d out of range", r.GetHost())
	}
	out := &flstore.Record{Host: int(r.GetHost()), TOId: r.GetToid(), LId: r.GetLid(), Deps: r.GetDeps(), Body: r.GetBody(),
		Client: txn.ClientID(r.GetClientId()), AppendSeq: r.GetAppendSeq(), NoOp: r.GetNoOp(), Collected: r.GetCollected()}
	for _, t := range r.GetTags() {
		out.Tags = append(out.Tags, flstore.Tag{Name: t.GetName(), Value: t.GetValue()})
	}
	return out, nil
}
