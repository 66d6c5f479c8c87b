package checkpointtest

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// counter is a toy replica that numbers the requests it served in its replies; its checkpoint
// keeps the number unless forgetful.
type counter struct {
	env       protocol.Env
	served    uint64
	forgetful bool
}

func (c *counter) Start()                                          {}
func (c *counter) HandleMessage(protocol.NodeID, protocol.Message) {}
func (c *counter) HandleTimer(protocol.TimerID)                    {}
func (c *counter) HandleRequest(req protocol.Request) {
	c.served++
	c.env.NowUs() // a clock reading, which the shadow replays
	c.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Value: binary.AppendUvarint(nil, c.served)})
}

func (c *counter) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	if c.forgetful {
		return dst, nil
	}
	return binary.AppendUvarint(dst, c.served), nil
}

func (c *counter) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	if c.forgetful {
		return nil
	}
	v, n := binary.Uvarint(b)
	if n != len(b) {
		return errors.New("counter: malformed checkpoint")
	}
	c.served = v
	return nil
}

// fakeEnv is the driver's Env of the toy runs.
type fakeEnv struct {
	nowUs int64
	rand  *rand.Rand
	store *store.Store
}

func (e *fakeEnv) NowUs() int64                           { e.nowUs++; return e.nowUs }
func (e *fakeEnv) Rand() *rand.Rand                       { return e.rand }
func (e *fakeEnv) Send(protocol.NodeID, protocol.Message) {}
func (e *fakeEnv) SetTimer(int64, protocol.TimerID)       {}
func (e *fakeEnv) Reply(protocol.Reply)                   {}
func (e *fakeEnv) Store() *store.Store                    { return e.store }

// shadowedCounter feeds a shadowed toy replica 3·EveryInputs requests and returns the harness's
// finding.
func shadowedCounter(t *testing.T, forgetful bool) *harness {
	t.Helper()
	h := &harness{entry: registry.Entry{Name: "counter", New: func(_ protocol.Config, env protocol.Env) (protocol.Replica, error) {
		return &counter{env: env, forgetful: forgetful}, nil
	}}}
	r, err := h.factory(protocol.Config{}, &fakeEnv{rand: rand.New(rand.NewPCG(1, 2)), store: store.New()})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	for i := range 3 * EveryInputs {
		r.HandleRequest(protocol.Request{Client: 1, Seq: uint64(i), Kind: protocol.Get, Key: "k"})
	}
	return h
}

// TestHarnessCatchesForgottenState is the harness's negative control: a replica whose checkpoint
// leaves out state its outputs depend on is caught (its restored twin answers differently),
// while the faithful one passes with checkpoints restored.
func TestHarnessCatchesForgottenState(t *testing.T) {
	if h := shadowedCounter(t, false); h.err != nil || h.restored != 3 {
		t.Fatalf("faithful checkpoints: %v, %d restored, want no finding and 3 (start and the requests: 3·EveryInputs+1 inputs)", h.err, h.restored)
	}
	h := shadowedCounter(t, true)
	if h.err == nil || !strings.Contains(h.err.Error(), "reply 0") {
		t.Fatalf("forgetful checkpoints: %v, want a differing reply", h.err)
	}
	t.Logf("caught: %v", h.err)
}
