package sdur

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
)

// world drives S-DUR replicas by hand for the spec's scenarios (§6.2): the test delivers
// payloads to a partition's replicas in the order it lists ("deliver" means adeliver, so the
// Paxos layer is bypassed), and decides which of the messages the replicas sent (votes,
// submissions, snapshot messages) arrive, and when. After every step it checks the invariants of
// §6.1 that hold at every instant (checkInvariants).
type world struct {
	t        *testing.T
	pl       *partitioned.Placement
	replicas []*Replica
	envs     []*fakeEnv
	outbox   []sent
	replies  map[txn.ID]CommitReply
	nowUs    int64
	names    map[string]txn.ID
	txns     map[txn.ID]*history.Txn // for the checker: what each client read and wrote
	// rtOf is, per replica, the reorder threshold of every global pending at the last check
	// (THRESHOLD's invariant 6).
	rtOf    []map[txn.ID]uint64
	logLen  []int           // per replica, its log's length at the last check
	isLocal map[txn.ID]bool // the script's local transactions
	// allCommit is, per replica, the pending globals whose votes were all in and all commit at
	// the last check (invariant 7).
	allCommit []map[txn.ID]bool
}

type sent struct {
	from, to protocol.NodeID
	m        protocol.Message
}

type fakeEnv struct {
	w     *world
	id    protocol.NodeID
	store *store.Store
	rand  *rand.Rand
}

func (e *fakeEnv) NowUs() int64                     { return e.w.nowUs }
func (e *fakeEnv) Rand() *rand.Rand                 { return e.rand }
func (e *fakeEnv) Store() *store.Store              { return e.store }
func (e *fakeEnv) SetTimer(int64, protocol.TimerID) {}
func (e *fakeEnv) Send(to protocol.NodeID, m protocol.Message) {
	e.w.outbox = append(e.w.outbox, sent{e.id, to, m})
}
func (e *fakeEnv) Reply(r protocol.Reply) {
	for _, id := range e.w.names {
		if out, ok := r.Op.(*CommitReply); ok && id.Client() == r.Client {
			e.w.replies[id] = *out
		}
	}
}

