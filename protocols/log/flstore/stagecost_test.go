package flstore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/topology"
)

// discardEnv is a protocol.Env that keeps nothing: the stage's outputs are dropped.
type discardEnv struct {
	nowUs int64
	rand  *rand.Rand
	store *store.Store
}

func (e *discardEnv) NowUs() int64                           { return e.nowUs }
func (e *discardEnv) Rand() *rand.Rand                       { return e.rand }
func (e *discardEnv) Store() *store.Store                    { return e.store }
func (e *discardEnv) Send(protocol.NodeID, protocol.Message) {}
func (e *discardEnv) SetTimer(int64, protocol.TimerID)       {}
func (e *discardEnv) Reply(protocol.Reply)                   {}

// standaloneStage starts node role of a one-datacenter FLStore with one maintainer and one
// indexer on an environment that discards what it sends; it returns the stage, its environment
// and the layout.
func standaloneStage(b *testing.B, role flstore.Role) (protocol.Replica, *discardEnv, *flstore.Layout) {
	b.Helper()
	params := protocol.Params{"maintainers": "1"}
	l, err := flstore.LayoutFromParams(1, flstore.Roles, params, map[flstore.Role]int{flstore.Maintainer: 1, flstore.Indexer: 1})
	if err != nil {
		b.Fatal(err)
	}
	topo := &topology.Topology{Name: "one", DCs: []string{"X"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	env := &discardEnv{rand: rand.New(rand.NewPCG(1, 2)), store: store.New()}
	r, err := flstore.Factory(protocol.Config{Self: l.Active(0, role)[0], Nodes: l.Nodes, Topology: topo, Params: params}, env)
	if err != nil {
		b.Fatal(err)
	}
	r.Start()
	return r, env, l
}

// standaloneMaintainer starts one maintainer (no indexer running).
func standaloneMaintainer(b *testing.B) (protocol.Replica, *discardEnv) {
	b.Helper()
	r, env, _ := standaloneStage(b, flstore.Maintainer)
	return r, env
}

// BenchmarkMaintainerAppend is the stage code of one standalone maintainer (no indexer) taking
// 512-byte appends with one tag: the CPU per record of FLStore's maintainer without the network
// runtime (compare `meridian log bench` on a real maintainer, docs/BENCHMARKS.md).
//
//	go test ./protocols/log/flstore -run '^$' -bench MaintainerAppend
func BenchmarkMaintainerAppend(b *testing.B) {
	r, env := standaloneMaintainer(b)
	body := make([]byte, 512)
	tags := []flstore.Tag{{Name: "k", Value: []byte("v")}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		env.nowUs += 10
		r.HandleRequest(protocol.Request{Client: txn.ClientID(1 + i%64), Seq: uint64(i + 1), Kind: protocol.Operation,
			Op: &flstore.AppendOp{Record: &flstore.Record{Body: body, Tags: tags, AppendSeq: uint64(i + 1)}}})
	}
}

// BenchmarkMaintainerCheckpoint is one standalone maintainer's checkpoint after a log of N
// untagged 512-byte records (tags would add index entries that no indexer acknowledges here): its size (bytes/ckpt) and the CPU of writing it (ns/op), which must not
// grow with N now that the records live on the maintainer's Disk (docs/BENCHMARKS.md).
//
//	go test ./protocols/log/flstore -run '^$' -bench MaintainerCheckpoint
func BenchmarkMaintainerCheckpoint(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 300_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			r, _ := standaloneMaintainer(b)
			body := make([]byte, 512)
			for i := range n {
				r.HandleRequest(protocol.Request{Client: txn.ClientID(1 + i%64), Seq: uint64(i + 1), Kind: protocol.Operation,
					Op: &flstore.AppendOp{Record: &flstore.Record{Body: body, AppendSeq: uint64(i + 1)}}})
			}
			benchCheckpoint(b, r)
		})
	}
}

// standaloneIndexer starts the indexer, and returns it with the maintainer that feeds it.
func standaloneIndexer(b *testing.B) (protocol.Replica, protocol.NodeID) {
	b.Helper()
	r, _, l := standaloneStage(b, flstore.Indexer)
	return r, l.Active(0, flstore.Maintainer)[0]
}

// indexBatch is the IndexAdd of positions from..from+n-1, each tagged with one of 1,000 keys
// (a Hyksos put's tag) and an 8-byte value.
func indexBatch(from uint64, n int) *flstore.IndexAdd {
	add := &flstore.IndexAdd{Through: from + uint64(n) - 1, Epochs: 1}
	for l := from; l < from+uint64(n); l++ {
		add.Entries = append(add.Entries, flstore.IndexEntry{Tag: fmt.Sprintf("key:%d", l%1000), Value: []byte("01234567"), LId: l})
	}
	return add
}

// BenchmarkIndexerAdd is the stage code of an indexer taking IndexAdds of 100 entries: the CPU
// per entry (ns/op is per entry).
//
//	go test ./protocols/log/flstore -run '^$' -bench IndexerAdd
func BenchmarkIndexerAdd(b *testing.B) {
	r, m := standaloneIndexer(b)
	const batch = 100
	adds := make([]*flstore.IndexAdd, 0, b.N/batch+1)
	for l := 1; l <= b.N; l += batch {
		adds = append(adds, indexBatch(uint64(l), batch))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, add := range adds {
		r.HandleMessage(m, add)
	}
}

// BenchmarkIndexerCheckpoint is an indexer's checkpoint after N tagged records: its size
// (bytes/ckpt) and the CPU of writing it (ns/op), which must not grow with N now that the
// posting lists live on the indexer's Disk (docs/BENCHMARKS.md).
//
//	go test ./protocols/log/flstore -run '^$' -bench IndexerCheckpoint
func BenchmarkIndexerCheckpoint(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 300_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			r, m := standaloneIndexer(b)
			for l := 1; l <= n; l += 100 {
				r.HandleMessage(m, indexBatch(uint64(l), 100))
			}
			benchCheckpoint(b, r)
		})
	}
}

// benchCheckpoint times r's checkpoints and reports their size.
func benchCheckpoint(b *testing.B, r protocol.Replica) {
	var ckpt []byte
	var err error
	b.ResetTimer()
	for range b.N {
		if ckpt, err = r.(protocol.Checkpointer).AppendCheckpoint(ckpt[:0], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ckpt)), "bytes/ckpt")
}
