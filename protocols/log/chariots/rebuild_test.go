package chariots

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// answered returns the client appends (client, append number) answered so far.
func (w *world) answered() map[[2]uint64]bool {
	got := map[[2]uint64]bool{}
	for _, r := range w.Replies {
		if _, ok := r.Op.(*flstore.AppendResult); ok && r.Err == "" {
			got[[2]uint64{uint64(r.Client), r.Seq}] = true
		}
	}
	return got
}

// retryUntilAnswered resends every unanswered append of the clients (of datacenter dc[i] for
// clients[i]) every 50 ms, as the client library does, until all are answered or untilUs.
func (w *world) retryUntilAnswered(dcs []int, clients []txn.ClientID, untilUs int64) {
	w.t.Helper()
	for w.NowUs() < untilUs {
		got, missing := w.answered(), 0
		for i, c := range clients {
			for seq := uint64(1); seq <= w.seqs[c]; seq++ {
				if !got[[2]uint64{uint64(c), seq}] {
					missing++
					w.appendSeq(dcs[i], 0, c, seq, "retry")
				}
			}
		}
		if missing == 0 {
			return
		}
		w.RunUntil(w.NowUs() + 50_000)
	}
	w.t.Fatalf("appends still unanswered at %d µs", w.NowUs())
}

// gen returns datacenter dc's coordinating queue's token generation.
func (w *world) gen(dc int) uint64 { return w.Reps[w.node(dc, flstore.Queue, 0)].(*Queue).gen }

// TestQueueRestartEmpty restarts A's only queue (the coordinator) after its assignments to one
// maintainer were lost, while the other maintainer persisted later positions (spec 5.13, the
// token rebuild): no append above the hole is answered before the restart; the rebuild
// truncates A's log to its stable prefix, and the clients' retries and B's resends bring
// every record back, each once, in causal order (the checker after every event).
func TestQueueRestartEmpty(t *testing.T) {
	w, above := queueRestart(t, protocol.Params{"maintainers": "2"})
	for dc, log := range w.snapshot().Logs {
		if n := len(log); n != 16 {
			t.Fatalf("datacenter %d logged %d records, want 16", dc, n)
		}
	}
	t.Logf("%d records above the hole truncated and logged again", above)
}

// TestAnswerOnPersistCaught is the rebuild's negative control: maintainers that answer an
// append on persisting it (before the head of the log passes it) let the rebuild truncate an
// answered append, which no client retries: it is missing from the converged logs.
func TestAnswerOnPersistCaught(t *testing.T) {
	w, _ := queueRestart(t, protocol.Params{"maintainers": "2", UnsafeAnswerOnPersist: "true"})
	if n := len(w.snapshot().Logs[dcA]); n >= 16 {
		t.Fatalf("A logged %d of 16 answered appends: the truncation of an answered append was not seen", n)
	} else {
		t.Logf("caught: A logged %d of 16 answered appends", n)
	}
}

