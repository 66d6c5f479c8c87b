package chariots

// The per-record CPU cost of every stage's real code, for the simulator's capacity model
// (logsim.Calibrated, docs/BENCHMARKS.md "Chariots stage costs"):
//
//	go test -run '^$' -bench StageCost -benchtime 20000x ./protocols/log/chariots/
//
// Each benchmark drives one stage machine directly, as the network server would: it decodes an
// input from its wire encoding (Codec), hands it to the stage, and encodes everything the stage
// sends or replies. An input carries 1 or 100 records of a 512-byte body (the paper's size), so
// that a fit of PerMessage + k·PerRecord separates the fixed cost of an input from the cost per
// record; ns/record is reported per size. Not measured: the transport (TCP, gRPC), the Pebble
// input log, and the Go runtime's background work.

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/topology"
)

// costEnv is a stage's Env that encodes every message and reply, as the server's transport
// would, and keeps the last assignments and acknowledgements sent for the benchmark's feedback.
type costEnv struct {
	buf     []byte
	assigns []*flstore.Assign
	rng     *rand.Rand
	st      *store.Store
}

func (e *costEnv) NowUs() int64                     { return 0 }
func (e *costEnv) Rand() *rand.Rand                 { return e.rng }
func (e *costEnv) Store() *store.Store              { return e.st }
func (e *costEnv) SetTimer(int64, protocol.TimerID) {}
func (e *costEnv) Send(_ protocol.NodeID, m protocol.Message) {
	e.buf, _ = Codec.Append(e.buf[:0], m)
	if a, ok := m.(*flstore.Assign); ok {
		e.assigns = append(e.assigns, a)
	}
}
func (e *costEnv) Reply(r protocol.Reply) {
	if r.Op != nil {
		e.buf, _ = Codec.Append(e.buf[:0], r.Op)
	}
}

// costDeployment is a two-datacenter deployment with one machine per stage (a sender needs a
// destination), batches flushed at 100 records.
func costDeployment(b *testing.B) (Config, *topology.Topology, protocol.Params) {
	topo, _ := topology.Preset("table4.1")
	topo, _ = topology.Subset(topo, topo.DCs[:2])
	p := protocol.Params{"maintainers": "1", "batch": "100"}
	c, err := ParseConfig(2, p, 40)
	if err != nil {
		b.Fatal(err)
	}
	return c, topo, p
}

// stage builds the first node of role r in datacenter 0.
func stage(b *testing.B, r flstore.Role) (protocol.Replica, *costEnv, Config) {
	c, topo, p := costDeployment(b)
	env := &costEnv{rng: rand.New(rand.NewPCG(1, 2)), st: store.New()}
	self := c.Layout.All(0, r)[0]
	rep, err := Factory(protocol.Config{Self: self, Nodes: c.Layout.Nodes, Topology: topo, Params: p}, env)
	if err != nil {
		b.Fatal(err)
	}
	rep.Start()
	return rep, env, c
}

