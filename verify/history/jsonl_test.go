package history

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

var (
	t11 = txn.NewID(1, 1)
	t31 = txn.NewID(3, 1)
	t32 = txn.NewID(3, 2)
)

func smallHistory() *History {
	return &History{
		Txns: []Txn{
			{ID: t11, DC: "O", Client: "O/1", Status: txn.Committed, StartUs: 1, EndUs: 70,
				Writes: []string{"k1"}},
			{ID: t31, DC: "V", Client: "V/3", Status: txn.Committed, StartUs: 100, EndUs: 180,
				Reads:  []txn.Read{{Key: "k1", Version: t11}, {Key: "k<&>", Version: txn.None}},
				Writes: []string{"k1", "k9"}},
			{ID: t32, DC: "V", Client: "V/3", Status: txn.Aborted, Reason: txn.ReasonStaleRead,
				StartUs: 200, EndUs: 260, Reads: []txn.Read{{Key: "k9", Version: txn.None}}},
			{ID: txn.NewID(3, 3), DC: "V", Client: "V/3", Status: txn.Committed, StartUs: 260, EndUs: 330,
				Reads: []txn.Read{{Key: "k9", Version: t31}}, Attempt: 2, First: t32},
		},
		Replicas: []Replica{{Name: "history", VersionOrder: map[string][]txn.ID{
			"k9": {t31},
			"k1": {t11, t31},
		}}},
	}
}

// The exact bytes are the contract with external tools: field order, null for the initial
// version, [] for empty lists, reason only on aborted lines, the attempt and its first
// attempt's id on every line, no HTML escaping, sorted keys.
const smallGolden = `{"id":"t1.1","dc":"O","client":"O/1","status":"committed","start_us":1,"end_us":70,"reads":[],"writes":["k1"],"attempt":1,"first":"t1.1"}
{"id":"t3.1","dc":"V","client":"V/3","status":"committed","start_us":100,"end_us":180,"reads":[{"key":"k1","writer":"t1.1"},{"key":"k<&>","writer":null}],"writes":["k1","k9"],"attempt":1,"first":"t3.1"}
{"id":"t3.2","dc":"V","client":"V/3","status":"aborted","reason":"stale-read","start_us":200,"end_us":260,"reads":[{"key":"k9","writer":null}],"writes":[],"attempt":1,"first":"t3.2"}
{"id":"t3.3","dc":"V","client":"V/3","status":"committed","start_us":260,"end_us":330,"reads":[{"key":"k9","writer":"t3.1"}],"writes":[],"attempt":2,"first":"t3.2"}
{"version_order":{"k1":["t1.1","t3.1"],"k9":["t3.1"]}}
`

func TestWriteJSONLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, smallHistory()); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != smallGolden {
		t.Errorf("WriteJSONL:\n got: %s\nwant: %s", got, smallGolden)
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	h := smallHistory()
	// A long line: well past bufio.Scanner's default 64 KiB token limit.
	var big Txn
	big.ID, big.Status, big.Reason = txn.NewID(7, 1), txn.Aborted, ""
	for i := range 20000 {
		big.Writes = append(big.Writes, "key-"+strings.Repeat("x", i%7)+string(rune('a'+i%26)))
		big.Reads = append(big.Reads, txn.Read{Key: "r" + big.Writes[i], Version: t31})
	}
	h.Txns = append(h.Txns, big)

	var buf bytes.Buffer
	if err := WriteJSONL(&buf, h); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("round trip changed the history:\n got %+v\nwant %+v", got, h)
	}
}

func TestJSONLNoReplicas(t *testing.T) {
	h := smallHistory()
	h.Replicas = nil
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, h); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "version_order") {
		t.Errorf("version_order written for a history without replicas:\n%s", buf.String())
	}
	got, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("round trip changed the history:\n got %+v\nwant %+v", got, h)
	}
}

func TestReadJSONLAcceptsBlankLinesAndMissingFinalNewline(t *testing.T) {
	in := "\n" + strings.ReplaceAll(strings.TrimSuffix(smallGolden, "\n"), "\n", "\r\n\n")
	got, err := ReadJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, smallHistory()) {
		t.Errorf("got %+v", got)
	}
}

func TestWriteJSONLRejectsInvalid(t *testing.T) {
	for name, h := range map[string]*History{
		"status 0": {Txns: []Txn{{ID: t11}}},
		"id None":  {Txns: []Txn{{ID: txn.None, Status: txn.Committed}}},
	} {
		if err := WriteJSONL(&bytes.Buffer{}, h); err == nil {
			t.Errorf("%s: WriteJSONL accepted an invalid history", name)
		}
	}
}

func TestReadJSONLErrors(t *testing.T) {
	ok := `{"id":"t1.1","status":"committed","reads":[],"writes":[]}` + "\n"
	for _, tc := range []struct{ in, want string }{
		{ok + "{", "line 2: "},
		{ok + `{"id":"t1.2","status":"committed","reads":[{"key":"k"}]}`, `line 2: transaction t1.2: read 0 of "k" has no "writer"`},
		{ok + `{"id":"t1.2","status":"committed","reads":[{"key":"k","writer":7}]}`, "line 2: writer must be null or a transaction id string"},
		{ok + `{"id":"t1.2","status":"committed","wrotes":[]}`, `line 2: json: unknown field "wrotes"`},
		{ok + `{"id":"t1.2","status":"done"}`, `line 2: transaction t1.2: status "done"`},
		{ok + `{"id":"t1.2","status":"committed","reason":"x"}`, "line 2: committed transaction t1.2 has a reason"},
		{ok + `{"id":"x9","status":"committed"}`, "line 2: txn: malformed transaction id"},
		{ok + `{"id":"init","status":"committed"}`, "line 2: transaction id \"init\" names the initial version"},
		{ok + `{"status":"committed"}`, `line 2: missing "id"`},
		{ok + ok, "line 2: duplicate transaction id t1.1 (first on line 1)"},
		{ok + `{"id":"t1.2","status":"committed"} {}`, "line 2: trailing data"},
		{ok + `{"version_order":{"k":["t1.1"]}}` + "\n" + ok, "line 3: content after the version_order line (line 2)"},
		{ok + `{"version_order":{"k":["t1.1","bad"]}}`, `line 2: version_order["k"][1]: txn: malformed`},
		{ok + `{"id":"t1.2","status":"committed","version_order":{}}`, "line 2: a line holds either a transaction or version_order"},
	} {
		_, err := ReadJSONL(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadJSONL(%q) error = %v, want it to contain %q", tc.in, err, tc.want)
		}
	}
}

// TestReadJSONLWithoutAttempts: files written before retries existed (no "attempt", no
// "first") still read, as first attempts.
func TestReadJSONLWithoutAttempts(t *testing.T) {
	h, err := ReadJSONL(strings.NewReader(`{"id":"t1.1","dc":"O","client":"O/1","status":"committed","start_us":1,"end_us":70,"reads":[],"writes":["k1"]}` + "\n"))
	if err != nil || len(h.Txns) != 1 || h.Txns[0].Attempt != 0 || h.Txns[0].First != txn.None {
		t.Fatalf("%+v, %v", h, err)
	}
	if _, err := ReadJSONL(strings.NewReader(`{"id":"t1.2","dc":"O","client":"O/1","status":"committed","start_us":1,"end_us":70,"reads":[],"writes":[],"attempt":-1}`)); err == nil {
		t.Fatal("a negative attempt was accepted")
	}
}