// queueRestart runs TestQueueRestartEmpty's scenario with params until every append is
// answered and the logs converged, and returns the world and how many records were above A's
// hole before the restart.
func queueRestart(t *testing.T, params protocol.Params) (*world, int) {
	w := newWorld(t, 2, params)
	q, m1 := w.node(dcA, flstore.Queue, 0), w.node(dcA, flstore.Maintainer, 1)
	w.RunUntil(1000) // the first token is built (generation 1)
	lost := true
	w.Drop = func(from, to protocol.NodeID, m protocol.Message) bool {
		_, assign := m.(*flstore.Assign)
		return lost && assign && from == q && to == m1
	}
	clients, dcs := []txn.ClientID{1, 2, 3, 4}, []int{dcA, dcA, dcB, dcB}
	for i := range 16 {
		w.appendAt(dcs[i%4], clients[i%4], "r")
		w.RunUntil(w.NowUs() + 3000)
	}
	w.RunUntil(w.NowUs() + 20_000)
	s := w.snapshot()
	above := 0
	for l := range s.Logs[dcA] {
		if l > s.prefix(dcA) {
			above++
		}
	}
	if above == 0 {
		t.Fatalf("no record persisted above A's hole at %d: the test checks nothing", s.prefix(dcA)+1)
	}
	answeredAbove := false
	for _, r := range w.Replies {
		if a, ok := r.Op.(*flstore.AppendResult); ok && r.Client <= 2 && a.LId > s.prefix(dcA) {
			answeredAbove = true
		}
	}
	if answeredAbove != (params[UnsafeAnswerOnPersist] == "true") {
		t.Fatalf("an append above the hole at %d answered: %v", s.prefix(dcA)+1, answeredAbove)
	}
	before := w.gen(dcA)
	w.restart(q)
	lost = false
	w.retryUntilAnswered(dcs, clients, w.NowUs()+3_000_000)
	w.converged(w.NowUs() + 3_000_000)
	if w.gen(dcA) <= before {
		t.Fatalf("generation %d after the restart, %d before: no rebuild", w.gen(dcA), before)
	}
	return w, above
}

// TestLastQueueRestartEmpty restarts the second queue of A's ring while its assignments are
// lost: it asks the coordinator for a rebuild (RebuildReq), which truncates the holes it left.
func TestLastQueueRestartEmpty(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"queues": "2", "maintainers": "2"})
	q2 := w.node(dcA, flstore.Queue, 1)
	w.RunUntil(1000)
	lost := true
	w.Drop = func(from, _ protocol.NodeID, m protocol.Message) bool {
		_, assign := m.(*flstore.Assign)
		return lost && assign && from == q2
	}
	clients, dcs := []txn.ClientID{1, 2, 3}, []int{dcA, dcA, dcB}
	for i := range 12 {
		w.appendAt(dcs[i%3], clients[i%3], "r")
		w.RunUntil(w.NowUs() + 3000)
	}
	w.RunUntil(w.NowUs() + 20_000)
	if s := w.snapshot(); s.prefix(dcA) == uint64(len(s.Logs[dcA])) {
		t.Fatal("no hole in A's log: the test checks nothing")
	}
	before := w.gen(dcA)
	w.restart(q2)
	lost = false
	w.retryUntilAnswered(dcs, clients, w.NowUs()+3_000_000)
	s := w.converged(w.NowUs() + 3_000_000)
	if w.gen(dcA) <= before {
		t.Fatal("no rebuild after the second queue restarted")
	}
	for dc := range 2 {
		if n := len(s.Logs[dc]); n != 12 {
			t.Fatalf("datacenter %d logged %d records, want 12", dc, n)
		}
	}
}

// rebuilds returns how many token rebuilds datacenter dc's coordinating queue started.
func (w *world) rebuilds(dc int) uint64 {
	return w.Reps[w.node(dc, flstore.Queue, 0)].(*Queue).Rebuilds()
}

// untilHolds runs until queue q holds the token.
func (w *world) untilHolds(q protocol.NodeID) {
	w.t.Helper()
	for end := w.NowUs() + 1_000_000; w.Reps[q].(*Queue).tok == nil; w.RunUntil(w.NowUs() + 100) {
		if w.NowUs() > end {
			w.t.Fatalf("queue %d never held the token", q)
		}
	}
}

