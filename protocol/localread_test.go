package protocol

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// fakeEnv is an Env that records replies and, to catch reads that straddle installs, can install
// a write into its store every time Store is called.
type fakeEnv struct {
	st        *store.Store
	replies   []Reply
	sent      int
	timers    int
	onStore   func(*store.Store)
	storeUses int
}

func (e *fakeEnv) NowUs() int64            { return 0 }
func (e *fakeEnv) Rand() *rand.Rand        { return rand.New(rand.NewPCG(1, 2)) }
func (e *fakeEnv) Send(NodeID, Message)    { e.sent++ }
func (e *fakeEnv) SetTimer(int64, TimerID) { e.timers++ }
func (e *fakeEnv) Reply(r Reply)           { e.replies = append(e.replies, r) }
func (e *fakeEnv) Store() *store.Store {
	e.storeUses++
	if e.onStore != nil {
		e.onStore(e.st)
	}
	return e.st
}

func seeded() *store.Store {
	st := store.New()
	st.Apply(txn.NewID(1, 1), []txn.Write{{Key: "a", Value: []byte("a1")}, {Key: "b", Value: []byte("b1")}})
	st.Apply(txn.NewID(2, 1), []txn.Write{{Key: "a", Value: []byte("a2")}})
	return st
}

func TestServeLocalReadGet(t *testing.T) {
	env := &fakeEnv{st: seeded()}
	for _, c := range []struct {
		key     string
		value   string
		version txn.ID
	}{{"a", "a2", txn.NewID(2, 1)}, {"b", "b1", txn.NewID(1, 1)}, {"missing", "", txn.None}} {
		env.replies = nil
		if !ServeLocalRead(env, Request{Client: 4, Seq: 17, Kind: Get, Key: c.key}) {
			t.Fatalf("Get of %s not served", c.key)
		}
		if len(env.replies) != 1 {
			t.Fatalf("%d replies", len(env.replies))
		}
		r := env.replies[0]
		if r.Client != 4 || r.Seq != 17 || string(r.Value) != c.value || r.Version != c.version || r.Err != "" {
			t.Fatalf("Get(%s) reply %+v, want %q version %v for client 4 seq 17", c.key, r, c.value, c.version)
		}
	}
}

func TestServeLocalReadSnapshotReadsOnePosition(t *testing.T) {
	env := &fakeEnv{st: seeded()}
	// Install another version of a every time the replica looks at its store: a snapshot that
	// read the live store key by key, or re-read the position, would mix positions.
	n := 0
	env.onStore = func(st *store.Store) {
		n++
		st.Apply(txn.NewID(9, uint32(n)), []txn.Write{{Key: "a", Value: []byte("later")}, {Key: "b", Value: []byte("later")}})
	}
	if !ServeLocalRead(env, Request{Client: 2, Seq: 5, Kind: ReadSnapshot, Keys: []string{"b", "a", "missing", "a"}}) {
		t.Fatal("ReadSnapshot not served")
	}
	if len(env.replies) != 1 {
		t.Fatalf("%d replies", len(env.replies))
	}
	r := env.replies[0]
	if r.Client != 2 || r.Seq != 5 || len(r.Snapshot) != 4 {
		t.Fatalf("reply %+v", r)
	}
	// Every read is at the same position: either all "later" from one install, or consistent.
	first := r.Snapshot[0].Version
	for i, sr := range r.Snapshot {
		wantKey := []string{"b", "a", "missing", "a"}[i]
		if sr.Key != wantKey {
			t.Fatalf("snapshot entry %d is for %q, want %q (request order)", i, sr.Key, wantKey)
		}
		if sr.Key == "missing" {
			if sr.Version != txn.None || sr.Value != nil {
				t.Fatalf("missing key read %+v", sr)
			}
			continue
		}
		if sr.Version != first {
			t.Fatalf("snapshot mixes versions %v and %v: %+v", first, sr.Version, r.Snapshot)
		}
	}
}

func TestServeLocalReadSnapshotMatchesStorePosition(t *testing.T) {
	env := &fakeEnv{st: seeded()}
	if !ServeLocalRead(env, Request{Kind: ReadSnapshot, Keys: []string{"a", "b"}}) {
		t.Fatal("not served")
	}
	got := env.replies[0].Snapshot
	if string(got[0].Value) != "a2" || got[0].Version != txn.NewID(2, 1) || string(got[1].Value) != "b1" || got[1].Version != txn.NewID(1, 1) {
		t.Fatalf("snapshot %+v, want a2 by t2.1 and b1 by t1.1", got)
	}
	env.replies = nil
	if !ServeLocalRead(env, Request{Kind: ReadSnapshot}) || len(env.replies) != 1 || len(env.replies[0].Snapshot) != 0 {
		t.Fatalf("empty ReadSnapshot: %+v", env.replies)
	}
}

func TestServeLocalReadLeavesOtherRequests(t *testing.T) {
	env := &fakeEnv{st: seeded()}
	for _, k := range []RequestKind{Commit, 0, 99} {
		if ServeLocalRead(env, Request{Kind: k, Txn: &txn.Txn{}}) {
			t.Errorf("request kind %d was served as a local read", k)
		}
	}
	if len(env.replies) != 0 || env.sent != 0 || env.timers != 0 {
		t.Fatalf("ServeLocalRead had effects for a non-read: %+v", env)
	}
}

func TestValidateCommit(t *testing.T) {
	rd := func(keys ...string) []txn.Read {
		var out []txn.Read
		for _, k := range keys {
			out = append(out, txn.Read{Key: k})
		}
		return out
	}
	wr := func(keys ...string) []txn.Write {
		var out []txn.Write
		for _, k := range keys {
			out = append(out, txn.Write{Key: k})
		}
		return out
	}
	var many []string // more keys than badKey compares pairwise
	for i := range 2 * scanKeysUpTo {
		many = append(many, fmt.Sprint("k", i))
	}
	for _, c := range []struct {
		name string
		tx   *txn.Txn
		want string // substring of the problem; "" for valid
	}{
		{"no transaction", nil, "without a transaction"},
		{"empty transaction", &txn.Txn{}, ""},
		{"reads and writes", &txn.Txn{Reads: rd("a", "b"), Writes: wr("b", "c")}, ""},
		{"same key read and written", &txn.Txn{Reads: rd("k"), Writes: wr("k")}, ""},
		{"empty read key", &txn.Txn{Reads: rd("a", "")}, `"" in read set`},
		{"repeated read key", &txn.Txn{Reads: rd("a", "b", "a")}, `"a" in read set`},
		{"empty write key", &txn.Txn{Writes: wr("")}, `"" in write set`},
		{"repeated write key", &txn.Txn{Reads: rd("w"), Writes: wr("w", "x", "w")}, `"w" in write set`},
		{"many keys", &txn.Txn{Reads: rd(many...), Writes: wr(many...)}, ""},
		{"many keys, one repeated", &txn.Txn{Writes: wr(append(many, "k7")...)}, `"k7" in write set`},
		{"many keys, one empty", &txn.Txn{Reads: rd(append(many, "")...)}, `"" in read set`},
		{"batch id", &txn.Txn{ID: txn.BatchID(0, 1)}, "batch"},
		{"batch", txn.NewBatch(txn.BatchID(0, 1), []*txn.Txn{{ID: 1}, {ID: 2}}), "batch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ValidateCommit(Request{Kind: Commit, Txn: c.tx})
			if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
				t.Fatalf("ValidateCommit = %q, want %q", got, c.want)
			}
		})
	}
}

// TestAdmitCommit: reads are served, unknown kinds and malformed commits are refused with an
// error naming the protocol, and only a well-formed commit is left to the protocol.
func TestAdmitCommit(t *testing.T) {
	good := &txn.Txn{ID: txn.NewID(1, 1), Writes: []txn.Write{{Key: "x"}}}
	bad := &txn.Txn{ID: txn.NewID(1, 2), Writes: []txn.Write{{Key: "x"}, {Key: "x"}}}
	for _, tc := range []struct {
		req     Request
		admit   bool
		wantErr string
	}{
		{Request{Kind: Get, Key: "x"}, false, ""},
		{Request{Kind: 99}, false, "p: unknown request kind 99"},
		{Request{Kind: Commit, Txn: bad}, false, "p: empty or repeated key"},
		{Request{Kind: Commit}, false, "p: commit request without a transaction"},
		{Request{Kind: Commit, Txn: good}, true, ""},
	} {
		env := &fakeEnv{st: seeded()}
		if got := AdmitCommit(env, tc.req, "p"); got != tc.admit {
			t.Errorf("%+v: admitted %v, want %v", tc.req, got, tc.admit)
		}
		switch {
		case tc.admit && len(env.replies) != 0:
			t.Errorf("%+v: admitted but answered %+v", tc.req, env.replies)
		case !tc.admit && len(env.replies) != 1:
			t.Errorf("%+v: %d replies, want 1", tc.req, len(env.replies))
		case tc.wantErr != "" && !strings.HasPrefix(env.replies[0].Err, tc.wantErr):
			t.Errorf("%+v: error %q, want %q…", tc.req, env.replies[0].Err, tc.wantErr)
		}
	}
}
