//go:build linux

package chariots_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/log/logtest"
	"github.com/meridian-kv/meridian/topology"
)

// stageCosts sums, per role, the CPU time the stage code took: its handlers, and the encoding
// and decoding (chariots.Codec) of every message it sends, as a real node's transport does.
type stageCosts map[flstore.Role]time.Duration

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's resource usage.
const rusageThread = 1

// threadCPU reads the calling thread's CPU time (user plus system): unlike the wall clock, it
// does not count the time the thread waits for a core on a loaded machine.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timedReplica times a stage machine's handlers.
type timedReplica struct {
	protocol.Replica
	role  flstore.Role
	costs stageCosts
}

func (t *timedReplica) time(f func()) {
	start := threadCPU()
	f()
	t.costs[t.role] += threadCPU() - start
}

func (t *timedReplica) Start() { t.time(t.Replica.Start) }
func (t *timedReplica) HandleTimer(id protocol.TimerID) {
	t.time(func() { t.Replica.HandleTimer(id) })
}
func (t *timedReplica) HandleRequest(r protocol.Request) {
	t.time(func() { t.Replica.HandleRequest(r) })
}
func (t *timedReplica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	t.time(func() { t.Replica.HandleMessage(from, m) })
}

// codecEnv passes every message a stage sends through the codec, as the network would.
type codecEnv struct {
	protocol.Env
	b *testing.B
}

func (e codecEnv) Send(to protocol.NodeID, m protocol.Message) {
	enc, err := chariots.Codec.Append(nil, m)
	if err != nil {
		e.b.Fatal(err)
	}
	dec, err := chariots.Codec.Decode(enc)
	if err != nil {
		e.b.Fatal(err)
	}
	e.Env.Send(to, dec)
}

// BenchmarkStageCPU appends 512-byte records from both datacenters of a two-datacenter
// deployment (one machine per stage, two maintainers) driven by hand (logtest), and reports
// the stage code's CPU time per record appended for every role, per machine (thread CPU time
// around each handler: its handlers plus the codec of the messages it sends; garbage collection
// running on other threads is not counted), without the network runtime (input log, fsync,
// sockets, gRPC). Every datacenter's stages handle every record (their own and the other
// datacenter's).
//
//	go test ./protocols/log/chariots -run '^$' -bench StageCost -benchtime 20000x
func BenchmarkStageCPU(b *testing.B) {
	runtime.LockOSThread() // threadCPU reads this goroutine's thread
	defer runtime.UnlockOSThread()
	topo, _ := topology.Preset("table4.1")
	topo, _ = topology.Subset(topo, topo.DCs[:2])
	params := protocol.Params{}
	cfg, err := chariots.ParseConfig(topo.N(), params, 40)
	if err != nil {
		b.Fatal(err)
	}
	costs := stageCosts{}
	factory := func(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
		r, err := chariots.Factory(pc, codecEnv{env, b})
		return &timedReplica{Replica: r, role: cfg.Layout.Role[pc.Self], costs: costs}, err
	}
	w, err := logtest.New(topo, cfg.Layout.Nodes, factory, params)
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 512)
	const perMs = 20 // appends per datacenter per simulated millisecond
	clear(costs)     // Start is not a per-record cost
	b.ResetTimer()
	for i := range b.N {
		dc := i % topo.N()
		seq := uint64(i/topo.N() + 1)
		w.Request(txn.ClientID(dc+1), seq, cfg.Layout.Active(dc, flstore.Batcher)[0],
			&flstore.AppendOp{Record: &flstore.Record{Body: body, AppendSeq: seq}})
		if i%(perMs*topo.N()) == 0 {
			w.RunUntil(w.NowUs() + 1000)
		}
	}
	w.RunUntil(w.NowUs() + 2_000_000)
	b.StopTimer()
	if len(w.Replies) != b.N {
		b.Fatalf("%d appends answered of %d", len(w.Replies), b.N)
	}
	var total time.Duration
	for _, r := range chariots.Roles {
		total += costs[r]
		b.ReportMetric(float64(costs[r].Nanoseconds())/float64(b.N)/float64(len(cfg.Layout.All(0, r))*topo.N()), fmt.Sprintf("ns/rec/%s", r))
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/rec/all-stages")
}
