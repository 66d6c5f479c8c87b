// Package checkpointtest is the one round-trip harness of protocol.Checkpointer, shared by every
// protocol's tests: it runs a protocol's swarm seeds (random topology, skew, faults, chaos and
// workload, internal/swarm) in the simulator with every replica shadowed. Every so many inputs a
// replica writes a checkpoint of its state and its store; a fresh replica, built by the
// protocol's factory with the same configuration, restores it, and from then on is fed the same
// inputs as the original (peer messages through the protocol's codec, as a real node replays
// them) with the same clock readings and random numbers. The harness requires that the restored
// replica re-encodes to the very checkpoint it came from, that it produces exactly the original's
// outputs (sends, encoded by the codec; timers; replies; its store's size) input after input, and
// that at the next checkpoint both encode alike. The run itself must pass the swarm's checks.
package checkpointtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/tools/bench"
)

// EveryInputs is how many inputs a replica handles between two checkpoints in RoundTrip.
const EveryInputs = 97

// LongSeeds is how many seeds RoundTrip runs with MERIDIAN_LONG=1, whatever its caller asks.
const LongSeeds = 50

// RoundTrip runs seeds 1..seeds of proto's swarm (LongSeeds with MERIDIAN_LONG=1) with every
// replica shadowed as the package comment says, and fails t at the first difference, naming the
// seed, the node and the input.
func RoundTrip(t *testing.T, proto string, seeds int) {
	t.Helper()
	RoundTripWith(t, proto, seeds, nil)
}

// RoundTripWith is RoundTrip with each seed's options changed by adjust (if not nil) after
// they are drawn, as swarm.RunWith does: for a deployment the swarm does not draw, such as a
// protocol's extra nodes.
func RoundTripWith(t *testing.T, proto string, seeds int, adjust func(seed uint64, opts *bench.Options)) {
	t.Helper()
	swarm.SimulationGC(t)
	if os.Getenv("MERIDIAN_LONG") != "" {
		seeds = LongSeeds
	}
	entry, err := registry.Lookup(proto)
	if err != nil {
		t.Fatal(err)
	}
	restored := 0
	for seed := range uint64(seeds) {
		seed++
		h := &harness{entry: entry}
		name := register(proto, h)
		opts := swarm.Draw(proto, seed)
		opts.DurationUs = min(opts.DurationUs, 2_000_000)
		if adjust != nil {
			adjust(seed, &opts)
		}
		if _, err := swarm.Check(name, opts); err != nil {
			t.Fatalf("seed %d: the shadowed run fails its checks: %v", seed, err)
		}
		if h.err != nil {
			t.Fatalf("seed %d: %v", seed, h.err)
		}
		restored += h.restored
	}
	if restored == 0 {
		t.Fatalf("no replica of %d seeds handled %d inputs: nothing was checkpointed", seeds, EveryInputs)
	}
	t.Logf("%d seeds, %d checkpoints restored and followed", seeds, restored)
}

var (
	registered   sync.Mutex
	registration int
)

// register registers proto's entry under a fresh name with its factory shadowed by h.
func register(proto string, h *harness) string {
	registered.Lock()
	defer registered.Unlock()
	registration++
	name := fmt.Sprintf("checkpointtest-%d-%s", registration, proto)
	e := h.entry
	e.New = h.factory
	registry.Register(name, e)
	return name
}

// harness collects one run's first difference.
type harness struct {
	entry registry.Entry
	// allowPlain runs replicas that write no checkpoints unshadowed instead of failing (Shadow).
	allowPlain bool
	err        error
	restored   int // checkpoints restored
}

func (h *harness) fail(format string, args ...any) {
	if h.err == nil {
		h.err = fmt.Errorf(format, args...)
	}
}

func (h *harness) factory(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
	pcg := rand.NewPCG(env.Rand().Uint64(), env.Rand().Uint64())
	te := &recordingEnv{inner: env, pcg: pcg, rand: rand.New(pcg), disk: store.NewMemDisk()}
	orig, err := h.entry.New(cfg, te)
	if err != nil {
		return nil, err
	}
	if !protocol.Checkpoints(orig) {
		if h.allowPlain {
			// Not shadowed: it runs on the simulator's Env as it is.
			return h.entry.New(cfg, env)
		}
		return nil, fmt.Errorf("%s: %T does not write checkpoints (protocol.Checkpoints)", h.entry.Name, orig)
	}
	return &twin{h: h, cfg: cfg, env: te, orig: orig}, nil
}

// twin is the replica the simulator runs: the original, with its shadow once it has one.
type twin struct {
	h      *harness
	cfg    protocol.Config
	env    *recordingEnv
	orig   protocol.Replica
	shadow protocol.Replica
	senv   *recordingEnv
	inputs int
}

// Inner implements protocol.Wrapper: the drivers find the original's optional interfaces.
func (w *twin) Inner() protocol.Replica { return w.orig }

func (w *twin) Start() { w.input("start", func(r protocol.Replica) { r.Start() }) }

