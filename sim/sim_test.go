package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// ---- A tiny test protocol ----------------------------------------------------------------------

// ping is the test protocol's only message. SentUs is the virtual time at which the sender's
// effects left it, so receivers can measure one-way delays.
type ping struct {
	From   protocol.NodeID
	Seq    uint64 // per directed link, from 1
	SentUs int64
	Size   int
}

func (p *ping) SizeBytes() int { return p.Size }

// entry is one observable event of a run: a handler call, or a reply reaching a client.
type entry struct {
	AtUs    int64 // virtual time
	Node    protocol.NodeID
	Kind    string // start, msg, req, timer, reply
	From    protocol.NodeID
	Seq     uint64
	LocalUs int64 // the node's clock reading (env.NowUs)
	Rand    uint64
}

func (e entry) String() string {
	return fmt.Sprintf("%d node%d %s from=%d seq=%d local=%d rand=%d", e.AtUs, e.Node, e.Kind, e.From, e.Seq, e.LocalUs, e.Rand)
}

type send struct {
	From, To protocol.NodeID
	Seq      uint64
	AtUs     int64
}

// recorder collects what every replica of one run observed.
type recorder struct {
	sim     *Sim
	entries []entry
	sends   []send
	arrived []ping
	arrTo   []protocol.NodeID
	arrAt   []int64
}

func (r *recorder) now() int64 {
	if r.sim == nil {
		return 0 // during New: Start runs at virtual time 0
	}
	return r.sim.NowUs()
}

// pingOpts configures the test protocol.
type pingOpts struct {
	intervalUs int64 // 0: no timer, no pings
	burst      int   // pings per peer per tick (default 1)
	size       int   // message size in bytes
	useRand    bool  // add env.Rand() noise to the timer interval
}

// pinger pings every peer on a timer, records arrivals, and answers Get/ReadSnapshot from its
// store and Commit by applying the writes.
type pinger struct {
	cfg  protocol.Config
	env  protocol.Env
	rec  *recorder
	opts pingOpts
	seq  map[protocol.NodeID]uint64
}

func pingFactory(rec *recorder, opts pingOpts) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		return &pinger{cfg: cfg, env: env, rec: rec, opts: opts, seq: map[protocol.NodeID]uint64{}}, nil
	}
}

func (p *pinger) log(kind string, from protocol.NodeID, seq uint64, rnd uint64) {
	p.rec.entries = append(p.rec.entries, entry{AtUs: p.rec.now(), Node: p.cfg.Self, Kind: kind, From: from, Seq: seq, LocalUs: p.env.NowUs(), Rand: rnd})
}

func (p *pinger) Start() {
	p.log("start", -1, 0, 0)
	p.tick()
}

func (p *pinger) tick() {
	if p.opts.intervalUs == 0 {
		return
	}
	burst := max(p.opts.burst, 1)
	for _, nd := range p.cfg.Nodes {
		if nd.ID == p.cfg.Self {
			continue
		}
		for range burst {
			p.seq[nd.ID]++
			m := &ping{From: p.cfg.Self, Seq: p.seq[nd.ID], SentUs: p.rec.now(), Size: p.opts.size}
			p.rec.sends = append(p.rec.sends, send{From: p.cfg.Self, To: nd.ID, Seq: m.Seq, AtUs: m.SentUs})
			p.env.Send(nd.ID, m)
		}
	}
	after := p.opts.intervalUs
	if p.opts.useRand {
		after += p.env.Rand().Int64N(1000)
	}
	p.env.SetTimer(after, 1)
}

func (p *pinger) HandleMessage(from protocol.NodeID, m protocol.Message) {
	pg := m.(*ping)
	p.log("msg", from, pg.Seq, 0)
	p.rec.arrived = append(p.rec.arrived, *pg)
	p.rec.arrTo = append(p.rec.arrTo, p.cfg.Self)
	p.rec.arrAt = append(p.rec.arrAt, p.rec.now())
}

func (p *pinger) HandleRequest(req protocol.Request) {
	p.log("req", protocol.NodeID(-int32(req.Client)), req.Seq, 0)
	if protocol.ServeLocalRead(p.env, req) {
		return
	}
	if msg := protocol.ValidateCommit(req); msg != "" {
		p.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: msg})
		return
	}
	p.env.Store().Apply(req.Txn.ID, req.Txn.Writes)
	p.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Status: txn.Committed})
}

func (p *pinger) HandleTimer(id protocol.TimerID) {
	var rnd uint64
	if p.opts.useRand {
		rnd = p.env.Rand().Uint64()
	}
	p.log("timer", -1, uint64(id), rnd)
	p.tick()
}

// ---- Helpers -----------------------------------------------------------------------------------

// threeDCs: A–B 200 ms (σ 4), A–C 100 ms (σ 10), B–C 60 ms (σ 6).
func threeDCs() *topology.Topology {
	return &topology.Topology{
		Name:     "test3",
		DCs:      []string{"A", "B", "C"},
		RTTMs:    [][]float64{{0, 200, 100}, {200, 0, 60}, {100, 60, 0}},
		StdDevMs: [][]float64{{0, 4, 10}, {4, 0, 6}, {10, 6, 0}},
	}
}

const dcA, dcB, dcC = 0, 1, 2

func newSim(t *testing.T, cfg Config, opts pingOpts) (*Sim, *recorder) {
	t.Helper()
	rec := &recorder{}
	if cfg.Topology == nil {
		cfg.Topology = threeDCs()
	}
	cfg.Factory = pingFactory(rec, opts)
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rec.sim = s
	return s, rec
}

// oneWay is the exact delay between two datacenters of threeDCs with no jitter, in µs.
func oneWay(topo *topology.Topology, a, b int) int64 { return int64(topo.RTTMs[a][b] / 2 * 1000) }

// arrivals returns, per directed link, the arrived pings in arrival order with their arrival time.
type arrival struct {
	ping
	To   protocol.NodeID
	AtUs int64
}

func (r *recorder) arrivalsOn(from, to protocol.NodeID) []arrival {
	var out []arrival
	for i, p := range r.arrived {
		if p.From == from && r.arrTo[i] == to {
			out = append(out, arrival{ping: p, To: to, AtUs: r.arrAt[i]})
		}
	}
	return out
}

func (r *recorder) allArrivals() []arrival {
	out := make([]arrival, len(r.arrived))
	for i, p := range r.arrived {
		out[i] = arrival{ping: p, To: r.arrTo[i], AtUs: r.arrAt[i]}
	}
	return out
}

type linkSeq struct {
	from, to protocol.NodeID
	seq      uint64
}

// ---- Determinism -------------------------------------------------------------------------------

// busyConfig exercises everything that draws randomness or reorders events.
func busyConfig(seed uint64, jitter float64) Config {
	return Config{
		Seed: seed, Jitter: jitter,
		ClockOffsetUs: []int64{0, 1500, -700}, ClockDriftPPM: []float64{0, 30, -12},
		ClientHopUs: 500, IntraDCUs: 100,
		Nodes: []protocol.Node{{ID: 0, DC: dcA}, {ID: 1, DC: dcA}, {ID: 2, DC: dcB}, {ID: 3, DC: dcC}},
		Faults: []Fault{
			{Kind: Outage, DC: "B", StartUs: 1_000_000, EndUs: 1_500_000},
			{Kind: Partition, DC: "A", Peer: "C", StartUs: 2_000_000, EndUs: 2_300_000},
			{Kind: Slow, DC: "A", Peer: "B", StartUs: 2_500_000, EndUs: 3_000_000, ExtraUs: 40_000},
		},
		Service: Service{PerMessageUs: 50, PerKBUs: 10, PerRequestUs: 200, PerCommitUs: 300},
	}
}

