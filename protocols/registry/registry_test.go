package registry_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	_ "github.com/meridian-kv/meridian/protocols/all"
	"github.com/meridian-kv/meridian/protocols/fullrep/helios"
	"github.com/meridian-kv/meridian/protocols/fullrep/mf"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/topology"
)

// TestCodecsCarryRealTraffic runs Helios and Message Futures (the protocols whose log entries it
// knows; the others' codecs have their own tests) on a five-datacenter topology with
// every peer message, request and reply passed through its wire encoding, and checks that each
// decodes to exactly what was sent, that every transaction is decided, and that the replicas
// converge. It is the check that the codecs cover every message shape the protocols produce.
func TestCodecsCarryRealTraffic(t *testing.T) {
	for _, name := range []string{"helios-0", "helios-1", "helios-2", "helios-b", "mf"} {
		t.Run(name, func(t *testing.T) {
			e, err := registry.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if e.Codec == nil {
				t.Fatal("no codec")
			}
			runOverWire(t, e)
		})
	}
}

type delivery struct {
	atUs     int64
	seq      int
	from, to int
	msg      protocol.Message
}

type timer struct {
	atUs int64
	id   protocol.TimerID
}

type cluster struct {
	t        *testing.T
	codec    protocol.Codec
	topo     *topology.Topology
	nowUs    int64
	seq      int
	inflight []delivery
	replicas []protocol.Replica
	envs     []*env
	replies  map[txn.ClientID][]protocol.Reply
	kinds    map[string]int // entry kinds seen on the wire
}

type env struct {
	c      *cluster
	self   int
	store  *store.Store
	rand   *rand.Rand
	timers []timer
}

func (e *env) NowUs() int64        { return e.c.nowUs }
func (e *env) Rand() *rand.Rand    { return e.rand }
func (e *env) Store() *store.Store { return e.store }
func (e *env) SetTimer(afterUs int64, id protocol.TimerID) {
	e.timers = append(e.timers, timer{e.c.nowUs + afterUs, id})
}

func (e *env) Send(to protocol.NodeID, m protocol.Message) {
	c := e.c
	b, err := c.codec.Append(nil, m)
	if err != nil {
		c.t.Fatalf("encoding %T: %v", m, err)
	}
	got, err := c.codec.Decode(b)
	if err != nil {
		c.t.Fatalf("decoding %T: %v", m, err)
	}
	forgetKeyNumbers(reflect.ValueOf(m))
	if !reflect.DeepEqual(got, m) {
		c.t.Fatalf("message changed on the wire:\nsent %+v\n got %+v", m, got)
	}
	c.countKinds(got)
	delay := int64(c.topo.RTTMs[e.self][to] * 500)
	if to == 1 {
		delay = 700_000 // slow links into datacenter 1: Helios-f's grace time passes and it NACKs
	}
	c.seq++
	c.inflight = append(c.inflight, delivery{c.nowUs + delay, c.seq, e.self, int(to), got})
}

func (e *env) Reply(r protocol.Reply) {
	b, err := wire.AppendReply(nil, &r)
	if err != nil {
		e.c.t.Fatalf("encoding reply: %v", err)
	}
	got, err := wire.DecodeReply(b)
	if err != nil || !reflect.DeepEqual(got, r) {
		e.c.t.Fatalf("reply changed on the wire (%v):\nsent %+v\n got %+v", err, r, got)
	}
	e.c.replies[r.Client] = append(e.c.replies[r.Client], got)
}

func (c *cluster) countKinds(m protocol.Message) {
	switch m := m.(type) {
	case *helios.Message:
		for _, r := range m.Records {
			e := r.Payload
			c.kinds[fmt.Sprintf("helios kind %d committed %t", e.Kind, e.Committed)]++
		}
	case *mf.Message:
		for _, r := range m.Records {
			e := r.Payload
			c.kinds[fmt.Sprintf("mf finished %t committed %t", e.Finished, e.Committed)]++
		}
	}
}

// request passes req through its wire encoding to replica dc.
func (c *cluster) request(dc int, req protocol.Request) {
	b, err := wire.AppendRequest(nil, &req)
	if err != nil {
		c.t.Fatalf("encoding request: %v", err)
	}
	got, err := wire.DecodeRequest(b)
	if err != nil || !reflect.DeepEqual(got, req) {
		c.t.Fatalf("request changed on the wire (%v):\nsent %+v\n got %+v", err, req, got)
	}
	c.replicas[dc].HandleRequest(got)
}