func (w *twin) HandleTimer(id protocol.TimerID) {
	w.input(fmt.Sprintf("timer %d", id), func(r protocol.Replica) { r.HandleTimer(id) })
}

func (w *twin) HandleRequest(req protocol.Request) {
	w.input(fmt.Sprintf("request %d/%d", req.Client, req.Seq), func(r protocol.Replica) { r.HandleRequest(req) })
}

func (w *twin) HandleMessage(from protocol.NodeID, m protocol.Message) {
	what := fmt.Sprintf("message %T from %d", m, from)
	if w.shadow == nil || w.h.err != nil {
		w.input(what, func(r protocol.Replica) { r.HandleMessage(from, m) })
		return
	}
	// The shadow gets the message through the codec, as a restarted node replays it.
	b, err := w.h.entry.Codec.Append(nil, m)
	if err != nil {
		w.h.fail("node %d: encoding %s: %v", w.cfg.Self, what, err)
		return
	}
	copy, err := w.h.entry.Codec.Decode(b)
	if err != nil {
		w.h.fail("node %d: decoding %s: %v", w.cfg.Self, what, err)
		return
	}
	w.inputs++
	w.maybeCheckpoint()
	w.env.begin(false)
	w.orig.HandleMessage(from, m)
	w.replayInShadow(what, func(r protocol.Replica) { r.HandleMessage(from, copy) })
}

// input runs one input through the original and, if there is one, the shadow.
func (w *twin) input(what string, f func(protocol.Replica)) {
	w.inputs++
	w.maybeCheckpoint()
	w.env.begin(false)
	f(w.orig)
	w.replayInShadow(what, f)
}

// replayInShadow runs the input in the shadow with the original's clock readings and compares
// the outputs.
func (w *twin) replayInShadow(what string, f func(protocol.Replica)) {
	if w.shadow == nil || w.h.err != nil {
		return
	}
	w.senv.begin(true)
	w.senv.readings = w.env.readings
	f(w.shadow)
	if err := w.sameOutputs(); err != nil {
		w.h.fail("node %d, input %d (%s) after restoring its checkpoint: %v", w.cfg.Self, w.inputs, what, err)
	}
}

// maybeCheckpoint, every EveryInputs inputs, compares the shadow's state with the original's
// and replaces the shadow by one restored from a fresh checkpoint.
func (w *twin) maybeCheckpoint() {
	if w.inputs%EveryInputs != 0 || w.h.err != nil {
		return
	}
	ckpt, err := w.orig.(protocol.Checkpointer).AppendCheckpoint(nil, w.h.entry.Codec)
	if err != nil {
		w.h.fail("node %d, input %d: checkpoint: %v", w.cfg.Self, w.inputs, err)
		return
	}
	storeCkpt := w.env.inner.Store().AppendCheckpoint(nil)
	if w.shadow != nil {
		err := sameCheckpoint(w.shadow, w.h.entry.Codec, w.senv.store, ckpt, storeCkpt)
		if err == nil && !w.senv.disk.Equal(w.env.disk) {
			err = fmt.Errorf("disks differ (%d keys, the original's %d)", w.senv.disk.Len(), w.env.disk.Len())
		}
		if err != nil {
			w.h.fail("node %d, input %d: the restored replica fed the same inputs drifted from the original: %v", w.cfg.Self, w.inputs, err)
			return
		}
	}
	pcg := *w.env.pcg
	senv := &recordingEnv{pcg: &pcg, store: store.New(), disk: w.env.disk.Clone()}
	senv.rand = rand.New(senv.pcg)
	if err := senv.store.RestoreCheckpoint(storeCkpt); err != nil {
		w.h.fail("node %d, input %d: restoring the store: %v", w.cfg.Self, w.inputs, err)
		return
	}
	shadow, err := w.h.entry.New(w.cfg, senv)
	if err == nil {
		err = shadow.(protocol.Checkpointer).RestoreCheckpoint(ckpt, w.h.entry.Codec)
	}
	*senv.pcg = pcg // whatever the factory drew
	if err == nil {
		err = sameCheckpoint(shadow, w.h.entry.Codec, senv.store, ckpt, storeCkpt)
	}
	if err != nil {
		w.h.fail("node %d, input %d: restoring its checkpoint: %v", w.cfg.Self, w.inputs, err)
		return
	}
	w.shadow, w.senv = shadow, senv
	w.h.restored++
}

// sameCheckpoint requires r (with codec c) and s to encode as ckpt and storeCkpt.
func sameCheckpoint(r protocol.Replica, c protocol.Codec, s *store.Store, ckpt, storeCkpt []byte) error {
	again, err := r.(protocol.Checkpointer).AppendCheckpoint(nil, c)
	switch {
	case err != nil:
		return fmt.Errorf("checkpoint: %w", err)
	case !bytes.Equal(again, ckpt):
		return fmt.Errorf("replica checkpoints differ: %d bytes %x…, want %d bytes %x…", len(again), head(again), len(ckpt), head(ckpt))
	case !bytes.Equal(s.AppendCheckpoint(nil), storeCkpt):
		return fmt.Errorf("store checkpoints differ (%d versions, want as many as the original's)", s.Versions())
	}
	return nil
}

func head(b []byte) []byte { return b[:min(len(b), 32)] }

// sameOutputs compares the outputs of the input just handled by the original and the shadow.
func (w *twin) sameOutputs() error {
	a, b := w.env, w.senv
	if b.replayPos != len(a.readings) {
		return fmt.Errorf("the shadow read the clock %d times, the original %d", b.replayPos, len(a.readings))
	}
	if !slices.Equal(a.timers, b.timers) {
		return fmt.Errorf("timers %v, the original set %v", b.timers, a.timers)
	}
	if len(a.sends) != len(b.sends) {
		return fmt.Errorf("%d sends, the original %d", len(b.sends), len(a.sends))
	}
	codec := w.h.entry.Codec
	for i := range a.sends {
		ea, errA := codec.Append(nil, a.sends[i].m)
		eb, errB := codec.Append(nil, b.sends[i].m)
		if a.sends[i].to != b.sends[i].to || errA != nil || errB != nil || !bytes.Equal(ea, eb) {
			return fmt.Errorf("send %d: %T to %d (%v), the original %T to %d (%v)", i, b.sends[i].m, b.sends[i].to, errB, a.sends[i].m, a.sends[i].to, errA)
		}
	}
	if len(a.replies) != len(b.replies) {
		return fmt.Errorf("%d replies, the original %d", len(b.replies), len(a.replies))
	}
	for i := range a.replies {
		ea, eb := encodeReply(codec, a.replies[i]), encodeReply(codec, b.replies[i])
		if !bytes.Equal(ea, eb) {
			return fmt.Errorf("reply %d: %+v, the original %+v", i, b.replies[i], a.replies[i])
		}
	}
	if sa, sb := a.inner.Store(), b.store; sa.Seq() != sb.Seq() || sa.Versions() != sb.Versions() {
		return fmt.Errorf("store at position %d with %d versions, the original's at %d with %d", sb.Seq(), sb.Versions(), sa.Seq(), sa.Versions())
	}
	return nil
}

// encodeReply encodes r, its operation with the protocol's codec; an unencodable reply encodes
// as its error, which differs from every encoding.
func encodeReply(codec protocol.Codec, r protocol.Reply) []byte {
	op := r.Op
	r.Op = nil
	b, err := wire.AppendReply(nil, &r)
	if err == nil && op != nil {
		b, err = codec.Append(b, op)
	}
	if err != nil {
		return []byte("unencodable: " + err.Error())
	}
	return b
}

type sent struct {
	to protocol.NodeID
	m  protocol.Message
}

type timer struct {
	afterUs int64
	id      protocol.TimerID
}

// recordingEnv records one input's clock readings and outputs. The original's passes every call
// on to the simulator's Env, but draws its random numbers from a source of its own, whose state
// a checkpoint copies; the shadow's replays the original's clock readings and keeps its outputs.
// Each has a Disk of its own (protocol.DiskEnv): a shadow's starts as a copy of the original's
// when its checkpoint is taken, as a restarted node finds its disk.
type recordingEnv struct {
	inner     protocol.Env // nil for a shadow
	store     *store.Store // a shadow's own
	disk      *store.MemDisk
	pcg       *rand.PCG
	rand      *rand.Rand
	replaying bool
	readings  []int64
	replayPos int
	lastUs    int64
	sends     []sent
	timers    []timer
	replies   []protocol.Reply
}

// begin starts recording a new input.
func (e *recordingEnv) begin(replaying bool) {
	e.replaying, e.replayPos = replaying, 0
	if !replaying {
		e.readings = e.readings[:0]
	}
	e.sends, e.timers, e.replies = e.sends[:0], e.timers[:0], e.replies[:0]
}

func (e *recordingEnv) NowUs() int64 {
	if e.inner != nil {
		now := e.inner.NowUs()
		e.readings = append(e.readings, now)
		return now
	}
	if e.replayPos < len(e.readings) {
		e.lastUs = e.readings[e.replayPos]
	}
	e.replayPos++ // past the recorded readings: sameOutputs reports it
	return e.lastUs
}

func (e *recordingEnv) Rand() *rand.Rand { return e.rand }

func (e *recordingEnv) Store() *store.Store {
	if e.inner != nil {
		return e.inner.Store()
	}
	return e.store
}

// Disk implements protocol.DiskEnv.
func (e *recordingEnv) Disk() protocol.Disk { return e.disk }

func (e *recordingEnv) Send(to protocol.NodeID, m protocol.Message) {
	e.sends = append(e.sends, sent{to, m})
	if e.inner != nil {
		e.inner.Send(to, m)
	}
}

func (e *recordingEnv) SetTimer(afterUs int64, id protocol.TimerID) {
	e.timers = append(e.timers, timer{afterUs, id})
	if e.inner != nil {
		e.inner.SetTimer(afterUs, id)
	}
}

func (e *recordingEnv) Reply(r protocol.Reply) {
	e.replies = append(e.replies, r)
	if e.inner != nil {
		e.inner.Reply(r)
	}
}
