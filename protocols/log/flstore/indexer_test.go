package flstore_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/topology"
)

// diskEnv is a protocol.Env with a Disk (protocol.DiskEnv) that keeps the replies.
type diskEnv struct {
	discardEnv
	disk    *store.MemDisk
	replies []protocol.Reply
}

func (e *diskEnv) Disk() protocol.Disk         { return e.disk }
func (e *diskEnv) Reply(r protocol.Reply)      { e.replies = append(e.replies, r) }
func (e *diskEnv) lastReply() protocol.Message { return e.replies[len(e.replies)-1].Op }

// TestIndexerCheckpointRoundTrip indexes tagged positions, restores the indexer's checkpoint
// into a fresh indexer over the same Disk (as a restarted node finds it) and checks that
// lookups by tag answer as before, that the checkpoint holds no posting list (its size does not
// grow with the entries beyond their count), and that an entry sent again is not listed twice.
func TestIndexerCheckpointRoundTrip(t *testing.T) {
	params := protocol.Params{"maintainers": "1"}
	l, err := flstore.LayoutFromParams(1, flstore.Roles, params, map[flstore.Role]int{flstore.Maintainer: 1, flstore.Indexer: 1})
	if err != nil {
		t.Fatal(err)
	}
	topo := &topology.Topology{Name: "one", DCs: []string{"X"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	m, x := l.Active(0, flstore.Maintainer)[0], l.Active(0, flstore.Indexer)[0]
	start := func(disk *store.MemDisk) (protocol.Replica, *diskEnv) {
		env := &diskEnv{discardEnv: discardEnv{rand: rand.New(rand.NewPCG(1, 2)), store: store.New()}, disk: disk}
		r, err := flstore.Factory(protocol.Config{Self: x, Nodes: l.Nodes, Topology: topo, Params: params}, env)
		if err != nil {
			t.Fatal(err)
		}
		r.Start()
		return r, env
	}
	journal := flstore.Journal{{StartLId: 1, Maintainers: []protocol.NodeID{m}, B: 10}}
	lookups := []*flstore.LookupOp{
		{Tag: "a", Op: flstore.Any, MaxLId: flstore.None, Journal: journal},
		{Tag: "a", Op: flstore.Any, MaxLId: 40, Limit: 3, MostRecentFirst: true, Journal: journal},
		{Tag: "a", Op: flstore.Gt, Value: []byte("v3"), MaxLId: flstore.None, Limit: 2, Journal: journal},
		{Tag: "ab", Op: flstore.Eq, Value: nil, MaxLId: flstore.None, Journal: journal},
		{Tag: "b", Op: flstore.Any, MaxLId: 0, Journal: journal},
	}
	lookup := func(r protocol.Replica, env *diskEnv) []*flstore.LookupResult {
		var out []*flstore.LookupResult
		for _, op := range lookups {
			r.HandleRequest(protocol.Request{Kind: protocol.Operation, Op: op})
			out = append(out, env.lastReply().(*flstore.LookupResult))
		}
		return out
	}
	disk := store.NewMemDisk()
	r, env := start(disk)
	var sizes []int
	for round := range 2 {
		var add flstore.IndexAdd
		for i := range 25 {
			lid := uint64(round*50 + 2*i + 1)
			add.Entries = append(add.Entries, flstore.IndexEntry{Tag: "a", Value: []byte{'v', byte('0' + i%10)}, LId: lid},
				flstore.IndexEntry{Tag: "ab", LId: lid + 1})
		}
		add.Through, add.Epochs = uint64(round*50+50), 1
		r.HandleMessage(m, &add)
		r.HandleMessage(m, &add) // resent: listed once
		ckpt, err := r.(protocol.Checkpointer).AppendCheckpoint(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(ckpt))
		before := lookup(r, env)
		restored, renv := start(disk.Clone())
		if err := restored.(protocol.Checkpointer).RestoreCheckpoint(ckpt, nil); err != nil {
			t.Fatal(err)
		}
		after := lookup(restored, renv)
		for i := range before {
			if !slices.Equal(before[i].LIds, after[i].LIds) || before[i].Covered != after[i].Covered {
				t.Fatalf("round %d, lookup %+v: %+v before the checkpoint, %+v after", round, lookups[i], before[i], after[i])
			}
		}
		if got := len(before[0].LIds); got != 25*(round+1) {
			t.Fatalf("round %d: tag a lists %d positions, want %d", round, got, 25*(round+1))
		}
	}
	if sizes[1] > 16 {
		t.Fatalf("checkpoints of %v bytes: they hold more than the count and the claims", sizes)
	}
	res := lookup(r, env)
	for i, want := range map[int][]uint64{1: {39, 37, 35}, 2: {9, 11}} {
		if !slices.Equal(res[i].LIds, want) {
			t.Fatalf("lookup %+v: %v, want %v", lookups[i], res[i].LIds, want)
		}
	}
	if len(res[3].LIds) != 50 || !res[1].Covered || len(res[4].LIds) != 0 {
		t.Fatalf("tag ab: %d positions, want 50; covered up to 40 %v; up to position 0: %v", len(res[3].LIds), res[1].Covered, res[4].LIds)
	}
}