// TestTokenHolderCutOff cuts A's second queue off while it holds the token, for 3 s (three times
// the token timeout an earlier design had): a late token is not a lost one, so there is no
// rebuild; the ring waits, and once the cut heals every record is logged once.
func TestTokenHolderCutOff(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"queues": "2"})
	q2 := w.node(dcA, flstore.Queue, 1)
	w.RunUntil(1000)
	cut := false
	w.Drop = func(from, to protocol.NodeID, m protocol.Message) bool { return cut && (from == q2 || to == q2) }
	clients, dcs := []txn.ClientID{1, 2, 3}, []int{dcA, dcA, dcB}
	for i := range 6 {
		w.appendAt(dcs[i%3], clients[i%3], "r")
		w.RunUntil(w.NowUs() + 3000)
	}
	w.untilHolds(q2)
	gen := w.gen(dcA)
	cut = true
	for i := range 6 {
		w.appendAt(dcs[i%3], clients[i%3], "r")
		w.RunUntil(w.NowUs() + 500_000)
	}
	if w.gen(dcA) != gen || w.rebuilds(dcA) != 1 {
		t.Fatalf("token rebuilt while its holder was cut off (generation %d, was %d; %d rebuilds)", w.gen(dcA), gen, w.rebuilds(dcA))
	}
	cut = false
	w.retryUntilAnswered(dcs, clients, w.NowUs()+3_000_000)
	s := w.converged(w.NowUs() + 3_000_000)
	if w.rebuilds(dcA) != 1 {
		t.Fatalf("%d rebuilds, want only the first build", w.rebuilds(dcA))
	}
	for dc := range 2 {
		if n := len(s.Logs[dc]); n != 12 {
			t.Fatalf("datacenter %d logged %d records, want 12", dc, n)
		}
	}
}

// TestHolderRestartOneRebuild restarts the queue holding A's token, empty, while clients append
// (the token is lost with it): the restarted queue announces its start and the coordinator
// rebuilds the token exactly once (the second queue), or the restarted coordinator builds it
// once at its start and no other queue asks again (the first); every append is answered and
// logged once in both datacenters.
func TestHolderRestartOneRebuild(t *testing.T) {
	for _, i := range []int{1, 0} {
		t.Run(fmt.Sprintf("queue%d", i+1), func(t *testing.T) {
			w := newWorld(t, 2, protocol.Params{"queues": "2", "maintainers": "2"})
			q := w.node(dcA, flstore.Queue, i)
			w.RunUntil(1000)
			clients, dcs := []txn.ClientID{1, 2, 3}, []int{dcA, dcA, dcB}
			for k := range 9 {
				w.appendAt(dcs[k%3], clients[k%3], "r")
				w.RunUntil(w.NowUs() + 2000)
			}
			w.untilHolds(q)
			before := w.rebuilds(dcA)
			w.restart(q)
			for k := range 9 {
				w.appendAt(dcs[k%3], clients[k%3], "r")
				w.RunUntil(w.NowUs() + 2000)
			}
			w.retryUntilAnswered(dcs, clients, w.NowUs()+3_000_000)
			s := w.converged(w.NowUs() + 3_000_000)
			want := before + 1 // the coordinator's rebuild on the second queue's RebuildReq
			if i == 0 {
				want = 1 // the restarted coordinator's build at start, counted from its restart
			}
			if got := w.rebuilds(dcA); got != want {
				t.Fatalf("%d rebuilds, want %d", got, want)
			}
			for _, o := range w.cfg.Layout.All(dcA, flstore.Queue) {
				if g := w.Reps[o].(*Queue).gen; g != w.gen(dcA) {
					t.Fatalf("queue %d is in generation %d, the coordinator in %d", o, g, w.gen(dcA))
				}
			}
			for dc := range 2 {
				if n := len(s.Logs[dc]); n != 18 {
					t.Fatalf("datacenter %d logged %d records, want 18", dc, n)
				}
			}
		})
	}
}

// TestMaintainerLostDisk restarts one of A's maintainers with an empty disk (spec 5.13, our
// choice: no other node holds its ranges, so it must not come back as if nothing happened):
// its first gossip from a peer shows it positions at or below the head of the log that it does
// not hold, and it stops (Failure), answering every request with the reason. A token rebuild
// afterwards (the coordinator restarted) does not truncate the other maintainer's records below
// the head of the log: the datacenter stops taking appends instead.
func TestMaintainerLostDisk(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"maintainers": "2"})
	m0, m1 := w.node(dcA, flstore.Maintainer, 0), w.node(dcA, flstore.Maintainer, 1)
	for i := range 12 {
		w.appendAt(dcA, txn.ClientID(1+i%2), "r")
		w.RunUntil(w.NowUs() + 3000)
	}
	w.converged(2_000_000)
	held := len(w.Reps[m0].(*flstore.LogMaintainer).State().Filled)
	hl := w.Reps[m0].(*flstore.LogMaintainer).State().HL
	w.AfterEvent = nil // the records m1 held are gone: the invariants no longer hold, by design
	if err := w.Restart(m1); err != nil {
		t.Fatal(err)
	}
	w.RunUntil(w.NowUs() + 20_000)
	err := w.Reps[m1].(*flstore.LogMaintainer).Failure()
	if err == nil || !strings.Contains(err.Error(), "lost its records") {
		t.Fatalf("maintainer %d restarted empty reports %v, want that it lost its records", m1, err)
	}
	w.Request(99, 1, m1, &flstore.ReadOp{From: 1, To: 10})
	w.RunUntil(w.NowUs() + 1000)
	if r := w.Replies[len(w.Replies)-1]; r.Client != 99 || !strings.Contains(r.Err, "restore its data directory") {
		t.Fatalf("a read at the stopped maintainer got %+v, want the reason", r)
	}
	w.restart(w.node(dcA, flstore.Queue, 0)) // a rebuild: it must not truncate below hl
	w.appendAt(dcA, 1, "after")
	w.RunUntil(w.NowUs() + 500_000)
	st := w.Reps[m0].(*flstore.LogMaintainer).State()
	if len(st.Filled) != held || st.HL != hl {
		t.Fatalf("maintainer %d holds %d records with head of log %d after the rebuild, had %d and %d", m0, len(st.Filled), st.HL, held, hl)
	}
}

// TestRecentRuns: assignments of one client's consecutive appends merge into one run; the row
// and the logged appends as of a position inside a run count the run's positions up to it only.
func TestRecentRuns(t *testing.T) {
	cfg, err := ParseConfig(2, protocol.Params{}, 40)
	if err != nil {
		t.Fatal(err)
	}
	tk := &Token{MaxTOId: []uint64{0, 0}, Logged: map[txn.ClientID]*seqSet{}, Journal: cfg.InitialJournal(0)}
	q := &Queue{tok: tk, dc: 0, unacked: map[uint64]*pendingAssign{}}
	for seq := range uint64(5) { // client 7's appends 1..5, then a record of host 1, then client 8's
		q.assign(&Record{Host: 0, TOId: seq + 1, Client: 7, AppendSeq: seq + 1})
	}
	q.assign(&Record{Host: 1, TOId: 1})
	q.assign(&Record{Host: 0, TOId: 6, Client: 8, AppendSeq: 1})
	if len(tk.Recent) != 3 || tk.Recent[0].N != 5 {
		t.Fatalf("runs %+v, want 3 with the first of 5", tk.Recent)
	}
	if !validRecent(tk) {
		t.Fatal("the runs are refused")
	}
	if got := fmt.Sprint(tk.rowAt(3), tk.rowAt(6)); got != "[3 0] [5 1]" {
		t.Fatalf("rows as of 3 and 6: %s, want [3 0] [5 1]", got)
	}
	logged := tk.loggedAt(3, 0)
	if !logged[7].has(3) || logged[7].has(4) || logged[8].has(1) {
		t.Fatalf("logged as of 3: client 7 %+v, client 8 %+v", logged[7], logged[8])
	}
	tk.trimRecent(4) // the first run is partly stable: it stays
	if len(tk.Recent) != 3 {
		t.Fatalf("trimmed to %+v", tk.Recent)
	}
	tk.trimRecent(5)
	if len(tk.Recent) != 2 || !validRecent(tk) {
		t.Fatalf("trimmed to %+v", tk.Recent)
	}
	tk.Recent[0].N = 9 // past LastLId
	if validRecent(tk) {
		t.Fatal("a run past the last position was taken")
	}
}