func runOverWire(t *testing.T, e registry.Entry) {
	topo, _ := topology.Preset("aws-helios")
	n := topo.N()
	c := &cluster{t: t, codec: e.Codec, topo: topo, nowUs: 1_000_000, replies: map[txn.ClientID][]protocol.Reply{}, kinds: map[string]int{}}
	var nodes []protocol.Node
	for dc := range n {
		nodes = append(nodes, protocol.Node{ID: protocol.NodeID(dc), DC: dc})
	}
	for dc := range n {
		en := &env{c: c, self: dc, store: store.New(), rand: rand.New(rand.NewPCG(1, uint64(dc)))}
		r, err := e.New(protocol.Config{Self: protocol.NodeID(dc), Nodes: nodes, Topology: topo}, en)
		if err != nil {
			t.Fatal(err)
		}
		c.envs, c.replicas = append(c.envs, en), append(c.replicas, r)
	}
	for _, r := range c.replicas {
		r.Start()
	}
	rng := rand.New(rand.NewPCG(7, 7))
	commits := 0
	const stepUs, issueUntilUs, endUs = 1000, 1_500_000, 6_000_000
	for c.nowUs < endUs {
		c.nowUs += stepUs
		slices.SortFunc(c.inflight, func(a, b delivery) int { return cmp.Or(cmp.Compare(a.atUs, b.atUs), cmp.Compare(a.seq, b.seq)) })
		for len(c.inflight) > 0 && c.inflight[0].atUs <= c.nowUs {
			d := c.inflight[0]
			c.inflight = c.inflight[1:]
			c.replicas[d.to].HandleMessage(protocol.NodeID(d.from), d.msg)
		}
		for dc, en := range c.envs {
			due := en.timers
			en.timers = nil
			for _, tm := range due {
				if tm.atUs <= c.nowUs {
					c.replicas[dc].HandleTimer(tm.id)
				} else {
					en.timers = append(en.timers, tm)
				}
			}
		}
		if c.nowUs < issueUntilUs && c.nowUs%20_000 == 0 {
			for dc := range n {
				commits++
				client := txn.ClientID(commits)
				a, b := fmt.Sprintf("k%d", rng.IntN(30)), fmt.Sprintf("k%d", 30+rng.IntN(30))
				c.request(dc, protocol.Request{Client: client, Seq: 1, Kind: protocol.ReadSnapshot, Keys: []string{a, b}})
				snap := c.replies[client][0].Snapshot
				tx := &txn.Txn{ID: txn.NewID(client, 1),
					Reads:  []txn.Read{{Key: a, Version: snap[0].Version}, {Key: b, Version: snap[1].Version}},
					Writes: []txn.Write{{Key: a, Value: []byte(txn.NewID(client, 1).String())}}}
				c.request(dc, protocol.Request{Client: client, Seq: 2, Kind: protocol.Get, Key: b})
				c.request(dc, protocol.Request{Client: client, Seq: 3, Kind: protocol.Commit, Txn: tx})
			}
		}
	}
	status := map[txn.Status]int{}
	for client := range commits {
		rs := c.replies[txn.ClientID(client+1)]
		if len(rs) != 3 {
			t.Fatalf("client %d got %d replies, want 3: %+v", client+1, len(rs), rs)
		}
		status[rs[2].Status]++
	}
	if status[txn.Committed] == 0 || status[txn.Aborted] == 0 || status[txn.Committed]+status[txn.Aborted] != commits {
		t.Errorf("outcomes %v of %d transactions", status, commits)
	}
	for dc := 1; dc < n; dc++ {
		if a, b := c.envs[0].store.VersionOrder(), c.envs[dc].store.VersionOrder(); !reflect.DeepEqual(a, b) {
			t.Errorf("datacenter %d's store differs from datacenter 0's", dc)
		}
	}
	t.Logf("outcomes %v; entries on the wire %v", status, c.kinds)
	var want []string
	switch e.Name {
	case "mf":
		want = []string{"mf finished false committed false", "mf finished true committed true", "mf finished true committed false"}
	case "helios-1", "helios-2":
		want = append(want, "helios kind 3 committed false")
		fallthrough
	default:
		want = append(want, "helios kind 1 committed false", "helios kind 2 committed true", "helios kind 2 committed false")
	}
	for _, k := range want {
		if c.kinds[k] == 0 {
			t.Errorf("no %q entry went over the wire", k)
		}
	}
}

// forgetKeyNumbers drops the key numbers the replicas kept in the transactions v reaches
// (txn.Txn.ForgetKeyNumbers): a cache, which the wire does not carry.
func forgetKeyNumbers(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if t, ok := v.Interface().(*txn.Txn); ok { // v is reached through exported fields only
			t.ForgetKeyNumbers()
			for _, m := range t.Members {
				m.ForgetKeyNumbers()
			}
			return
		}
		forgetKeyNumbers(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				forgetKeyNumbers(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			forgetKeyNumbers(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			forgetKeyNumbers(it.Value())
		}
	}
}
