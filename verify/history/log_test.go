package history

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestLogRoundTrip appends transactions of every shape and reads them back unchanged.
func TestLogRoundTrip(t *testing.T) {
	in := []Txn{
		{ID: txn.NewID(1, 1), DC: "V", Client: "V/0", Status: txn.Committed, StartUs: 5, EndUs: 90,
			Reads: []txn.Read{{Key: "x", Version: txn.None}, {Key: "y", Version: txn.NewID(2, 7)}}, Writes: []string{"x"}},
		{ID: txn.NewID(2, 8), DC: "O", Client: "O/3", Status: txn.Aborted, Reason: txn.ReasonStaleRead, StartUs: 1, EndUs: 2,
			Writes: []string{"y", "z"}, Attempt: 3, First: txn.NewID(2, 6)},
		{ID: txn.NewID(3, 1), DC: "V", Client: "V/1", Status: txn.Unknown},
		{ID: txn.NewID(4, 1), DC: "C", Client: "C/0", Status: txn.Committed, Reads: []txn.Read{{Key: "x", Version: txn.NewID(1, 1)}},
			Snapshot: true, Rounds: 2, EndUs: -4},
	}
	for i := range 3 * logChunk { // spill over chunks of transactions and of operations
		in = append(in, Txn{ID: txn.NewID(5, uint32(i+1)), DC: "S", Client: "S/0", Status: txn.Committed,
			Reads: []txn.Read{{Key: string(rune('a' + i%26)), Version: txn.NewID(1, 1)}}})
	}
	var l Log
	for _, tx := range in {
		l.Append(tx)
	}
	if l.Len() != len(in) {
		t.Fatalf("Len() = %d, want %d", l.Len(), len(in))
	}
	if got := l.Txns(); !reflect.DeepEqual(got, in) {
		for i := range in {
			if !reflect.DeepEqual(got[i], in[i]) {
				t.Fatalf("transaction %d: got %+v, want %+v", i, got[i], in[i])
			}
		}
	}
}

// TestLogCheckOnly keeps what the checker reads and gives the other fields back as zero.
func TestLogCheckOnly(t *testing.T) {
	in := Txn{ID: txn.NewID(2, 8), DC: "O", Client: "O/3", Status: txn.Aborted, Reason: txn.ReasonStaleRead, StartUs: 1, EndUs: 2,
		Reads: []txn.Read{{Key: "x", Version: txn.NewID(1, 1)}}, Writes: []string{"y"}, Attempt: 3, First: txn.NewID(2, 6),
		Snapshot: true, Rounds: 2}
	l := Log{CheckOnly: true}
	l.Append(in)
	want := Txn{ID: in.ID, DC: in.DC, Status: in.Status, Reads: in.Reads, Writes: in.Writes, Snapshot: true, Rounds: 2}
	if got := l.Txn(0); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestLogVersions reads back many distinct versions, some read again, across the version
// table's growth.
func TestLogVersions(t *testing.T) {
	var l Log
	var in []Txn
	for i := range 5000 {
		v := txn.NewID(txn.ClientID(i%7+1), uint32(i/3)) // each version about three times
		in = append(in, Txn{ID: txn.NewID(9, uint32(i+1)), DC: "V", Client: "V/0", Status: txn.Committed,
			Reads: []txn.Read{{Key: "x", Version: v}, {Key: "y", Version: txn.NewID(8, uint32(i))}}})
		l.Append(in[i])
	}
	if got := l.Txns(); !reflect.DeepEqual(got, in) {
		t.Fatal("versions read back differ from those appended")
	}
}