// newWorld builds P partitions of R replicas each, all in one datacenter, with params.
func newWorld(t *testing.T, partitions, replicas int, params protocol.Params) *world {
	t.Helper()
	topo := &topology.Topology{Name: "one", DCs: []string{"dc"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	pl, err := partitioned.Spread(topo, partitions, replicas)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, pl: pl, replies: map[txn.ID]CommitReply{}, names: map[string]txn.ID{}, txns: map[txn.ID]*history.Txn{}}
	nodes := pl.Nodes()
	for _, nd := range nodes {
		e := &fakeEnv{w: w, id: nd.ID, store: store.New(), rand: rand.New(rand.NewPCG(1, uint64(nd.ID)))}
		r, err := New(params)(protocol.Config{Self: nd.ID, Nodes: nodes, Topology: topo, Params: params}, e)
		if err != nil {
			t.Fatal(err)
		}
		w.envs = append(w.envs, e)
		w.replicas = append(w.replicas, r.(*Replica))
	}
	return w
}

// key is the scenario's key name: x<i> in partition 0, y<i> in 1, z<i> in 2.
func key(name string) string { return partitioned.Key(int(name[0]-'x'), name) }

// tx names a transaction of the script: it read rs (all at snapshot st of every partition) and
// writes ws. The coordinator is the first replica of its lowest partition.
func (w *world) tx(name string, st uint64, rs, ws string) map[int]*Terminate {
	id := txn.NewID(txn.ClientID(len(w.names)+1), 1)
	w.names[name] = id
	slices := map[int]*Slice{}
	h := &history.Txn{ID: id, Client: name}
	for _, k := range strings.Fields(rs) {
		p := int(k[0] - 'x')
		if slices[p] == nil {
			slices[p] = &Slice{Part: p, St: st}
		}
		slices[p].RS = append(slices[p].RS, key(k))
	}
	for _, k := range strings.Fields(ws) {
		p := int(k[0] - 'x')
		slices[p].WS = append(slices[p].WS, txn.Write{Key: key(k), Value: []byte(name)})
		h.Writes = append(h.Writes, key(k))
	}
	var parts []int
	for p := range w.pl.Partitions() {
		if slices[p] != nil {
			parts = append(parts, p)
		}
	}
	if w.isLocal == nil {
		w.isLocal = map[txn.ID]bool{}
	}
	w.isLocal[id] = len(parts) == 1
	out := map[int]*Terminate{}
	for _, p := range parts {
		out[p] = &Terminate{Tx: id, Slice: *slices[p], Parts: parts, Coord: w.pl.Node[parts[0]][0], Client: id.Client(), Seq: 1}
	}
	w.txns[id] = h
	return out
}

// deliver adelivers payloads, in order, at every replica of partition p (or only at the replicas
// listed in at).
func (w *world) deliver(p int, payloads []Payload, at ...protocol.NodeID) {
	w.t.Helper()
	if at == nil {
		at = w.pl.Node[p]
	}
	for _, n := range at {
		for _, pl := range payloads {
			w.replicas[n].deliver(pl)
			w.checkInvariants()
		}
	}
}

// flush delivers, in send order, every message sent so far (and sent meanwhile) that pass
// accepts (all if nil) to the replica it was sent to; the others stay in flight.
func (w *world) flush(pass func(sent) bool) {
	w.t.Helper()
	var held []sent
	for len(w.outbox) > 0 {
		s := w.outbox[0]
		w.outbox = w.outbox[1:]
		if pass != nil && !pass(s) {
			held = append(held, s)
			continue
		}
		w.replicas[s.to].HandleMessage(s.from, s.m)
		w.checkInvariants()
	}
	w.outbox = held
}

// votesOnly keeps votes and drops everything else.
func votesOnly(s sent) bool { _, ok := s.m.(*Vote); return ok }

// votesTo keeps the votes sent to the listed nodes.
func votesTo(nodes ...protocol.NodeID) func(sent) bool {
	return func(s sent) bool { return votesOnly(s) && slices.Contains(nodes, s.to) }
}

// outcome is transaction name's outcome at the coordinator: "committed", "aborted" or "".
func (w *world) outcome(name string) string {
	r, ok := w.replies[w.names[name]]
	if !ok {
		return ""
	}
	return r.Status.String()
}

// db is the committed sequence of node n (DB), by script names.
func (w *world) db(n protocol.NodeID) []string {
	var out []string
	for _, id := range w.replicas[n].log {
		if w.replicas[n].seen[id].committed {
			out = append(out, w.name(id))
		}
	}
	return out
}

func (w *world) name(id txn.ID) string {
	for n, i := range w.names {
		if i == id {
			return n
		}
	}
	return id.String()
}

func (w *world) pendingNames(n protocol.NodeID) []string {
	var out []string
	for _, p := range w.replicas[n].pending {
		out = append(out, w.name(p.t.Tx))
	}
	return out
}

// checkInvariants checks spec §6.1's instantaneous invariants: (1) the replicas of a partition
// committed the same sequence, one a prefix of the other; (2) no global is committed at one of
// its partitions and aborted at another; (4) every snapshot a replica holds is consistent with
// every committed global; (5) no pending transaction writes a key it did not read; (6) the
// threshold discipline; (7) vote stability; (8) in VOTEBCAST no local is pending.
func (w *world) checkInvariants() {
	w.t.Helper()
	w.checkThreshold()
	w.checkVoteStability()
	for p, reps := range w.pl.Node {
		for _, n := range reps[1:] {
			a, b := w.replicas[reps[0]].log, w.replicas[n].log
			k := min(len(a), len(b))
			if !slices.Equal(a[:k], b[:k]) {
				w.t.Fatalf("invariant 1: partition %d's replicas completed %v and %v", p, a, b)
			}
		}
	}
	outcome := map[txn.ID]bool{}
	for _, r := range w.replicas {
		for id, s := range r.seen {
			if !s.completed {
				continue
			}
			if c, ok := outcome[id]; ok && c != s.committed {
				w.t.Fatalf("invariant 2: %s committed at one partition and aborted at another", w.name(id))
			}
			outcome[id] = s.committed
		}
		for _, p := range r.pending {
			if r.validSlice(p.t.Slice) != "" {
				w.t.Fatalf("invariant 5: %s pending with a blind write", w.name(p.t.Tx))
			}
			if r.cfg.mode == VoteBcast && !p.global {
				w.t.Fatalf("invariant 8: local %s pending in VOTEBCAST", w.name(p.t.Tx))
			}
		}
	}
	for _, r := range w.replicas {
		if r.snapM > 0 && !r.cfg.noReconcile {
			if msg := w.inconsistent(r.snapS); msg != "" {
				w.t.Fatalf("invariant 4: snapshot %d %v: %s", r.snapM, r.snapS, msg)
			}
		}
	}
}

// checkVoteStability checks invariant 7: a global whose votes were all commit at a replica
// commits there.
func (w *world) checkVoteStability() {
	w.t.Helper()
	if w.allCommit == nil {
		w.allCommit = make([]map[txn.ID]bool, len(w.replicas))
	}
	for n, r := range w.replicas {
		for id := range w.allCommit[n] {
			if s := r.seen[id]; s.completed && !s.committed {
				w.t.Fatalf("invariant 7: %s aborted at node %d although every partition voted commit", w.name(id), n)
			}
		}
		now := map[txn.ID]bool{}
		for _, p := range r.pending {
			if all, commit := r.allVotes(p); p.global && all && commit {
				now[p.t.Tx] = true
			}
		}
		w.allCommit[n] = now
	}
}

// checkThreshold checks invariant 6 on the THRESHOLD replicas, one step (one delivery or one
// message) after the last check: a global that completed since had DC ≥ its rt; a local that
// joined PL since sits ahead of globals only, each still inside its window (DC ≤ rt).
func (w *world) checkThreshold() {
	w.t.Helper()
	if w.rtOf == nil {
		w.rtOf, w.logLen = make([]map[txn.ID]uint64, len(w.replicas)), make([]int, len(w.replicas))
	}
	for n, r := range w.replicas {
		if r.cfg.mode != Threshold {
			continue
		}
		before := w.rtOf[n]
		now := map[txn.ID]uint64{}
		for i, p := range r.pending {
			if p.global {
				now[p.t.Tx] = p.rt
				continue
			}
			if _, old := before[p.t.Tx]; old {
				continue
			}
			for _, q := range r.pending[i+1:] {
				if !q.global || r.dc > q.rt {
					w.t.Fatalf("invariant 6: local %s placed ahead of %s (global %v, rt %d) at DC %d", w.name(p.t.Tx), w.name(q.t.Tx), q.global, q.rt, r.dc)
				}
			}
		}
		for id, rt := range before {
			if _, still := now[id]; !still && r.seen[id].completed && r.dc < rt {
				w.t.Fatalf("invariant 6: global %s completed at DC %d < rt %d", w.name(id), r.dc, rt)
			}
		}
		for _, id := range r.log[w.logLen[n]:] { // a local that completed in this step jumped the globals still pending
			if !w.isLocal[id] {
				continue
			}
			for g, rt := range now {
				if _, was := before[g]; was && r.dc > rt {
					w.t.Fatalf("invariant 6: local %s completed ahead of %s at DC %d > rt %d", w.name(id), w.name(g), r.dc, rt)
				}
			}
		}
		w.logLen[n] = len(r.log)
		for _, p := range r.pending {
			if !p.global {
				now[p.t.Tx] = 0 // locals are remembered too, so that only new ones are checked
			}
		}
		w.rtOf[n] = now
	}
}

// inconsistent describes a committed global that snapshot s fractures, or returns "".
func (w *world) inconsistent(s []uint64) string {
	slot := map[txn.ID]map[int]uint64{} // T[i], from each partition's first replica
	for p, reps := range w.pl.Node {
		for i, id := range w.replicas[reps[0]].log {
			if !w.replicas[reps[0]].seen[id].committed {
				continue
			}
			if slot[id] == nil {
				slot[id] = map[int]uint64{}
			}
			slot[id][p] = uint64(i + 1)
		}
	}
	for id, at := range slot {
		in, out := 0, 0
		for p, sc := range at {
			if sc <= s[p] {
				in++
			} else {
				out++
			}
		}
		if in > 0 && out > 0 {
			return fmt.Sprintf("%s is inside at some partitions and outside at others", w.name(id))
		}
	}
	return ""
}

// read is a read-only transaction name reading keys at snapshot s from the first replica of each
// partition; it returns the writers read, by script name, and records it for the checker.
func (w *world) read(name string, s []uint64, keys ...string) []string {
	id := txn.NewID(txn.ClientID(len(w.names)+1), 1)
	w.names[name] = id
	h := &history.Txn{ID: id, Client: name, Status: txn.Committed}
	var out []string
	for _, k := range keys {
		p := int(k[0] - 'x')
		v := w.envs[w.pl.Node[p][0]].store.GetAt(key(k), s[p])
		h.Reads = append(h.Reads, txn.Read{Key: key(k), Version: v.Writer})
		out = append(out, k+"="+w.name(v.Writer))
	}
	w.txns[id] = h
	return out
}

// check runs the serializability checker over the script's transactions: each update
// transaction's reads are those readsOf recorded, its status the coordinator's reply (unknown
// while there is none).
func (w *world) check() checker.Report {
	var h history.History
	ids := make([]txn.ID, 0, len(w.txns))
	for id := range w.txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := *w.txns[id]
		if t.Status == 0 {
			t.Status = txn.Unknown // undecided at its coordinator: the checker decides by the stores
			if r, ok := w.replies[id]; ok {
				t.Status = r.Status
			}
		}
		h.Txns = append(h.Txns, t)
	}
	for r := range w.pl.Node[0] {
		rep := history.Replica{Name: fmt.Sprint("r", r), VersionOrder: map[string][]txn.ID{}}
		for p := range w.pl.Partitions() {
			for k, o := range w.envs[w.pl.Node[p][r]].store.VersionOrder() {
				rep.VersionOrder[k] = o
			}
		}
		h.Replicas = append(h.Replicas, rep)
	}
	return checker.Check(&h, checker.Options{Model: checker.Serializable})
}

// readsOf records that update transaction name read keys at the versions given as key=writer
// ("" for the initial version), for the checker.
func (w *world) readsOf(name string, reads ...string) {
	h := w.txns[w.names[name]]
	for _, r := range reads {
		k, writer, _ := strings.Cut(r, "=")
		h.Reads = append(h.Reads, txn.Read{Key: key(k), Version: w.names[writer]})
	}
}

func payloads(ts ...*Terminate) []Payload {
	out := make([]Payload, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}