// runTrace runs cfg for 4 s with pings and a client per node issuing requests, and returns the
// full event trace.
func runTrace(t *testing.T, cfg Config, opts pingOpts) ([]entry, Stats) {
	t.Helper()
	s, rec := newSim(t, cfg, opts)
	for i := range s.Nodes() {
		c, err := s.Connect(txn.ClientID(i+1), protocol.NodeID(i))
		if err != nil {
			t.Fatal(err)
		}
		var loop func(k uint32)
		loop = func(k uint32) {
			if k > 30 {
				return
			}
			req := protocol.Request{Seq: uint64(k), Kind: protocol.Get, Key: "x"}
			if k%3 == 0 {
				req = protocol.Request{Seq: uint64(k), Kind: protocol.Commit,
					Txn: &txn.Txn{ID: txn.NewID(txn.ClientID(i+1), k), Writes: []txn.Write{{Key: "x", Value: []byte{byte(k)}}}}}
			}
			c.Call(req, func(r protocol.Reply) {
				rec.entries = append(rec.entries, entry{AtUs: s.NowUs(), Node: protocol.NodeID(i), Kind: "reply", Seq: r.Seq})
				c.After(int64(k)*1000, func() { loop(k + 1) })
			})
		}
		c.After(0, func() { loop(1) })
	}
	s.RunUntil(4_000_000)
	return rec.entries, s.Stats()
}

func TestSameConfigGivesIdenticalTraces(t *testing.T) {
	for _, useRand := range []bool{false, true} {
		t.Run(fmt.Sprintf("useRand=%v", useRand), func(t *testing.T) {
			opts := pingOpts{intervalUs: 20_000, size: 3000, useRand: useRand}
			a, sa := runTrace(t, busyConfig(42, 1), opts)
			b, sb := runTrace(t, busyConfig(42, 1), opts)
			if len(a) < 1000 {
				t.Fatalf("only %d events: the scenario is too quiet to compare", len(a))
			}
			if sa != sb {
				t.Fatalf("stats differ: %+v vs %+v", sa, sb)
			}
			if i := firstDiff(a, b); i >= 0 {
				t.Fatalf("traces diverge at event %d:\n  %v\n  %v", i, at(a, i), at(b, i))
			}
		})
	}
}

func TestDifferentSeedGivesDifferentTraceWithJitter(t *testing.T) {
	opts := pingOpts{intervalUs: 20_000, size: 3000}
	a, _ := runTrace(t, busyConfig(1, 1), opts)
	b, _ := runTrace(t, busyConfig(2, 1), opts)
	if firstDiff(a, b) < 0 {
		t.Fatal("seeds 1 and 2 produced identical traces with jitter 1")
	}
	// With no jitter, no protocol randomness and aligned timers the network is fully
	// deterministic, so the seed does not matter; the timers' random phases depend on it.
	aligned := func(seed uint64) Config {
		cfg := busyConfig(seed, 0)
		cfg.AlignedTimers = true
		return cfg
	}
	c, _ := runTrace(t, aligned(1), opts)
	d, _ := runTrace(t, aligned(2), opts)
	if i := firstDiff(c, d); i >= 0 {
		t.Fatalf("with jitter 0 and aligned timers, seeds 1 and 2 diverge at event %d:\n  %v\n  %v", i, at(c, i), at(d, i))
	}
	if p1, _ := runTrace(t, busyConfig(1, 0), opts); firstDiff(p1, c) < 0 {
		t.Fatal("timers started at a random phase ran as aligned ones")
	} else if p2, _ := runTrace(t, busyConfig(2, 0), opts); firstDiff(p1, p2) < 0 {
		t.Fatal("seeds 1 and 2 gave the timers the same phases")
	}
	// Each node's Rand is seeded from the run's seed.
	opts.useRand = true
	e, _ := runTrace(t, aligned(1), opts)
	f, _ := runTrace(t, aligned(2), opts)
	if firstDiff(e, f) < 0 {
		t.Fatal("seeds 1 and 2 gave identical env.Rand draws")
	}
}

func firstDiff(a, b []entry) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func at(es []entry, i int) string {
	if i < len(es) {
		return es[i].String()
	}
	return "<end>"
}

// ---- Delays ------------------------------------------------------------------------------------

func TestExactDelaysWithoutJitter(t *testing.T) {
	cfg := Config{
		Seed: 7, Jitter: 0, ClientHopUs: 500, IntraDCUs: 250,
		Nodes: []protocol.Node{{ID: 0, DC: dcA}, {ID: 1, DC: dcA}, {ID: 2, DC: dcB}, {ID: 3, DC: dcC}},
	}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 50_000, size: 100})
	topo := s.Config().Topology
	s.RunUntil(1_000_000)
	if len(rec.arrived) < 12*15 {
		t.Fatalf("only %d pings arrived", len(rec.arrived))
	}
	for _, a := range rec.allArrivals() {
		from, to := s.Nodes()[a.From].DC, s.Nodes()[a.To].DC
		want := cfg.IntraDCUs
		if from != to {
			want = oneWay(topo, from, to)
		}
		if got := a.AtUs - a.SentUs; got != want {
			t.Fatalf("ping %d→%d sent at %d took %d µs, want %d", a.From, a.To, a.SentUs, got, want)
		}
	}

	// The client hop: the request reaches the replica one hop after Call, the reply one more hop
	// later.
	c, err := s.Connect(9, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.DC() != dcB {
		t.Fatalf("client placed in datacenter %d, want %d", c.DC(), dcB)
	}
	callAt := s.NowUs()
	var replyAt int64 = -1
	c.Call(protocol.Request{Seq: 1, Kind: protocol.Get, Key: "k"}, func(protocol.Reply) { replyAt = s.NowUs() })
	s.RunUntil(callAt + 10_000)
	var reqAt int64 = -1
	for _, e := range rec.entries {
		if e.Kind == "req" && e.Node == 2 {
			reqAt = e.AtUs
		}
	}
	if reqAt != callAt+500 || replyAt != callAt+1000 {
		t.Fatalf("request handled at %d and reply at %d, want %d and %d", reqAt, replyAt, callAt+500, callAt+1000)
	}
}

func TestFIFOPerLinkUnderJitter(t *testing.T) {
	topo := threeDCs()
	for i := range topo.StdDevMs {
		for j := range topo.StdDevMs[i] {
			if i != j {
				topo.StdDevMs[i][j] = 20 // jitter range ±42 ms ≫ the 1 ms spacing
			}
		}
	}
	s, rec := newSim(t, Config{Topology: topo, Seed: 3, Jitter: 1}, pingOpts{intervalUs: 1000, burst: 3, size: 10})
	s.RunUntil(500_000)
	ties := 0
	for from := range protocol.NodeID(3) {
		for to := range protocol.NodeID(3) {
			if from == to {
				continue
			}
			arr := rec.arrivalsOn(from, to)
			if len(arr) < 1000 {
				t.Fatalf("link %d→%d: only %d arrivals", from, to, len(arr))
			}
			for i, a := range arr {
				if a.Seq != uint64(i+1) {
					t.Fatalf("link %d→%d: arrival #%d is seq %d: not FIFO", from, to, i+1, a.Seq)
				}
				if i > 0 && a.AtUs == arr[i-1].AtUs {
					ties++
				}
			}
		}
	}
	if ties == 0 {
		t.Fatal("no message was held back for FIFO: the jitter is too small for this test to mean anything")
	}
}

