package chariots

import (
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
	w := newWorld(t, 2, protocol.Params{"maintainers": "2"})
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
	for _, r := range w.Replies {
		if a, ok := r.Op.(*flstore.AppendResult); ok && r.Client <= 2 && a.LId > s.prefix(dcA) {
			t.Fatalf("client %d's append answered at position %d, above the hole at %d", r.Client, a.LId, s.prefix(dcA)+1)
		}
	}
	before := w.gen(dcA)
	w.restart(q)
	lost = false
	w.retryUntilAnswered(dcs, clients, w.NowUs()+3_000_000)
	s = w.converged(w.NowUs() + 3_000_000)
	if w.gen(dcA) <= before {
		t.Fatalf("generation %d after the restart, %d before: no rebuild", w.gen(dcA), before)
	}
	for dc := range 2 {
		if n := len(s.Logs[dc]); n != 16 {
			t.Fatalf("datacenter %d logged %d records, want 16", dc, n)
		}
	}
	t.Logf("%d records above the hole truncated and logged again", above)
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

// TestTokenTimeoutRebuild cuts A's second queue off while it holds the token for longer than
// the token timeout: the coordinator rebuilds the token without it; when the queue comes back,
// its token and assignments of the old generation are dropped, and every record is logged once.
func TestTokenTimeoutRebuild(t *testing.T) {
	w := newWorld(t, 2, protocol.Params{"queues": "2", "token_timeout": "100ms", "hold": "2ms"})
	q2 := w.node(dcA, flstore.Queue, 1)
	w.RunUntil(1000)
	cut := false
	w.Drop = func(from, to protocol.NodeID, m protocol.Message) bool { return cut && (from == q2 || to == q2) }
	clients, dcs := []txn.ClientID{1, 2, 3}, []int{dcA, dcA, dcB}
	for i := range 6 {
		w.appendAt(dcs[i%3], clients[i%3], "r")
		w.RunUntil(w.NowUs() + 3000)
	}
	for w.Reps[q2].(*Queue).tok == nil { // until q2 holds the token
		w.RunUntil(w.NowUs() + 100)
	}
	before := w.gen(dcA)
	cut = true
	for i := range 6 {
		w.appendAt(dcs[i%3], clients[i%3], "r")
		w.RunUntil(w.NowUs() + 50_000)
	}
	if w.gen(dcA) <= before {
		t.Fatal("no rebuild while the token holder was cut off")
	}
	cut = false
	w.retryUntilAnswered(dcs, clients, w.NowUs()+3_000_000)
	s := w.converged(w.NowUs() + 3_000_000)
	if g := w.Reps[q2].(*Queue).gen; g != w.gen(dcA) {
		t.Fatalf("the second queue is in generation %d, the coordinator in %d", g, w.gen(dcA))
	}
	for dc := range 2 {
		if n := len(s.Logs[dc]); n != 12 {
			t.Fatalf("datacenter %d logged %d records, want 12", dc, n)
		}
	}
}
