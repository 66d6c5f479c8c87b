package batch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/internal/codectest"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// note is the toy protocol's message: a per-link sequence number and the send time.
type note struct {
	Seq    uint64
	SentUs int64
	Pad    string
}

func (n *note) SizeBytes() int { return 16 + len(n.Pad) }

// toyCodec encodes notes.
var toyCodec protocol.Codec = wire.Codec{Protocol: "toy", Write: func(w *wire.Writer, m protocol.Message) bool {
	n, ok := m.(*note)
	if ok {
		w.Byte(7)
		w.Uvarint(n.Seq)
		w.Int63("sent", n.SentUs)
		w.String("pad", n.Pad, 1<<20)
	}
	return ok
}, Read: func(r *wire.Reader) protocol.Message {
	if r.Byte("tag") != 7 && r.Err() == nil {
		r.Fail("tag", "unknown")
	}
	return &note{Seq: r.Uvarint("seq"), SentUs: r.Int63("sent"), Pad: r.String("pad", 1<<20)}
}}

// toy sends, on each of its own timer's ticks (every periodUs, a protocol timer with a large id
// to check the wrapper's id mapping), a burst of burst numbered notes to every peer, and records
// what it receives: per sender, the sequence numbers and the delays.
type toy struct {
	env             protocol.Env
	self            protocol.NodeID
	peers           []protocol.NodeID
	periodUs        int64
	burst           int
	pad             int
	next            map[protocol.NodeID]uint64
	got             map[protocol.NodeID][]uint64
	maxDelayUs      int64
	log             []string
	stopAfterUs     int64
	timerID         protocol.TimerID
	unexpectedTimer bool
}

func toyFactory(periodUs int64, burst, pad int) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		if len(cfg.Params) != 0 {
			return nil, fmt.Errorf("toy: unexpected parameters %v", cfg.Params)
		}
		t := &toy{env: env, self: cfg.Self, periodUs: periodUs, burst: burst, pad: pad, next: map[protocol.NodeID]uint64{},
			got: map[protocol.NodeID][]uint64{}, stopAfterUs: 2_000_000, timerID: 1 << 40}
		for _, n := range cfg.Nodes {
			if n.ID != cfg.Self {
				t.peers = append(t.peers, n.ID)
			}
		}
		return t, nil
	}
}

func (t *toy) Start()                         { t.env.SetTimer(t.periodUs, t.timerID) }
func (t *toy) HandleRequest(protocol.Request) {}
func (t *toy) HandleMessage(from protocol.NodeID, m protocol.Message) {
	n := m.(*note)
	t.got[from] = append(t.got[from], n.Seq)
	t.maxDelayUs = max(t.maxDelayUs, t.env.NowUs()-n.SentUs)
	t.log = append(t.log, fmt.Sprintf("%d %d %d", t.env.NowUs(), from, n.Seq))
}
func (t *toy) HandleTimer(id protocol.TimerID) {
	if id != t.timerID {
		t.unexpectedTimer = true
		return
	}
	if t.env.NowUs() > t.stopAfterUs {
		return
	}
	for range t.burst {
		for _, p := range t.peers {
			t.next[p]++
			t.env.Send(p, &note{Seq: t.next[p], SentUs: t.env.NowUs(), Pad: strings.Repeat("x", t.pad)})
		}
	}
	t.env.SetTimer(t.periodUs, t.timerID)
}

func runToy(t *testing.T, params protocol.Params, periodUs int64, burst, pad int, chaos sim.Chaos) (*sim.Sim, []*toy) {
	t.Helper()
	topo, _ := topology.Preset("aws-3")
	s, err := sim.New(sim.Config{Topology: topo, Factory: Wrap(toyFactory(periodUs, burst, pad)), Params: params, Seed: 3, Chaos: chaos,
		ClockDriftPPM: []float64{43.7, -48.2, 88}, // drift: timers fire a rounding early or late in local time
		AlignedTimers: true})                      // the bursts leave at multiples of the period (one burst at 1.5 s)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(4_000_000)
	var toys []*toy
	for dc := range topo.N() {
		r := s.Replica(protocol.NodeID(dc))
		if w, ok := r.(*Replica); ok {
			r = w.Inner()
		}
		toys = append(toys, r.(*toy))
	}
	return s, toys
}