func TestJitterBoundsOnDeliveredMessages(t *testing.T) {
	// Pings 300 ms apart: far more than the jitter range, so FIFO never holds one back.
	s, rec := newSim(t, Config{Seed: 11, Jitter: 1}, pingOpts{intervalUs: 300_000, size: 10})
	topo := s.Config().Topology
	s.RunUntil(120_000_000)
	var lo, hi int
	for _, a := range rec.allArrivals() {
		x, y := int(a.From), int(a.To)
		mean := topo.RTTMs[x][y] / 2 * 1000
		bound := 3 * topo.StdDevMs[x][y] / math.Sqrt2 * 1000
		d := float64(a.AtUs - a.SentUs)
		if d < mean-bound-1 || d > mean+bound+1 {
			t.Fatalf("ping %d→%d took %.0f µs, outside %.0f ± %.0f", x, y, d, mean, bound)
		}
		if d < mean {
			lo++
		} else if d > mean {
			hi++
		}
	}
	if lo < 100 || hi < 100 {
		t.Fatalf("delays not spread around the mean: %d below, %d above", lo, hi)
	}
}

func TestJitterDistribution(t *testing.T) {
	// The delay is RTT/2 + Normal(0, (Jitter·σ/√2)²) truncated at ±3 of its standard deviations.
	// The truncation shrinks the standard deviation by a factor 0.98658.
	const truncSD = 0.98658
	for _, jitter := range []float64{0.5, 1, 2} {
		t.Run(fmt.Sprintf("jitter=%g", jitter), func(t *testing.T) {
			s, _ := newSim(t, Config{Seed: 5, Jitter: jitter}, pingOpts{})
			topo := s.Config().Topology
			const samples = 20000
			for _, pair := range [][2]int{{dcA, dcB}, {dcA, dcC}, {dcC, dcB}} {
				a, b := pair[0], pair[1]
				mean := topo.RTTMs[a][b] / 2 * 1000
				sd := topo.StdDevMs[a][b] * jitter / math.Sqrt2 * 1000
				var sum, sumSq float64
				atBound := 0
				for range samples {
					d := float64(s.oneWayUs(a, b, 0))
					if d < mean-3*sd-1 || d > mean+3*sd+1 {
						t.Fatalf("%d→%d delay %.0f outside %.0f ± %.0f", a, b, d, mean, 3*sd)
					}
					if math.Abs(math.Abs(d-mean)-3*sd) <= 1 {
						atBound++
					}
					sum += d
					sumSq += d * d
				}
				m := sum / samples
				std := math.Sqrt(sumSq/samples - m*m)
				if math.Abs(m-mean) > 4*sd/math.Sqrt(samples) {
					t.Errorf("%d→%d mean delay %.1f, want %.1f", a, b, m, mean)
				}
				if want := sd * truncSD; math.Abs(std-want) > 0.04*want {
					t.Errorf("%d→%d delay std dev %.1f, want ≈ %.1f (σ/√2 = %.1f)", a, b, std, want, sd)
				}
				if atBound == 0 {
					t.Errorf("%d→%d: no sample at the ±3σ/√2 truncation in %d draws", a, b, samples)
				}
			}
		})
	}
}

func TestCorrelatedJitterKeepsTheDistribution(t *testing.T) {
	// With a correlation time the link's jitter is an Ornstein–Uhlenbeck process whose every
	// sample has the independent model's distribution: over many messages, mean, standard
	// deviation and truncation are the same (TestJitterDistribution). Samples τ/10 apart are
	// correlated 0.905, so 400,000 of them count as about 20,000 independent ones.
	const truncSD = 0.98658
	const tauUs = 100_000
	const samples = 400_000
	for _, jitter := range []float64{0.5, 1} {
		t.Run(fmt.Sprintf("jitter=%g", jitter), func(t *testing.T) {
			s, _ := newSim(t, Config{Seed: 5, Jitter: jitter, JitterCorrelationUs: tauUs}, pingOpts{})
			topo := s.Config().Topology
			for _, pair := range [][2]int{{dcA, dcB}, {dcA, dcC}, {dcC, dcB}} {
				a, b := pair[0], pair[1]
				mean := topo.RTTMs[a][b] / 2 * 1000
				sd := topo.StdDevMs[a][b] * jitter / math.Sqrt2 * 1000
				var sum, sumSq float64
				atBound := 0
				for i := range int64(samples) {
					d := float64(s.oneWayUs(a, b, i*tauUs/10))
					if d < mean-3*sd-1 || d > mean+3*sd+1 {
						t.Fatalf("%d→%d delay %.0f outside %.0f ± %.0f", a, b, d, mean, 3*sd)
					}
					if math.Abs(math.Abs(d-mean)-3*sd) <= 1 {
						atBound++
					}
					sum += d
					sumSq += d * d
				}
				m := sum / samples
				std := math.Sqrt(sumSq/samples - m*m)
				const effective = samples / 20
				if math.Abs(m-mean) > 4*sd/math.Sqrt(effective) {
					t.Errorf("%d→%d mean delay %.1f, want %.1f", a, b, m, mean)
				}
				if want := sd * truncSD; math.Abs(std-want) > 0.04*want {
					t.Errorf("%d→%d delay std dev %.1f, want ≈ %.1f (σ/√2 = %.1f)", a, b, std, want, sd)
				}
				if atBound == 0 {
					t.Errorf("%d→%d: no sample at the ±3σ/√2 truncation in %d draws", a, b, samples)
				}
			}
		})
	}
}

func TestCorrelatedJitterAutocorrelation(t *testing.T) {
	// Two samples Δt apart have correlation exp(−Δt/τ): measured at lags τ/2, τ and 2τ on
	// the untruncated process.
	const tauUs = 50_000
	r := rand.New(rand.NewPCG(1, 2))
	p := topology.JitterProcess{CorrelationUs: tauUs}
	for _, lagUs := range []int64{tauUs / 2, tauUs, 2 * tauUs} {
		const n = 100_000
		var sxy, sxx float64
		prev := p.Sample(0, r)
		for i := range int64(n) {
			z := p.Sample((i+1)*lagUs, r)
			sxy += prev * z
			sxx += prev * prev
			prev = z
		}
		got, want := sxy/sxx, math.Exp(-float64(lagUs)/tauUs)
		if math.Abs(got-want) > 0.01 {
			t.Errorf("lag %d µs: correlation %.4f, want %.4f", lagUs, got, want)
		}
		p = topology.JitterProcess{CorrelationUs: tauUs}
	}
}

