package ogre

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// sampleMessages is every message shape: votes and decisions with and without dependency
// tracking, aborted decisions, transactions without writes.
func sampleMessages() []protocol.Message {
	id := txn.NewID(3, 7)
	t1, t2 := txn.NewID(1, 1), txn.NewID(2, 4)
	tx := &txn.Txn{ID: id, Reads: []txn.Read{{Key: "a", Version: t1}, {Key: "c"}}, Writes: []txn.Write{{Key: "b", Value: []byte("v")}, {Key: "d", Value: []byte("w")}}}
	readOnly := &txn.Txn{ID: id, Reads: []txn.Read{{Key: "a", Version: t1}}}
	return codectest.Messages(map[string]protocol.Message{
		"prepare":           &Prepare{Txn: tx},
		"prepare read-only": &Prepare{Txn: readOnly},
		"no":                &Vote{Txn: id},
		"no, stale":         &Vote{Txn: id, Stale: true},
		"yes, basic":        &Vote{Txn: id, Positive: true, Versions: []uint64{0, 9}},
		"yes, tracking":     &Vote{Txn: id, Positive: true, Versions: []uint64{4, 0}, RBDeps: [][]txn.ID{{t1, t2}, nil}},
		"abort":             &Decision{Txn: &txn.Txn{ID: id}},
		"commit, basic":     &Decision{Txn: tx, Commit: true, Pred: []uint64{3, 0}},
		"commit, tracking":  &Decision{Txn: tx, Commit: true, Pred: []uint64{3, 0}, RBDeps: [][]txn.ID{nil, {t2}}},
		"commit, read-only": &Decision{Txn: readOnly, Commit: true},
		"ack":               &DecisionAck{Txn: id},
		"ingest":            &Ingest{Seq: 12, Decision: &Decision{Txn: tx, Commit: true, Pred: []uint64{3, 0}, RBDeps: [][]txn.ID{nil, {t2}}}},
		"ingest ack":        &IngestAck{Seq: 300},
	})
}

// TestCodecRoundTrip encodes every message shape, decodes it back unchanged, and checks that
// every truncation and a trailing byte are refused; a committed decision without one version per
// write cannot be encoded.
func TestCodecRoundTrip(t *testing.T) {
	codectest.RoundTrip(t, Codec, sampleMessages())
	tx := &txn.Txn{ID: txn.NewID(1, 1), Writes: []txn.Write{{Key: "k"}}}
	if _, err := Codec.Append(nil, &Decision{Txn: tx, Commit: true}); err == nil {
		t.Error("a committed decision without versions was encoded")
	}
	if _, err := Codec.Append(nil, &Ingest{Seq: 1, Decision: &Decision{Txn: tx}}); err == nil {
		t.Error("an aborted decision was encoded as a stream entry")
	}
}

// FuzzDecode: Decode never panics, refuses garbage as malformed and decodes only canonical
// encodings.
func FuzzDecode(f *testing.F) { codectest.Fuzz(f, Codec, sampleMessages(), nil) }