// TestBatchingKeepsLinksFIFOAndLosesNothing: on a reliable network every note arrives, in send
// order per link, within the one-way delay plus the window; far fewer network messages than notes
// are sent; and with the window 0 the protocol runs unwrapped and sends every note alone.
func TestBatchingKeepsLinksFIFOAndLosesNothing(t *testing.T) {
	topo, _ := topology.Preset("aws-3")
	maxOneWayUs := int64(0)
	for dc := range topo.N() {
		maxOneWayUs = max(maxOneWayUs, int64(topo.MaxRTTMs(dc)*1000)/2)
	}
	for _, c := range []struct {
		params   protocol.Params
		windowUs int64
	}{{nil, 20_000}, {protocol.Params{ParamWindow: "35"}, 35_000}, {protocol.Params{ParamWindow: "0"}, 0}} {
		s, toys := runToy(t, c.params, 7_000, 3, 0, sim.Chaos{})
		notes := 0
		for _, tt := range toys {
			if tt.unexpectedTimer {
				t.Fatal("the protocol got a timer it did not set")
			}
			for from, seqs := range tt.got {
				want := make([]uint64, toys[from].next[tt.self])
				for i := range want {
					want[i] = uint64(i + 1)
				}
				if !slices.Equal(seqs, want) {
					t.Fatalf("window %d: %d got from %d %d notes out of order or lost (sent %d)", c.windowUs, tt.self, from, len(seqs), len(want))
				}
				notes += len(seqs)
			}
			// Jitter: the preset's deviations (a few ms) on top of the one-way delay.
			if tt.maxDelayUs > maxOneWayUs+c.windowUs+30_000 {
				t.Errorf("window %d: a note took %d us", c.windowUs, tt.maxDelayUs)
			}
		}
		msgs := int(s.Stats().Messages)
		t.Logf("window %d us: %d notes in %d network messages", c.windowUs, notes, msgs)
		if (c.windowUs == 0) != (msgs == notes) || (c.windowUs > 0 && msgs*5 > notes) {
			t.Errorf("window %d us: %d notes in %d network messages", c.windowUs, notes, msgs)
		}
	}
}

// TestBatchingFlushesFullBuffers: a burst of more than MaxMessages notes, or of more than
// MaxBytes, leaves at once in full batches, and the rest after the window.
func TestBatchingFlushesFullBuffers(t *testing.T) {
	for _, c := range []struct {
		burst, pad, perBatch int
	}{{2500, 0, MaxMessages}, {40, 100_000, MaxBytes/100_016 + 1}} {
		s, toys := runToy(t, nil, 1_500_000, c.burst, c.pad, sim.Chaos{}) // one burst, at 1.5 s
		for _, tt := range toys {
			for from, seqs := range tt.got {
				if len(seqs) != c.burst {
					t.Fatalf("%d got %d of %d notes from %d", tt.self, len(seqs), c.burst, from)
				}
			}
		}
		links := 6
		want := links * ((c.burst + c.perBatch - 1) / c.perBatch)
		if got := int(s.Stats().Messages); got != want {
			t.Errorf("burst %d of %d-byte pads: %d network messages, want %d", c.burst, c.pad, got, want)
		}
	}
}

// TestBatchingIsDeterministic: the same run twice, on a lossy, duplicating, reordering network,
// delivers the same notes at the same times.
func TestBatchingIsDeterministic(t *testing.T) {
	chaos := sim.Chaos{LossProb: 0.1, DuplicateProb: 0.1, Reorder: true, ExtraDelayMaxUs: 50_000}
	_, a := runToy(t, nil, 7_000, 3, 0, chaos)
	_, b := runToy(t, nil, 7_000, 3, 0, chaos)
	for i := range a {
		if !slices.Equal(a[i].log, b[i].log) || len(a[i].log) == 0 {
			t.Fatalf("replica %d: runs differ (%d vs %d deliveries)", i, len(a[i].log), len(b[i].log))
		}
	}
}

// TestWindowParameter: defaults by cluster size, and malformed values refused.
func TestWindowParameter(t *testing.T) {
	for n, want := range map[int]int{1: 20, 3: 20, 4: 30, 5: 30, 7: 40, 9: 50, 21: 50} {
		if got := DefaultWindowMs(n); got != want {
			t.Errorf("DefaultWindowMs(%d) = %d, want %d", n, got, want)
		}
	}
	topo, _ := topology.Preset("aws-3")
	for _, bad := range []string{"-1", "x", "1.5"} {
		_, err := sim.New(sim.Config{Topology: topo, Factory: Wrap(toyFactory(1000, 1, 0)), Params: protocol.Params{ParamWindow: bad}})
		if err == nil || !strings.Contains(err.Error(), ParamWindow) {
			t.Errorf("%s=%s: %v", ParamWindow, bad, err)
		}
	}
}