func TestCorrelatedJitterBackToBack(t *testing.T) {
	// Bursts of 4 pings every 2 ms on links with ±42 ms of jitter. Independent draws spread
	// consecutive messages over tens of ms and FIFO holds many back to their predecessor's
	// delivery; with τ = 10 s the link barely moves between messages, so consecutive delays are
	// nearly equal (equal within a burst) and FIFO almost never binds.
	topo := threeDCs()
	for i := range topo.StdDevMs {
		for j := range topo.StdDevMs[i] {
			if i != j {
				topo.StdDevMs[i][j] = 20
			}
		}
	}
	type measure struct {
		meanStepUs float64 // mean |delay_i − delay_{i−1}| of consecutive messages on a link
		heldBack   float64 // share of messages, sent after their predecessor, delivered with it (FIFO)
		arrivals   int
	}
	run := func(tauUs int64) measure {
		s, rec := newSim(t, Config{Topology: topo, Seed: 3, Jitter: 1, JitterCorrelationUs: tauUs}, pingOpts{intervalUs: 2000, burst: 4, size: 10})
		s.RunUntil(2_000_000)
		var m measure
		var steps float64
		var nSteps, nLater, held int
		for from := range protocol.NodeID(3) {
			for to := range protocol.NodeID(3) {
				if from == to {
					continue
				}
				arr := rec.arrivalsOn(from, to)
				for i, a := range arr {
					if a.Seq != uint64(i+1) {
						t.Fatalf("τ=%d: link %d→%d: arrival #%d is seq %d: not FIFO", tauUs, from, to, i+1, a.Seq)
					}
					if i > 0 {
						steps += math.Abs(float64((a.AtUs - a.SentUs) - (arr[i-1].AtUs - arr[i-1].SentUs)))
						nSteps++
						if a.SentUs > arr[i-1].SentUs {
							nLater++
							if a.AtUs == arr[i-1].AtUs {
								held++
							}
						}
					}
				}
				m.arrivals += len(arr)
			}
		}
		m.meanStepUs, m.heldBack = steps/float64(nSteps), float64(held)/float64(nLater)
		return m
	}
	indep, corr := run(0), run(10_000_000)
	t.Logf("independent: %+v; τ = 10 s: %+v", indep, corr)
	if indep.arrivals < 5000 || corr.arrivals < 5000 {
		t.Fatalf("arrivals: %d independent, %d correlated", indep.arrivals, corr.arrivals)
	}
	// τ = 10 s: between bursts 2 ms apart the step's standard deviation is √(2·2/10000)·14.1 ms
	// ≈ 0.28 ms, within a burst it is 0.
	if corr.meanStepUs > 300 {
		t.Errorf("τ = 10 s: consecutive delays differ by %.0f µs on average, want nearly equal", corr.meanStepUs)
	}
	// Independent draws: most messages wait for their predecessor (which makes their delivered
	// delays close too, but only by FIFO's max).
	if indep.heldBack < 0.5 {
		t.Errorf("independent jitter: only %.1f%% of messages held back by FIFO", 100*indep.heldBack)
	}
	if corr.heldBack > indep.heldBack/10 {
		t.Errorf("FIFO ties: %.1f%% with τ = 10 s vs %.1f%% independent, want far fewer", 100*corr.heldBack, 100*indep.heldBack)
	}
}

func TestCorrelatedJitterIsDeterministic(t *testing.T) {
	opts := pingOpts{intervalUs: 5_000, burst: 2, size: 3000, useRand: true}
	cfg := func(seed uint64) Config {
		c := busyConfig(seed, 1)
		c.JitterCorrelationUs = 200_000
		return c
	}
	a, sa := runTrace(t, cfg(42), opts)
	b, sb := runTrace(t, cfg(42), opts)
	if len(a) < 1000 {
		t.Fatalf("only %d events: the scenario is too quiet to compare", len(a))
	}
	if sa != sb {
		t.Fatalf("stats differ: %+v vs %+v", sa, sb)
	}
	if i := firstDiff(a, b); i >= 0 {
		t.Fatalf("traces diverge at event %d:\n  %v\n  %v", i, at(a, i), at(b, i))
	}
	if c, _ := runTrace(t, cfg(43), opts); firstDiff(a, c) < 0 {
		t.Fatal("seeds 42 and 43 produced identical traces with correlated jitter")
	}
	// The correlation changes the run (same seed, τ = 0 vs τ > 0), and without jitter it changes
	// nothing: no link has a standard deviation to correlate.
	if d, _ := runTrace(t, busyConfig(42, 1), opts); firstDiff(a, d) < 0 {
		t.Fatal("τ = 200 ms gave the same trace as independent jitter")
	}
	noJitter := cfg(42)
	noJitter.Jitter = 0
	e, _ := runTrace(t, noJitter, opts)
	f, _ := runTrace(t, busyConfig(42, 0), opts)
	if i := firstDiff(e, f); i >= 0 {
		t.Fatalf("with jitter 0, τ changed the run at event %d:\n  %v\n  %v", i, at(e, i), at(f, i))
	}
}

// ---- Clocks ------------------------------------------------------------------------------------

func TestClockOffsetAndDrift(t *testing.T) {
	offsets := []int64{0, 250_000, -40_000}
	drifts := []float64{0, 2000, -5000} // ppm: large, so that mistakes show
	const interval = 100_000
	s, rec := newSim(t, Config{Seed: 1, ClockOffsetUs: offsets, ClockDriftPPM: drifts, AlignedTimers: true}, pingOpts{intervalUs: interval, size: 1})
	s.RunUntil(10_000_000)
	fires := map[protocol.NodeID][]entry{}
	for _, e := range rec.entries {
		dc := s.Nodes()[e.Node].DC
		want := e.AtUs + offsets[dc] + int64(float64(e.AtUs)*drifts[dc]/1e6)
		if e.LocalUs != want {
			t.Fatalf("node %d at virtual %d reads %d, want %d", e.Node, e.AtUs, e.LocalUs, want)
		}
		if e.Kind == "timer" || e.Kind == "start" {
			fires[e.Node] = append(fires[e.Node], e)
		}
	}
	for node, fs := range fires {
		dc := s.Nodes()[node].DC
		if len(fs) < 90 {
			t.Fatalf("node %d: only %d timer firings", node, len(fs))
		}
		for i := 1; i < len(fs); i++ {
			local := fs[i].LocalUs - fs[i-1].LocalUs
			virtual := fs[i].AtUs - fs[i-1].AtUs
			// Timers run on the local clock: interval of local time, within rounding.
			if local < interval-2 || local > interval+2 {
				t.Fatalf("node %d (drift %g ppm): timer fired after %d µs of local time, want %d", node, drifts[dc], local, interval)
			}
			wantVirtual := float64(interval) / (1 + drifts[dc]/1e6)
			if math.Abs(float64(virtual)-wantVirtual) > 2 {
				t.Fatalf("node %d: timer fired after %d µs of virtual time, want ≈ %.1f", node, virtual, wantVirtual)
			}
		}
	}
	// Clients read virtual time.
	c, err := s.Connect(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.NowUs() != s.NowUs() {
		t.Fatalf("client clock %d, want virtual time %d", c.NowUs(), s.NowUs())
	}
}

// ---- Faults ------------------------------------------------------------------------------------

const (
	faultStart = 1_000_000
	faultEnd   = 2_000_000
)

func inWindow(t int64) bool { return t >= faultStart && t < faultEnd }

func TestOutageFreezesDatacenter(t *testing.T) {
	cfg := Config{Seed: 1, ClientHopUs: 500,
		Faults: []Fault{{Kind: Outage, DC: "B", StartUs: faultStart, EndUs: faultEnd}}}
	// Pings every 100 ms; A→B takes exactly 100 ms, so A's ping at 900 ms lands at 1 s sharp.
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 100_000, size: 1})
	topo := s.Config().Topology
	c, err := s.Connect(7, dcB)
	if err != nil {
		t.Fatal(err)
	}
	var replies []entry
	var afterRan int64 = -1
	for i, callAt := range []int64{1_200_000, 1_400_000, 1_600_000} {
		s.After(-1, callAt, func() {
			if !s.Down(dcB) {
				t.Errorf("datacenter B is not down at %d", s.NowUs())
			}
			c.Call(protocol.Request{Seq: uint64(i + 1), Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) {
				replies = append(replies, entry{AtUs: s.NowUs(), Seq: r.Seq})
			})
		})
	}
	s.After(-1, 1_500_000, func() { c.After(0, func() { afterRan = s.NowUs() }) })
	s.RunUntil(3_000_000)

	// Nothing runs at B during the outage; B's deferred timer and requests run at recovery, in
	// order.
	var atRecovery []entry
	for _, e := range rec.entries {
		if e.Node == dcB && inWindow(e.AtUs) {
			t.Fatalf("node B ran during its outage: %v", e)
		}
		if e.Node == dcB && e.AtUs == faultEnd {
			atRecovery = append(atRecovery, e)
		}
	}
	var kinds []string
	for _, e := range atRecovery {
		kinds = append(kinds, fmt.Sprintf("%s/%d", e.Kind, e.Seq))
	}
	if want := []string{"timer/1", "req/1", "req/2", "req/3"}; !slices.Equal(kinds, want) {
		t.Fatalf("B ran %v at recovery, want %v (deferred timer, then requests in order)", kinds, want)
	}
	if len(replies) != 3 {
		t.Fatalf("%d replies, want 3", len(replies))
	}
	for i, r := range replies {
		if r.Seq != uint64(i+1) || r.AtUs != faultEnd+500 {
			t.Fatalf("reply %d: seq %d at %d, want seq %d at %d", i, r.Seq, r.AtUs, i+1, faultEnd+500)
		}
	}
	if afterRan != faultEnd {
		t.Fatalf("client callback scheduled during the outage ran at %d, want %d", afterRan, faultEnd)
	}

	// Peer messages to B are lost if sent or due during the outage, and counted; B sends
	// nothing during the outage; everything else arrives.
	arrived := map[linkSeq]bool{}
	for _, a := range rec.allArrivals() {
		arrived[linkSeq{a.From, a.To, a.Seq}] = true
	}
	var dropped uint64
	for _, sd := range rec.sends {
		if sd.From == dcB && inWindow(sd.AtUs) {
			t.Fatalf("B sent a ping at %d, during its outage", sd.AtUs)
		}
		due := sd.AtUs + oneWay(topo, int(sd.From), int(sd.To))
		lost := sd.To == dcB && (inWindow(sd.AtUs) || inWindow(due))
		if due > 3_000_000 {
			continue
		}
		if lost {
			dropped++
		}
		if arrived[linkSeq{sd.From, sd.To, sd.Seq}] == lost {
			t.Fatalf("ping %d→%d sent at %d (due %d): arrived=%v, want %v", sd.From, sd.To, sd.AtUs, due, !lost, !lost)
		}
	}
	if dropped < 20 {
		t.Fatalf("only %d pings should have been lost: scenario broken", dropped)
	}
	if got := s.Stats().MessagesDropped; got != dropped {
		t.Fatalf("Stats.MessagesDropped = %d, want %d", got, dropped)
	}
	// The other datacenters kept talking during the outage.
	talked := 0
	for _, a := range rec.allArrivals() {
		if a.To != dcB && a.From != dcB && inWindow(a.AtUs) {
			talked++
		}
	}
	if talked < 10 {
		t.Fatalf("A and C exchanged only %d pings during B's outage", talked)
	}
}

func TestPartitionDropsBothDirectionsOnlyDuringWindow(t *testing.T) {
	cfg := Config{Seed: 1, Faults: []Fault{{Kind: Partition, DC: "C", Peer: "A", StartUs: faultStart, EndUs: faultEnd}}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 50_000, size: 1})
	s.RunUntil(3_000_000)
	arrived := map[linkSeq]bool{}
	for _, a := range rec.allArrivals() {
		arrived[linkSeq{a.From, a.To, a.Seq}] = true
	}
	var dropped, cutAC, cutCA uint64
	for _, sd := range rec.sends {
		if sd.AtUs+oneWay(s.Config().Topology, int(sd.From), int(sd.To)) > 3_000_000 {
			continue
		}
		pair := [2]protocol.NodeID{min(sd.From, sd.To), max(sd.From, sd.To)}
		lost := pair == [2]protocol.NodeID{dcA, dcC} && inWindow(sd.AtUs)
		if lost {
			dropped++
			if sd.From == dcA {
				cutAC++
			} else {
				cutCA++
			}
		}
		if arrived[linkSeq{sd.From, sd.To, sd.Seq}] == lost {
			t.Fatalf("ping %d→%d sent at %d: arrived=%v, want %v", sd.From, sd.To, sd.AtUs, !lost, !lost)
		}
	}
	if cutAC != 20 || cutCA != 20 {
		t.Fatalf("partition cut %d A→C and %d C→A pings, want 20 each", cutAC, cutCA)
	}
	if got := s.Stats().MessagesDropped; got != dropped {
		t.Fatalf("Stats.MessagesDropped = %d, want %d", got, dropped)
	}
}

func TestOverlappingPartitionsAndSlowLinksCompose(t *testing.T) {
	cfg := Config{Seed: 1, Faults: []Fault{
		{Kind: Partition, DC: "A", Peer: "C", StartUs: 1_000_000, EndUs: 3_000_000},
		{Kind: Partition, DC: "C", Peer: "A", StartUs: 2_000_000, EndUs: 4_000_000},
		{Kind: Slow, DC: "A", Peer: "B", StartUs: 1_000_000, EndUs: 3_000_000, ExtraUs: 10_000},
		{Kind: Slow, DC: "B", Peer: "A", StartUs: 2_000_000, EndUs: 4_000_000, ExtraUs: 30_000},
	}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 250_000, size: 1})
	topo := s.Config().Topology
	s.RunUntil(6_000_000)
	arrived := map[linkSeq]int64{}
	for _, a := range rec.allArrivals() {
		arrived[linkSeq{a.From, a.To, a.Seq}] = a.AtUs
	}
	for _, sd := range rec.sends {
		if sd.AtUs > 5_000_000 {
			continue
		}
		pair := [2]protocol.NodeID{min(sd.From, sd.To), max(sd.From, sd.To)}
		at, ok := arrived[linkSeq{sd.From, sd.To, sd.Seq}]
		switch pair {
		case [2]protocol.NodeID{dcA, dcC}:
			if cut := sd.AtUs >= 1_000_000 && sd.AtUs < 4_000_000; ok == cut {
				t.Fatalf("A–C ping sent at %d: arrived=%v, want %v", sd.AtUs, ok, !cut)
			}
		case [2]protocol.NodeID{dcA, dcB}:
			want := oneWay(topo, dcA, dcB)
			if sd.AtUs >= 1_000_000 && sd.AtUs < 3_000_000 {
				want += 10_000
			}
			if sd.AtUs >= 2_000_000 && sd.AtUs < 4_000_000 {
				want += 30_000
			}
			if !ok || at-sd.AtUs != want {
				t.Fatalf("A–B ping %d→%d sent at %d took %d (arrived %v), want %d", sd.From, sd.To, sd.AtUs, at-sd.AtUs, ok, want)
			}
		}
	}
}

func TestSlowAddsDelayBothWaysDuringWindow(t *testing.T) {
	const extra = 50_000
	cfg := Config{Seed: 1, Faults: []Fault{{Kind: Slow, DC: "A", Peer: "B", StartUs: faultStart, EndUs: faultEnd, ExtraUs: extra}}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 100_000, size: 1})
	topo := s.Config().Topology
	s.RunUntil(3_000_000)
	slowed := map[[2]protocol.NodeID]int{}
	for _, a := range rec.allArrivals() {
		want := oneWay(topo, int(a.From), int(a.To))
		pair := [2]protocol.NodeID{min(a.From, a.To), max(a.From, a.To)}
		if pair == [2]protocol.NodeID{dcA, dcB} && inWindow(a.SentUs) {
			want += extra
			slowed[[2]protocol.NodeID{a.From, a.To}]++
		}
		if got := a.AtUs - a.SentUs; got != want {
			t.Fatalf("ping %d→%d sent at %d took %d, want %d", a.From, a.To, a.SentUs, got, want)
		}
	}
	if slowed[[2]protocol.NodeID{dcA, dcB}] != 10 || slowed[[2]protocol.NodeID{dcB, dcA}] != 10 {
		t.Fatalf("slowed pings per direction: %v, want 10 each way", slowed)
	}
	if s.Stats().MessagesDropped != 0 {
		t.Fatalf("a slow link dropped %d messages", s.Stats().MessagesDropped)
	}
}