// encoded returns m's wire encoding.
func encoded(b *testing.B, m protocol.Message) []byte {
	out, err := Codec.Append(nil, m)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// decode parses an input the way the server's transport does.
func decode(b *testing.B, in []byte) protocol.Message {
	m, err := Codec.Decode(in)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

var costBody = make([]byte, 512)

// records returns k records of host, TOIds from 1 (0: local records without one), over dcs.
func records(k, host, dcs int, withTOId bool) []*Record {
	var rs []*Record
	for i := range k {
		r := &Record{Host: host, Body: costBody, Client: 7, AppendSeq: uint64(i + 1), CallSeq: uint64(i + 1)}
		if withTOId {
			r.TOId, r.Deps = uint64(i+1), make([]uint64, dcs)
		}
		rs = append(rs, r)
	}
	return rs
}

// benchSizes runs fn as a sub-benchmark per records-per-input size, reporting ns/record.
func benchSizes(b *testing.B, fn func(b *testing.B, k int)) {
	for _, k := range []int{1, 100} {
		b.Run(fmt.Sprintf("records=%d", k), func(b *testing.B) {
			b.ReportAllocs()
			fn(b, k)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/record")
		})
	}
}

// BenchmarkStageCostBatcher: a client's append (k = 1) or a receiver's batch of other
// datacenters' records (k = 100), buffered and flushed to the filter at 100 records.
func BenchmarkStageCostBatcher(b *testing.B) {
	benchSizes(b, func(b *testing.B, k int) {
		rep, _, c := stage(b, flstore.Batcher)
		if k == 1 {
			in := encoded(b, &flstore.AppendOp{Record: records(1, 0, 2, false)[0]})
			b.ResetTimer()
			for i := range b.N {
				rep.HandleRequest(protocol.Request{Client: 9, Seq: uint64(i + 1), Kind: protocol.Operation, Op: decode(b, in)})
			}
			return
		}
		in := encoded(b, &RecordBatch{Records: records(k, 1, 2, true)})
		from := c.Layout.All(0, flstore.Receiver)[0]
		b.ResetTimer()
		for range b.N {
			rep.HandleMessage(from, decode(b, in))
		}
	})
}

// BenchmarkStageCostFilter: a batcher's batch of k local records, each a new client append.
func BenchmarkStageCostFilter(b *testing.B) {
	benchSizes(b, func(b *testing.B, k int) {
		rep, _, c := stage(b, flstore.Filter)
		in := encoded(b, &RecordBatch{Records: records(k, 0, 2, false)})
		from := c.Layout.All(0, flstore.Batcher)[0]
		seq := uint64(0)
		b.ResetTimer()
		for range b.N {
			m := decode(b, in).(*RecordBatch)
			for _, r := range m.Records {
				seq++
				r.AppendSeq = seq
			}
			rep.HandleMessage(from, m)
		}
	})
}

// BenchmarkStageCostQueue: a filter's numbered batch of k local records reaching the queue that
// holds the token, which assigns them positions and sends them to the maintainer, and the
// maintainer's acknowledgements of them.
func BenchmarkStageCostQueue(b *testing.B) {
	benchSizes(b, func(b *testing.B, k int) {
		rep, env, c := stage(b, flstore.Queue)
		in := encoded(b, &RecordBatch{Seq: 1, Records: records(k, 0, 2, false)})
		from, maint := c.Layout.All(0, flstore.Filter)[0], c.Layout.All(0, flstore.Maintainer)[0]
		b.ResetTimer()
		for i := range b.N {
			m := decode(b, in).(*RecordBatch)
			m.Seq = uint64(i + 1)
			rep.HandleMessage(from, m)
			for _, a := range env.assigns {
				ack := &flstore.PersistAck{}
				for _, r := range a.Records {
					ack.LIds = append(ack.LIds, r.LId)
				}
				rep.HandleMessage(maint, decode(b, encoded(b, ack)))
			}
			env.assigns = env.assigns[:0]
		}
	})
}

// BenchmarkStageCostMaintainer: a queue's assignment of k local records at new positions,
// persisted, acknowledged and answered to their clients.
func BenchmarkStageCostMaintainer(b *testing.B) {
	benchSizes(b, func(b *testing.B, k int) {
		rep, _, c := stage(b, flstore.Maintainer)
		in := encoded(b, &flstore.Assign{Records: records(k, 0, 2, true), Journal: c.InitialJournal(0)})
		from := c.Layout.All(0, flstore.Queue)[0]
		lid := uint64(0)
		b.ResetTimer()
		for range b.N {
			m := decode(b, in).(*flstore.Assign)
			for _, r := range m.Records {
				lid++
				r.LId, r.TOId = lid, lid
			}
			rep.HandleMessage(from, m)
		}
	})
}

// BenchmarkStageCostSender: k own records fetched from the maintainer, shipped to the other
// datacenter on the next period, then acknowledged by the destination's table (so that the
// sender's cache stays at its steady-state size).
func BenchmarkStageCostSender(b *testing.B) {
	benchSizes(b, func(b *testing.B, k int) {
		rep, _, c := stage(b, flstore.Sender)
		in := encoded(b, &flstore.FetchResp{Records: records(k, 0, 2, true)})
		maint, recv := c.Layout.All(0, flstore.Maintainer)[0], c.Layout.All(0, flstore.Receiver)[0]
		toid := uint64(0)
		b.ResetTimer()
		for range b.N {
			m := decode(b, in).(*flstore.FetchResp)
			for _, r := range m.Records {
				toid++
				r.TOId = toid
			}
			rep.HandleMessage(maint, m)
			rep.HandleTimer(shipTimer)
			rep.HandleMessage(recv, decode(b, encoded(b, &TableUpdate{Table: [][]uint64{{toid, 0}, {toid, 0}}})))
		}
	})
}

// BenchmarkStageCostReceiver: another datacenter's shipment of k records with its table,
// forwarded to a batcher and to the senders.
func BenchmarkStageCostReceiver(b *testing.B) {
	benchSizes(b, func(b *testing.B, k int) {
		rep, _, c := stage(b, flstore.Receiver)
		in := encoded(b, &ShipBatch{FromDC: 1, Records: records(k, 1, 2, true), Table: [][]uint64{{0, 0}, {0, 0}}})
		from := c.Layout.All(1, flstore.Sender)[0]
		b.ResetTimer()
		for range b.N {
			rep.HandleMessage(from, decode(b, in))
		}
	})
}

// BenchmarkStageCostStandalone: a client's append to a standalone FLStore maintainer (one
// record per request: FLStore's clients do not batch), placed, persisted and answered.
func BenchmarkStageCostStandalone(b *testing.B) {
	p := protocol.Params{"maintainers": "1"}
	l, err := flstore.LayoutFromParams(1, flstore.Roles, p, map[flstore.Role]int{flstore.Maintainer: 1, flstore.Indexer: 1})
	if err != nil {
		b.Fatal(err)
	}
	topo := &topology.Topology{Name: "one", DCs: []string{"X"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	env := &costEnv{rng: rand.New(rand.NewPCG(1, 2)), st: store.New()}
	rep, err := flstore.Factory(protocol.Config{Self: l.Active(0, flstore.Maintainer)[0], Nodes: l.Nodes, Topology: topo, Params: p}, env)
	if err != nil {
		b.Fatal(err)
	}
	rep.Start()
	in := encoded(b, &flstore.AppendOp{Record: records(1, 0, 1, false)[0]})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rep.HandleRequest(protocol.Request{Client: 9, Seq: uint64(i + 1), Kind: protocol.Operation, Op: decode(b, in)})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}
