package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

func sampleMessages() []protocol.Message {
	tx := &txn.Txn{ID: txn.NewID(3, 7), Reads: []txn.Read{{Key: "a", Version: txn.NewID(1, 1)}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}}}
	inst := Instance{Replica: 2, Slot: 41}
	bt := txn.NewBatch(txn.BatchID(2, 4), []*txn.Txn{tx, {ID: txn.NewID(4, 1), Writes: []txn.Write{{Key: "a", Value: []byte("w")}}}})
	attrs := Attrs{Seq: 9, Deps: []Instance{{Replica: 0, Slot: 3}, {Replica: 1, Slot: 1 << 40}}}
	return codectest.Messages(map[string]protocol.Message{
		"preaccept":           &PreAccept{Inst: inst, Ballot: 0, Cmd: tx, Attrs: attrs},
		"preaccept-reply":     &PreAcceptReply{Inst: inst, Ballot: 7, OK: true, Unchanged: true, Attrs: attrs},
		"preaccept-nack":      &PreAcceptReply{Inst: inst, Ballot: 12},
		"accept":              &Accept{Inst: inst, Ballot: 5, Cmd: tx, Attrs: attrs},
		"accept-noop":         &Accept{Inst: inst, Ballot: 5, NoOp: true},
		"accept-reply":        &AcceptReply{Inst: inst, Ballot: 5, OK: true},
		"commit":              &Commit{Inst: inst, Cmd: tx, Attrs: attrs},
		"commit-noop":         &Commit{Inst: inst, NoOp: true},
		"commit-ack":          &CommitAck{Inst: inst},
		"progress":            &Progress{UpTo: []uint64{0, 7, 1 << 50}},
		"prepare":             &Prepare{Inst: inst, Ballot: 8},
		"prepare-reply":       &PrepareReply{Inst: inst, Ballot: 8, OK: true, Status: PreAccepted, Unchanged: true, Cmd: tx, Attrs: attrs},
		"prepare-reply-acc":   &PrepareReply{Inst: inst, Ballot: 8, OK: true, Status: Accepted, VBallot: 3, NoOp: true},
		"prepare-reply-nack":  &PrepareReply{Inst: inst, Ballot: 13},
		"prepare-reply-empty": &PrepareReply{Inst: inst, Ballot: 8, OK: true},
		"prepare-reply-tried": &PrepareReply{Inst: inst, Ballot: 13, OK: true, Status: PreAccepted, VBallot: 8, Tried: true, Cmd: tx, Attrs: attrs},
		"try-preaccept":       &TryPreAccept{Inst: inst, Ballot: 8, Cmd: tx, Attrs: attrs},
		"try-preaccept-ok":    &TryPreAcceptReply{Inst: inst, Ballot: 8, OK: true},
		"try-preaccept-no":    &TryPreAcceptReply{Inst: inst, Ballot: 8, Conflict: true, Impossible: true},
		"preaccept-batch":     &PreAccept{Inst: inst, Cmd: bt, Attrs: attrs},
		"accept-batch":        &Accept{Inst: inst, Ballot: 5, Cmd: bt, Attrs: attrs},
		"commit-batch":        &Commit{Inst: inst, Cmd: bt, Attrs: attrs},
		"prepare-reply-batch": &PrepareReply{Inst: inst, Ballot: 8, OK: true, Status: Accepted, VBallot: 3, Cmd: bt, Attrs: attrs},
		"try-preaccept-batch": &TryPreAccept{Inst: inst, Ballot: 8, Cmd: bt, Attrs: attrs},
	})
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation and a trailing byte are refused; a promise cannot report a committed status.
func TestCodecRoundTrip(t *testing.T) {
	codectest.RoundTrip(t, Codec, sampleMessages())
	if _, err := Codec.Append(nil, &PrepareReply{Status: Committed}); err == nil {
		t.Error("a promise with status committed was encoded")
	}
	if _, err := Codec.Append(nil, (*Commit)(nil)); err == nil {
		t.Error("a nil message was encoded")
	}
}

// FuzzDecode: Decode never panics, refuses garbage as malformed and decodes only canonical
// encodings.
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }
