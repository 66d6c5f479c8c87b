package pcc

import (
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

type fakeEnv struct {
	st      *store.Store
	replies []protocol.Reply
}

func (e *fakeEnv) NowUs() int64                           { return 0 }
func (e *fakeEnv) Rand() *rand.Rand                       { return rand.New(rand.NewPCG(1, 2)) }
func (e *fakeEnv) Send(protocol.NodeID, protocol.Message) {}
func (e *fakeEnv) SetTimer(int64, protocol.TimerID)       {}
func (e *fakeEnv) Reply(r protocol.Reply)                 { e.replies = append(e.replies, r) }
func (e *fakeEnv) Store() *store.Store                    { return e.st }
func (e *fakeEnv) last() protocol.Reply                   { return e.replies[len(e.replies)-1] }
func get(id txn.ID, key string) protocol.Request {
	return protocol.Request{Client: id.Client(), Kind: protocol.Get, Key: key, TxnID: id}
}
func commit(t *txn.Txn) protocol.Request {
	return protocol.Request{Client: t.ID.Client(), Kind: protocol.Commit, Txn: t}
}
func write(id txn.ID, kv ...string) *txn.Txn {
	t := &txn.Txn{ID: id}
	for i := 0; i < len(kv); i += 2 {
		t.Writes = append(t.Writes, txn.Write{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return t
}

// TestReadsSeeTheSnapshotOfTheFirstRead is §4.2: a transaction's reads all come from the
// position of its first read, however many transactions are applied meanwhile.
func TestReadsSeeTheSnapshotOfTheFirstRead(t *testing.T) {
	env := &fakeEnv{st: store.New()}
	e := New(env, "test", ReadOnlyOrdered)
	w1, reader, w2 := txn.NewID(1, 1), txn.NewID(2, 1), txn.NewID(3, 1)
	e.Deliver(write(w1, "x", "1", "y", "1"))

	e.Admit(get(reader, "x"))
	if got := env.last().Version; got != w1 {
		t.Fatalf("first read of x saw %v, want %v", got, w1)
	}
	e.Deliver(write(w2, "x", "2", "y", "2"))
	e.Admit(get(reader, "y"))
	if got := env.last().Version; got != w1 {
		t.Fatalf("second read saw y by %v after the snapshot, want %v (the snapshot's)", got, w1)
	}
	e.Admit(get(txn.NewID(4, 1), "y"))
	if got := env.last().Version; got != w2 {
		t.Fatalf("a new transaction read y by %v, want the latest %v", got, w2)
	}
}

// TestDeliverValidatesReadsAndAnswersTheOrigin is §4.4: a transaction whose read was
// overwritten before its position aborts and installs nothing; a valid one commits; only the
// transactions submitted at this replica get an answer.
func TestDeliverValidatesReadsAndAnswersTheOrigin(t *testing.T) {
	env := &fakeEnv{st: store.New()}
	e := New(env, "test", ReadOnlyOrdered)
	a, b := txn.NewID(1, 1), txn.NewID(2, 1)
	ta := &txn.Txn{ID: a, Reads: []txn.Read{{Key: "x", Version: txn.None}}, Writes: []txn.Write{{Key: "x", Value: []byte("a")}}}
	tb := &txn.Txn{ID: b, Reads: []txn.Read{{Key: "x", Version: txn.None}}, Writes: []txn.Write{{Key: "y", Value: []byte("b")}}}
	if _, ok := e.Admit(commit(ta)); !ok {
		t.Fatal("a well-formed commit was not admitted")
	}
	if !e.Deliver(ta) {
		t.Fatal("a valid transaction aborted")
	}
	if r := env.last(); r.Status != txn.Committed || r.Client != 1 {
		t.Fatalf("origin got %+v, want committed for client 1", r)
	}
	replies := len(env.replies)
	if e.Deliver(tb) {
		t.Fatal("a transaction that read an overwritten version committed")
	}
	if len(env.replies) != replies {
		t.Fatal("a transaction of another replica's client was answered here")
	}
	if v := env.st.Get("y"); v.Writer != txn.None {
		t.Fatalf("an aborted transaction installed y (writer %v)", v.Writer)
	}
	if e.Waiting() != 0 {
		t.Fatalf("%d transactions still wait", e.Waiting())
	}
}

// TestReadOnlyModes: in ReadOnlyLocal mode a read-only transaction commits at once without
// being ordered; in ReadOnlyOrdered mode it is ordered like an update.
func TestReadOnlyModes(t *testing.T) {
	ro := &txn.Txn{ID: txn.NewID(1, 1), Reads: []txn.Read{{Key: "x"}}}
	env := &fakeEnv{st: store.New()}
	if _, ok := New(env, "test", ReadOnlyLocal).Admit(commit(ro)); ok || env.last().Status != txn.Committed {
		t.Fatalf("local read-only: ordered=%v reply=%+v", ok, env.last())
	}
	env = &fakeEnv{st: store.New()}
	if _, ok := New(env, "test", ReadOnlyOrdered).Admit(commit(ro)); !ok || len(env.replies) != 0 {
		t.Fatalf("ordered read-only: ordered=%v replies=%v", ok, env.replies)
	}
}

// TestAdmitRefusesBadRequests: a malformed commit and a second commit of a transaction already
// waiting get an error, and neither is ordered.
func TestAdmitRefusesBadRequests(t *testing.T) {
	env := &fakeEnv{st: store.New()}
	e := New(env, "test", ReadOnlyOrdered)
	if _, ok := e.Admit(protocol.Request{Kind: protocol.Commit}); ok || env.last().Err == "" {
		t.Fatalf("a commit without a transaction was admitted (reply %+v)", env.last())
	}
	tx := write(txn.NewID(1, 1), "x", "1")
	e.Admit(commit(tx))
	if _, ok := e.Admit(commit(tx)); ok || env.last().Err == "" {
		t.Fatalf("a duplicate commit was admitted (reply %+v)", env.last())
	}
}

// TestSnapshotsAreBounded: transactions that read and never commit do not grow the replica's
// memory past MaxSnapshots.
func TestSnapshotsAreBounded(t *testing.T) {
	env := &fakeEnv{st: store.New()}
	e := New(env, "test", ReadOnlyOrdered)
	for i := range MaxSnapshots + 10 {
		e.Admit(get(txn.NewID(1, uint32(i+1)), "x"))
	}
	if len(e.snapshots) != MaxSnapshots || len(e.snapshotOrder) != MaxSnapshots {
		t.Fatalf("%d snapshots, %d in order; want %d", len(e.snapshots), len(e.snapshotOrder), MaxSnapshots)
	}
	if _, ok := e.snapshots[txn.NewID(1, 1)]; ok {
		t.Fatal("the oldest snapshot was kept")
	}
}

// TestAbandonAbortsTheWaitingClient: a transaction the ordering layer gives up on is answered
// with an abort at its origin, once; elsewhere Abandon does nothing.
func TestAbandonAbortsTheWaitingClient(t *testing.T) {
	env := &fakeEnv{st: store.New()}
	e := New(env, "test", ReadOnlyOrdered)
	tx := write(txn.NewID(1, 1), "x", "1")
	e.Admit(commit(tx))
	e.Abandon(tx, "gone")
	if r := env.last(); r.Status != txn.Aborted || r.Reason != "gone" || e.Waiting() != 0 {
		t.Fatalf("reply %+v, %d waiting; want an abort for reason gone and none waiting", r, e.Waiting())
	}
	e.Abandon(tx, "gone")
	if len(env.replies) != 1 {
		t.Fatalf("%d replies, want 1", len(env.replies))
	}
}

// TestCheckpointHoldsOnlyLiveSnapshots: a checkpoint lists the snapshots still held, not the ids
// of transactions submitted for commit that snapshotOrder keeps until it fills up (before, a checkpoint grew
// to MaxSnapshots entries, about 0.9 MB, in a long run), and restores them in order.
func TestCheckpointHoldsOnlyLiveSnapshots(t *testing.T) {
	env := &fakeEnv{st: store.New()}
	e := New(env, "test", ReadOnlyOrdered)
	for i := range 100 {
		id := txn.NewID(1, uint32(i+1))
		e.Admit(get(id, "x"))
		if i != 50 {
			e.Admit(commit(write(id, "x", "v"))) // submitted for commit: its snapshot is forgotten
		}
	}
	w := wire.NewWriter(nil)
	e.Checkpoint(w)
	b, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r := New(env, "test", ReadOnlyOrdered)
	rd := wire.NewReader(b)
	r.Restore(rd)
	if err := rd.Done(); err != nil {
		t.Fatal(err)
	}
	if live := txn.NewID(1, 51); len(r.snapshotOrder) != 1 || r.snapshotOrder[0] != live || r.snapshots[live] != e.snapshots[live] {
		t.Fatalf("restored snapshots %v (%v), want only %v at %d", r.snapshotOrder, r.snapshots, live, e.snapshots[live])
	}
}