// ---- Fault syntax ------------------------------------------------------------------------------

func TestParseFault(t *testing.T) {
	good := []struct {
		spec string
		want Fault
	}{
		{"crash:V@10s-20s", Fault{Kind: Outage, DC: "V", StartUs: 10_000_000, EndUs: 20_000_000}},
		{"crash:us-east@0s-1ms", Fault{Kind: Outage, DC: "us-east", StartUs: 0, EndUs: 1000}},
		{"partition:A-B@1.5s-2s", Fault{Kind: Partition, DC: "A", Peer: "B", StartUs: 1_500_000, EndUs: 2_000_000}},
		{"slow:V-O+100ms@5s-6s", Fault{Kind: Slow, DC: "V", Peer: "O", StartUs: 5_000_000, EndUs: 6_000_000, ExtraUs: 100_000}},
		{"slow:A-C+250us@1m-1m30s", Fault{Kind: Slow, DC: "A", Peer: "C", StartUs: 60_000_000, EndUs: 90_000_000, ExtraUs: 250}},
	}
	for _, c := range good {
		t.Run(c.spec, func(t *testing.T) {
			f, err := ParseFault(c.spec)
			if err != nil {
				t.Fatalf("ParseFault: %v", err)
			}
			if f != c.want {
				t.Fatalf("ParseFault = %#v, want %#v", f, c.want)
			}
			back, err := ParseFault(f.String())
			if err != nil || back != f {
				t.Fatalf("round trip via %q: %#v, %v", f.String(), back, err)
			}
		})
	}
	bad := []struct{ spec, why string }{
		{"", "missing kind"},
		{"crashV@1s-2s", "missing kind"},
		{"crash:V", "missing @START-END"},
		{"crash:V@1s", "missing -END"},
		{"crash:V@2s-1s", "0 ≤ START < END"},
		{"crash:V@1s-1s", "0 ≤ START < END"},
		{"crash:V@x-2s", "START and END must be durations"},
		{"crash:V@1s-2", "START and END must be durations"},
		{"partition:A@1s-2s", "two datacenters"},
		{"slow:A-B@1s-2s", "+DELAY"},
		{"slow:A-B+0s@1s-2s", "positive duration"},
		{"slow:A-B+fast@1s-2s", "+DELAY"},
		{"reboot:A@1s-2s", "unknown kind reboot"},
	}
	for _, c := range bad {
		t.Run("bad/"+c.spec, func(t *testing.T) {
			_, err := ParseFault(c.spec)
			if err == nil {
				t.Fatalf("ParseFault(%q) accepted a malformed fault", c.spec)
			}
			if !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.spec)) {
				t.Fatalf("ParseFault(%q) error %q should quote the spec and say %q", c.spec, err, c.why)
			}
		})
	}
}

func TestFaultStringRoundTrips(t *testing.T) {
	for _, f := range []Fault{
		{Kind: Outage, DC: "O", StartUs: 0, EndUs: 1},
		{Kind: Outage, DC: "I", StartUs: 1_234_567, EndUs: 98_765_432},
		{Kind: Partition, DC: "C", Peer: "S", StartUs: 500, EndUs: 3_600_000_000},
		{Kind: Slow, DC: "S", Peer: "V", StartUs: 7, EndUs: 8, ExtraUs: 1},
		{Kind: Slow, DC: "V", Peer: "I", StartUs: 0, EndUs: 61_000_000, ExtraUs: 1_500_000},
	} {
		got, err := ParseFault(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFault(%q) = %#v, %v; want %#v", f.String(), got, err, f)
		}
	}
	if s := (Fault{}).String(); s != "unknown-fault" {
		t.Errorf("zero Fault renders as %q", s)
	}
}

// ---- Service-time model ------------------------------------------------------------------------

func TestServiceTimeQueuesRequestsInOrder(t *testing.T) {
	cfg := Config{Seed: 1, ClientHopUs: 500, Service: Service{PerRequestUs: 1000}}
	s, rec := newSim(t, cfg, pingOpts{})
	c, err := s.Connect(1, dcA)
	if err != nil {
		t.Fatal(err)
	}
	var replies []entry
	s.After(-1, 0, func() {
		for i := range 10 {
			c.Call(protocol.Request{Seq: uint64(i + 1), Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) {
				replies = append(replies, entry{AtUs: s.NowUs(), Seq: r.Seq})
			})
		}
	})
	s.RunUntil(100_000)
	if len(replies) != 10 {
		t.Fatalf("%d replies, want 10", len(replies))
	}
	for i, r := range replies {
		// Arrive at 500 µs; request i is handled at 500 + 1000·i and answered when its 1 ms
		// of service ends, one hop before the client sees it.
		want := int64(500 + 1000*(i+1) + 500)
		if r.Seq != uint64(i+1) || r.AtUs != want {
			t.Fatalf("reply %d: seq %d at %d µs, want seq %d at %d", i, r.Seq, r.AtUs, i+1, want)
		}
	}
	var handled []int64
	for _, e := range rec.entries {
		if e.Kind == "req" {
			handled = append(handled, e.AtUs)
		}
	}
	for i, h := range handled {
		if h != int64(500+1000*i) {
			t.Fatalf("request %d handled at %d, want %d", i+1, h, 500+1000*i)
		}
	}
}

func TestServiceTimeChargesMessagesAndCommits(t *testing.T) {
	// A ping of 4 KiB costs 100 + 4·50 = 300 µs; a commit costs 1000 + 2000 µs. The request that
	// arrives while the replica is busy waits for it.
	cfg := Config{Seed: 1, ClientHopUs: 500, Service: Service{PerMessageUs: 100, PerKBUs: 50, PerRequestUs: 1000, PerCommitUs: 2000}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 1_000_000, size: 4096})
	c, err := s.Connect(1, dcB)
	if err != nil {
		t.Fatal(err)
	}
	// B receives C's ping at 30 ms and A's at 100 ms. A commit issued to arrive at 30.1 ms and a
	// Get right behind it queue behind C's ping.
	var got []entry
	s.After(-1, 29_600, func() {
		c.Call(protocol.Request{Seq: 1, Kind: protocol.Commit, Txn: &txn.Txn{ID: txn.NewID(1, 1), Writes: []txn.Write{{Key: "k", Value: []byte("v")}}}},
			func(r protocol.Reply) { got = append(got, entry{AtUs: s.NowUs(), Seq: r.Seq}) })
		c.Call(protocol.Request{Seq: 2, Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) {
			got = append(got, entry{AtUs: s.NowUs(), Seq: r.Seq})
		})
	})
	s.RunUntil(200_000)
	var atB []string
	for _, e := range rec.entries {
		if e.Node == dcB && e.AtUs > 0 && e.AtUs < 100_000 {
			atB = append(atB, fmt.Sprintf("%s@%d", e.Kind, e.AtUs))
		}
	}
	// Ping at 30000 (busy until 30300); commit arrives 30100, runs 30300 (busy until 33300);
	// Get arrives 30100, runs 33300 (busy until 34300).
	if want := []string{"msg@30000", "req@30300", "req@33300"}; !slices.Equal(atB, want) {
		t.Fatalf("B handled %v, want %v", atB, want)
	}
	if len(got) != 2 || got[0].AtUs != 33_300+500 || got[1].AtUs != 34_300+500 {
		t.Fatalf("replies %v, want the commit's at 33800 and the Get's at 34800", got)
	}
}

// ---- Configuration -----------------------------------------------------------------------------

func TestConfigValidation(t *testing.T) {
	failing := func(protocol.Config, protocol.Env) (protocol.Replica, error) {
		return nil, fmt.Errorf("factory says no")
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no topology", func(c *Config) { c.Topology = nil }, "needs a topology"},
		{"no factory", func(c *Config) { c.Factory = nil }, "needs a topology and a protocol"},
		{"too few clock offsets", func(c *Config) { c.ClockOffsetUs = []int64{1, 2} }, "2 clock offsets for 3 datacenters"},
		{"too many clock drifts", func(c *Config) { c.ClockDriftPPM = []float64{1, 2, 3, 4} }, "4 clock drifts for 3 datacenters"},
		{"negative jitter", func(c *Config) { c.Jitter = -0.1 }, "must not be negative"},
		{"negative jitter correlation", func(c *Config) { c.JitterCorrelationUs = -1 }, "must not be negative"},
		{"negative client hop", func(c *Config) { c.ClientHopUs = -1 }, "must not be negative"},
		{"negative intra-DC delay", func(c *Config) { c.IntraDCUs = -1 }, "must not be negative"},
		{"unknown fault DC", func(c *Config) {
			c.Faults = []Fault{{Kind: Outage, DC: "Z", StartUs: 0, EndUs: 10}}
		}, `unknown datacenter "Z"`},
		{"unknown fault peer", func(c *Config) {
			c.Faults = []Fault{{Kind: Partition, DC: "A", Peer: "Q", StartUs: 0, EndUs: 10}}
		}, `peer "Q"`},
		{"fault peer is the DC itself", func(c *Config) {
			c.Faults = []Fault{{Kind: Slow, DC: "A", Peer: "A", StartUs: 0, EndUs: 10, ExtraUs: 5}}
		}, `peer "A" must be another datacenter`},
		{"fault ends before it starts", func(c *Config) {
			c.Faults = []Fault{{Kind: Outage, DC: "A", StartUs: 10, EndUs: 10}}
		}, "needs 0 ≤ start < end"},
		{"fault starts before 0", func(c *Config) {
			c.Faults = []Fault{{Kind: Outage, DC: "A", StartUs: -1, EndUs: 10}}
		}, "needs 0 ≤ start < end"},
		{"fault of unknown kind", func(c *Config) {
			c.Faults = []Fault{{Kind: 9, DC: "A", Peer: "B", StartUs: 0, EndUs: 10}}
		}, "unknown kind"},
		{"node id out of order", func(c *Config) {
			c.Nodes = []protocol.Node{{ID: 1, DC: 0}, {ID: 0, DC: 1}}
		}, "node 0 is malformed"},
		{"node in unknown datacenter", func(c *Config) {
			c.Nodes = []protocol.Node{{ID: 0, DC: 0}, {ID: 1, DC: 3}}
		}, "node 1 is malformed"},
		{"factory error", func(c *Config) { c.Factory = failing }, "factory says no"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Topology: threeDCs(), Factory: pingFactory(&recorder{}, pingOpts{})}
			c.mutate(&cfg)
			s, err := New(cfg)
			if err == nil {
				t.Fatalf("New accepted the config (sim %v)", s != nil)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	t.Run("valid config defaults to one replica per datacenter", func(t *testing.T) {
		s, err := New(Config{Topology: threeDCs(), Factory: pingFactory(&recorder{}, pingOpts{})})
		if err != nil {
			t.Fatal(err)
		}
		want := []protocol.Node{{ID: 0, DC: 0}, {ID: 1, DC: 1}, {ID: 2, DC: 2}}
		if !slices.Equal(s.Nodes(), want) || !slices.Equal(s.Config().Nodes, want) {
			t.Fatalf("Nodes = %v, want %v", s.Nodes(), want)
		}
	})
}

func TestConnectValidatesClients(t *testing.T) {
	s, _ := newSim(t, Config{Seed: 1}, pingOpts{})
	if _, err := s.Connect(0, 0); err == nil {
		t.Error("Connect accepted client id 0")
	}
	if _, err := s.Connect(1, 3); err == nil {
		t.Error("Connect accepted a replica that does not exist")
	}
	if _, err := s.Connect(1, -1); err == nil {
		t.Error("Connect accepted a negative replica")
	}
	if _, err := s.Connect(1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Connect(1, 1); err == nil {
		t.Error("Connect accepted a duplicate client id")
	}
}

func TestRepliesAndStoresAreWiredPerReplica(t *testing.T) {
	s, _ := newSim(t, Config{Seed: 1, ClientHopUs: 100}, pingOpts{})
	c, err := s.Connect(3, dcC)
	if err != nil {
		t.Fatal(err)
	}
	var replies []protocol.Reply
	s.After(-1, 0, func() {
		c.Call(protocol.Request{Seq: 1, Kind: protocol.Commit, Txn: &txn.Txn{ID: txn.NewID(3, 1), Writes: []txn.Write{{Key: "k", Value: []byte("v")}}}},
			func(r protocol.Reply) { replies = append(replies, r) })
		c.Call(protocol.Request{Seq: 2, Kind: protocol.Get, Key: "k"}, func(r protocol.Reply) { replies = append(replies, r) })
		c.Call(protocol.Request{Seq: 3, Kind: protocol.ReadSnapshot, Keys: []string{"k", "other"}}, func(r protocol.Reply) { replies = append(replies, r) })
	})
	s.RunUntil(10_000)
	if len(replies) != 3 {
		t.Fatalf("%d replies, want 3", len(replies))
	}
	if r := replies[0]; r.Seq != 1 || r.Client != 3 || r.Status != txn.Committed {
		t.Errorf("commit reply %+v", r)
	}
	if r := replies[1]; r.Seq != 2 || string(r.Value) != "v" || r.Version != txn.NewID(3, 1) {
		t.Errorf("Get reply %+v", r)
	}
	if r := replies[2]; r.Seq != 3 || len(r.Snapshot) != 2 || string(r.Snapshot[0].Value) != "v" || r.Snapshot[1].Version != txn.None {
		t.Errorf("ReadSnapshot reply %+v", r)
	}
	if v := s.Store(dcC).Get("k"); string(v.Value) != "v" {
		t.Errorf("C's store holds %q", v.Value)
	}
	if v := s.Store(dcA).Get("k"); v.Writer != txn.None {
		t.Errorf("A's store was written: %+v", v)
	}
	if _, ok := s.Replica(dcC).(*pinger); !ok {
		t.Errorf("Replica returned %T", s.Replica(dcC))
	}
}

func TestRunUntilAdvancesClockAndRunsDueEvents(t *testing.T) {
	s, _ := newSim(t, Config{Seed: 1}, pingOpts{})
	var ran []int64
	s.After(-1, 300, func() { ran = append(ran, s.NowUs()) })
	s.After(-1, 100, func() { ran = append(ran, s.NowUs()) })
	s.After(-1, 100, func() { ran = append(ran, -s.NowUs()) }) // same time: scheduling order
	s.RunUntil(200)
	if !slices.Equal(ran, []int64{100, -100}) || s.NowUs() != 200 {
		t.Fatalf("ran %v, now %d; want [100 -100] and 200", ran, s.NowUs())
	}
	s.After(-1, -50, func() { ran = append(ran, s.NowUs()) }) // negative delay: now
	s.RunUntil(300)
	if !slices.Equal(ran, []int64{100, -100, 200, 300}) || s.NowUs() != 300 {
		t.Fatalf("ran %v, now %d", ran, s.NowUs())
	}
	s.RunUntil(250) // never goes back
	if s.NowUs() != 300 {
		t.Fatalf("RunUntil into the past moved the clock to %d", s.NowUs())
	}
}

// ---- Regression tests for bugs found by review ----
// An outage that starts at 0 must freeze the datacenter from the start, including its replica's
// Start and first messages.
func TestOutageFromTimeZeroAlsoFreezesStart(t *testing.T) {
	cfg := Config{Seed: 1, Faults: []Fault{{Kind: Outage, DC: "B", StartUs: 0, EndUs: faultStart}}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 100_000, size: 1})
	s.RunUntil(2 * faultStart)
	for _, e := range rec.entries {
		if e.Node == dcB && e.AtUs < faultStart {
			t.Errorf("B ran during its outage [0, %d): %v", faultStart, e)
		}
	}
	for _, a := range rec.allArrivals() {
		if a.From == dcB && a.SentUs < faultStart {
			t.Errorf("B's ping sent at %d, during its outage, reached node %d", a.SentUs, a.To)
		}
	}
}

// With the service model, inputs that wait for a busy replica are served in arrival order, even
// when a later input arrives exactly as the replica frees up.
func TestServiceQueueIsFIFOAtTies(t *testing.T) {
	// B gets C's ping at 30 ms (sent at 0). Two requests arrive at 29.5 ms and cost 500 µs each.
	cfg := Config{Seed: 1, ClientHopUs: 500, Service: Service{PerRequestUs: 500}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 1_000_000, size: 1})
	c, err := s.Connect(1, dcB)
	if err != nil {
		t.Fatal(err)
	}
	s.After(-1, 29_000, func() {
		for i := range 2 {
			c.Call(protocol.Request{Seq: uint64(i + 1), Kind: protocol.Get, Key: "k"}, func(protocol.Reply) {})
		}
	})
	s.RunUntil(50_000)
	var got []string
	for _, e := range rec.entries {
		if e.Node == dcB && e.AtUs > 0 && e.AtUs < 50_000 {
			got = append(got, fmt.Sprintf("%s/%d@%d", e.Kind, e.Seq, e.AtUs))
		}
	}
	if want := []string{"req/1@29500", "req/2@30000", "msg/1@30500"}; !slices.Equal(got, want) {
		t.Fatalf("B handled %v, want %v (request 2 waited since 29.5 ms; the ping arrived at 30 ms)", got, want)
	}
}

// topology.Validate allows '-' in datacenter names; faults between such datacenters must
// round-trip through String and ParseFault.
func TestFaultWithHyphenatedDatacentersRoundTrips(t *testing.T) {
	for _, f := range []Fault{
		{Kind: Partition, DC: "us-east", Peer: "eu-west", StartUs: 1_000_000, EndUs: 2_000_000},
		{Kind: Slow, DC: "us-east", Peer: "ap-south", StartUs: 1_000_000, EndUs: 2_000_000, ExtraUs: 5000},
	} {
		got, err := ParseFault(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFault(%q): DC %q Peer %q, err %v; want DC %q Peer %q", f.String(), got.DC, got.Peer, err, f.DC, f.Peer)
		}
	}
}

// TestChaosLosesDuplicatesAndReorders checks the chaotic network: with loss, duplication and
// reordering the counters match what arrived, some link delivers out of order, and extra delay
// stays within its bound; the zero Chaos keeps every link FIFO and lossless.
func TestChaosLosesDuplicatesAndReorders(t *testing.T) {
	const extraUs = 200_000
	cfg := Config{Seed: 3, Chaos: Chaos{LossProb: 0.1, DuplicateProb: 0.2, Reorder: true, ExtraDelayMaxUs: extraUs}}
	s, rec := newSim(t, cfg, pingOpts{intervalUs: 10_000, size: 1})
	s.RunUntil(2_000_000)
	st := s.Stats()
	if st.MessagesDropped == 0 || st.MessagesDuplicated == 0 {
		t.Fatalf("stats %+v: want some loss and some duplication", st)
	}
	arrivals := map[linkSeq]int{}
	reordered := false
	last := map[[2]protocol.NodeID]uint64{}
	for _, a := range rec.allArrivals() {
		arrivals[linkSeq{a.From, a.To, a.Seq}]++
		if d := a.AtUs - a.SentUs - oneWay(s.Config().Topology, int(a.From), int(a.To)); d < 0 || d > extraUs {
			t.Fatalf("ping %d→%d #%d took %d µs beyond RTT/2, want within [0, %d]", a.From, a.To, a.Seq, d, extraUs)
		}
		link := [2]protocol.NodeID{a.From, a.To}
		if a.Seq < last[link] {
			reordered = true
		}
		last[link] = max(last[link], a.Seq)
	}
	twice := 0
	for _, n := range arrivals {
		if n > 2 {
			t.Fatalf("a ping arrived %d times", n)
		}
		if n == 2 {
			twice++
		}
	}
	if !reordered || twice == 0 {
		t.Fatalf("reordered=%v, %d pings arrived twice: chaos did nothing", reordered, twice)
	}
}

// TestTimersStartAtRandomPhase: a timer armed in Start first fires after a delay drawn from
// [1, interval] µs, different per node and per seed but the same for one seed; later timers keep
// their interval; with AlignedTimers every node's first timer fires at the interval.
func TestTimersStartAtRandomPhase(t *testing.T) {
	const interval = 100_000
	firstFires := func(cfg Config) []int64 {
		s, rec := newSim(t, cfg, pingOpts{intervalUs: interval, size: 1})
		s.RunUntil(5 * interval)
		first := make([]int64, len(s.Nodes()))
		last := make([]int64, len(s.Nodes()))
		for _, e := range rec.entries {
			if e.Kind != "timer" {
				continue
			}
			if first[e.Node] == 0 {
				first[e.Node] = e.AtUs
			} else if gap := e.AtUs - last[e.Node]; gap != interval {
				t.Fatalf("node %d: a later timer fired %d µs after the previous one, want %d", e.Node, gap, interval)
			}
			last[e.Node] = e.AtUs
		}
		return first
	}
	a, b, other := firstFires(Config{Seed: 1}), firstFires(Config{Seed: 1}), firstFires(Config{Seed: 2})
	if !slices.Equal(a, b) {
		t.Fatalf("seed 1 gave phases %v, then %v", a, b)
	}
	if slices.Equal(a, other) {
		t.Fatalf("seeds 1 and 2 gave the same phases %v", a)
	}
	for node, at := range a {
		if at < 1 || at > interval {
			t.Fatalf("node %d's first timer fired at %d µs, want within [1, %d]", node, at, interval)
		}
	}
	if slices.Min(a) == slices.Max(a) {
		t.Fatalf("every node's first timer fired at %d µs", a[0])
	}
	for node, at := range firstFires(Config{Seed: 1, AlignedTimers: true}) {
		if at != interval {
			t.Fatalf("aligned: node %d's first timer fired at %d µs, want %d", node, at, interval)
		}
	}
}