// TestModeParameter: batch_mode is network or instance, anything else is refused naming the
// parameter; in instance mode Wrap leaves the replica unwrapped and InstanceWindowUs gives the
// window (by default the one of the cluster size, 0 turning batching off), in network mode 0.
func TestModeParameter(t *testing.T) {
	topo, _ := topology.Preset("aws-3")
	if _, err := sim.New(sim.Config{Topology: topo, Factory: Wrap(toyFactory(1000, 1, 0)), Params: protocol.Params{ParamMode: "proposal"}}); err == nil || !strings.Contains(err.Error(), ParamMode) {
		t.Errorf("%s=proposal: %v", ParamMode, err)
	}
	nodes := make([]protocol.Node, 5)
	for _, c := range []struct {
		params protocol.Params
		wantUs int64
	}{
		{protocol.Params{}, 0},
		{protocol.Params{ParamMode: ModeNetwork, ParamWindow: "7"}, 0},
		{protocol.Params{ParamMode: ModeInstance}, 30_000},
		{protocol.Params{ParamMode: ModeInstance, ParamWindow: "7"}, 7_000},
		{protocol.Params{ParamMode: ModeInstance, ParamWindow: "0"}, 0},
	} {
		cfg := protocol.Config{Nodes: nodes, Params: c.params}
		if got, err := InstanceWindowUs(cfg); err != nil || got != c.wantUs {
			t.Errorf("%v: window %d µs (%v), want %d", c.params, got, err, c.wantUs)
		}
		r, err := Wrap(func(protocol.Config, protocol.Env) (protocol.Replica, error) { return &toy{}, nil })(cfg, nil)
		if _, wrapped := r.(*Replica); err != nil || wrapped == (c.params[ParamMode] == ModeInstance) {
			t.Errorf("%v: replica %T (%v)", c.params, r, err)
		}
	}
}

// TestCodecRoundTrip: single messages and batches round-trip, truncations and trailing bytes are
// refused, and so are batches the wrapper never sends.
func TestCodecRoundTrip(t *testing.T) {
	c := WrapCodec(toyCodec)
	codectest.RoundTrip(t, c, []protocol.Message{
		&note{Seq: 1, SentUs: 5, Pad: "a"},
		&Batch{Msgs: []protocol.Message{&note{Seq: 1}, &note{Seq: 2, Pad: "xy"}, &note{Seq: 3}}},
	})
	for _, m := range []protocol.Message{
		&Batch{}, &Batch{Msgs: []protocol.Message{&note{}}}, (*Batch)(nil),
		&Batch{Msgs: []protocol.Message{&note{}, &Batch{Msgs: []protocol.Message{&note{}, &note{}}}}},
		&Batch{Msgs: make([]protocol.Message, MaxMessages+1)},
	} {
		if _, err := c.Append(nil, m); err == nil {
			t.Errorf("encoded %T with %d messages", m, batchLen(m.(*Batch)))
		}
	}
	for _, b := range [][]byte{{prefixBatch, 1, 0}, {prefixBatch, 0}, {9}, {prefixBatch, 2, 1, 7, 1, 7}} {
		if m, err := c.Decode(b); err == nil || m != nil || !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("decoded %x: %v, %v", b, m, err)
		}
	}
}

// FuzzDecode: Decode never panics and decodes only canonical encodings.
func FuzzDecode(f *testing.F) {
	codectest.Fuzz(f, WrapCodec(toyCodec), []protocol.Message{
		&note{Seq: 1},
		&Batch{Msgs: []protocol.Message{&note{Seq: 1}, &note{Seq: 2, Pad: "xy"}}},
	}, nil)
}

// ordered is a toy that orders versions itself.
type ordered struct{ *toy }

func (ordered) VersionOrder() map[string][]txn.ID { return map[string][]txn.ID{"k": {txn.NewID(1, 1)}} }

// TestWrapKeepsVersionOrderer: a protocol that orders versions itself still does behind the
// wrapper, for drivers that look through it (protocol.Innermost), and one that does not, does
// not appear to.
func TestWrapKeepsVersionOrderer(t *testing.T) {
	topo, _ := topology.Preset("aws-3")
	cfg := protocol.Config{Nodes: []protocol.Node{{ID: 0}, {ID: 1, DC: 1}, {ID: 2, DC: 2}}, Topology: topo}
	plain := toyFactory(1000, 1, 0)
	withOrder := func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		r, err := plain(cfg, env)
		return ordered{r.(*toy)}, err
	}
	r, err := Wrap(withOrder)(cfg, nil)
	if vo, ok := protocol.Innermost(r).(protocol.VersionOrderer); err != nil || !ok || len(vo.VersionOrder()["k"]) != 1 {
		t.Fatalf("wrapped VersionOrderer lost: %T, %v", r, err)
	}
	if r, err := Wrap(plain)(cfg, nil); err != nil {
		t.Fatal(err)
	} else if _, ok := protocol.Innermost(r).(protocol.VersionOrderer); ok {
		t.Fatalf("%T claims a version order", r)
	}
}
