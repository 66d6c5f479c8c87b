// Package batch is network-level message batching for any protocol (spec alvin.md §5.3 [R]):
// each replica buffers its outgoing peer messages per destination and sends a destination's
// buffer as one Batch when the batching window W has passed since its first message, or at once
// when it holds MaxMessages messages or MaxBytes bytes (by SizeBytes). The receiver hands a
// Batch's messages to the protocol one by one, in order, so every link stays FIFO and the
// protocol sees exactly the messages it would see without batching, later.
//
// It wraps a protocol without the protocol knowing: Wrap wraps its Factory (the replica gets an
// Env whose Send buffers) and WrapCodec its Codec (a Batch carries several encoded messages).
// Adopting it is a matter of registration:
//
//	registry.Register("x", registry.Entry{New: batch.Wrap(x.New), Codec: batch.WrapCodec(x.Codec), ...})
//
// The window is the parameter batch_window_ms (ParamWindow), removed before the protocol sees
// its parameters; 0 turns batching off and runs the protocol's replica unwrapped. Its default
// follows the spec's table by cluster size N (the number of replicas): 20 ms for N ≤ 3, 30 ms for
// N ≤ 5, 40 ms for N ≤ 7, 50 ms above (DefaultWindowMs).
//
// The mode is the parameter batch_mode (ParamMode): "network" (the default) is the above;
// "instance" is the spec's alternative, batching proposals into one ordering instance (package
// pcc, Batcher): Wrap then runs the protocol's replica unwrapped and leaves both parameters to
// it, and the protocol reads its window with InstanceWindowUs (same default and values) and lists
// Params among the parameters it accepts.
//
// Timers: the wrapper shares the replica's timer space by doubling the protocol's timer ids (the
// protocol's id i is the driver's 2i) and using odd ids for its flushes, so a wrapped protocol's
// timer ids must lie within ±2^62.
package batch

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
)

// ParamWindow is the batching window in milliseconds (an integer; 0: no batching).
const ParamWindow = "batch_window_ms"

// ParamMode selects what is batched: ModeNetwork (default) or ModeInstance.
const ParamMode = "batch_mode"

// The batching modes.
const (
	// ModeNetwork batches each replica's outgoing messages per destination (this package).
	ModeNetwork = "network"
	// ModeInstance batches the transactions a proposer receives within a window into one
	// ordering instance (pcc.Batcher, read by the protocol).
	ModeInstance = "instance"
)

// Params are the batching parameters a protocol that supports instance batching accepts.
var Params = []string{ParamMode, ParamWindow}

// mode returns the batching mode p selects.
func mode(p protocol.Params) (string, error) {
	switch m := p[ParamMode]; m {
	case "", ModeNetwork:
		return ModeNetwork, nil
	case ModeInstance:
		return ModeInstance, nil
	default:
		return "", fmt.Errorf("parameter %s: %q is neither %s nor %s", ParamMode, m, ModeNetwork, ModeInstance)
	}
}

// windowMs returns the window p gives for a cluster of n replicas (DefaultWindowMs unless
// ParamWindow is set).
func windowMs(p protocol.Params, n int) (int, error) {
	s, ok := p[ParamWindow]
	if !ok {
		return DefaultWindowMs(n), nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("parameter %s: %q is not a non-negative number of milliseconds", ParamWindow, s)
	}
	return v, nil
}

// InstanceWindowUs returns the instance-batching window of cfg in microseconds: the window
// (ParamWindow, by default DefaultWindowMs of the cluster size) when ParamMode is ModeInstance,
// else 0 (no instance batching).
func InstanceWindowUs(cfg protocol.Config) (int64, error) {
	m, err := mode(cfg.Params)
	if err != nil || m != ModeInstance {
		return 0, err
	}
	w, err := windowMs(cfg.Params, len(cfg.Nodes))
	return int64(w) * 1000, err
}

// Flush thresholds of one destination's buffer (spec §5.3).
const (
	// MaxMessages flushes a buffer that holds this many messages.
	MaxMessages = 1000
	// MaxBytes flushes a buffer whose messages' SizeBytes add up to this much.
	MaxBytes = 1 << 20
)

// DefaultWindowMs is the spec's window for a cluster of n replicas: 20, 30, 40 or 50 ms for
// n ≤ 3, ≤ 5, ≤ 7 and above.
func DefaultWindowMs(n int) int {
	switch {
	case n <= 3:
		return 20
	case n <= 5:
		return 30
	case n <= 7:
		return 40
	}
	return 50
}

// Batch is several messages to one destination, in send order (at least two: a buffer of one
// message is sent as that message).
type Batch struct {
	Msgs []protocol.Message
}

// SizeBytes is the inner messages' sizes plus a few bytes of framing each.
func (b *Batch) SizeBytes() int {
	size := 3
	for _, m := range b.Msgs {
		size += 3 + m.SizeBytes()
	}
	return size
}

// Wrap returns f with batching: the factory reads and removes ParamMode and ParamWindow, and
// with a positive window builds f's replica over a batching Env. In ModeInstance it builds f's
// replica as it is, with both parameters left for it.
func Wrap(f protocol.Factory) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		m, err := mode(cfg.Params)
		if err != nil {
			return nil, err
		}
		if m == ModeInstance {
			return f(cfg, env)
		}
		w, err := windowMs(cfg.Params, len(cfg.Nodes))
		if err != nil {
			return nil, err
		}
		_, hasWindow := cfg.Params[ParamWindow]
		if _, hasMode := cfg.Params[ParamMode]; hasWindow || hasMode {
			params := make(protocol.Params, len(cfg.Params))
			for k, v := range cfg.Params {
				if k != ParamWindow && k != ParamMode {
					params[k] = v
				}
			}
			cfg.Params = params
		}
		if w == 0 {
			return f(cfg, env)
		}
		b := &batcher{env: env, windowUs: int64(w) * 1000, bufs: make(map[protocol.NodeID]*buffer), armed: make(map[uint64]protocol.NodeID)}
		inner, err := f(cfg, b)
		if err != nil {
			return nil, err
		}
		return &Replica{inner: inner, b: b}, nil
	}
}

// Replica is a protocol replica behind a batching Env.
type Replica struct {
	inner protocol.Replica
	b     *batcher
}

// Inner returns the wrapped protocol's replica (protocol.Wrapper): drivers find its optional
// interfaces there, and tests inspect it.
func (r *Replica) Inner() protocol.Replica { return r.inner }

// Start starts the protocol.
func (r *Replica) Start() { r.inner.Start() }

// HandleRequest hands the request to the protocol.
func (r *Replica) HandleRequest(req protocol.Request) { r.inner.HandleRequest(req) }

// HandleMessage hands a message, or each message of a Batch in order, to the protocol.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	if b, ok := m.(*Batch); ok {
		for _, x := range b.Msgs {
			r.inner.HandleMessage(from, x)
		}
		return
	}
	r.inner.HandleMessage(from, m)
}

// HandleTimer fires the wrapper's flush timers (odd ids) and passes the protocol's timers on.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id&1 == 1 {
		r.b.fire(uint64(id) >> 1)
		return
	}
	r.inner.HandleTimer(id >> 1)
}

// buffer is one destination's pending messages.
type buffer struct {
	msgs  []protocol.Message
	bytes int
	gen   uint64 // names the flush timer armed for the buffer's first message
}

// batcher is the Env the protocol sees: Send buffers, everything else passes through.
type batcher struct {
	env      protocol.Env
	windowUs int64
	bufs     map[protocol.NodeID]*buffer
	// Each buffer that receives a first message gets a new generation number, and its flush
	// timer the odd id 2·gen+1; armed maps the generations whose timers have not fired yet to
	// their destinations. A timer flushes its buffer only if no flush emptied it meanwhile (same
	// generation), whatever the local clock reads when it fires, so that a driver's rounding of
	// timer delays can never strand a buffer.
	lastGen uint64
	armed   map[uint64]protocol.NodeID
}

func (b *batcher) NowUs() int64           { return b.env.NowUs() }
func (b *batcher) Rand() *rand.Rand       { return b.env.Rand() }
func (b *batcher) Reply(r protocol.Reply) { b.env.Reply(r) }
func (b *batcher) Store() *store.Store    { return b.env.Store() }

// SetTimer doubles the protocol's timer id (see the package comment).
func (b *batcher) SetTimer(afterUs int64, id protocol.TimerID) { b.env.SetTimer(afterUs, id<<1) }

// Send appends m to to's buffer, arming a flush timer for a buffer that was empty, and flushes
// the buffer at once when it is full.
func (b *batcher) Send(to protocol.NodeID, m protocol.Message) {
	buf := b.bufs[to]
	if buf == nil {
		buf = &buffer{}
		b.bufs[to] = buf
	}
	if len(buf.msgs) == 0 {
		b.lastGen++
		buf.gen = b.lastGen
		b.armed[buf.gen] = to
		b.env.SetTimer(b.windowUs, protocol.TimerID(buf.gen<<1|1))
	}
	buf.msgs = append(buf.msgs, m)
	buf.bytes += m.SizeBytes()
	if len(buf.msgs) >= MaxMessages || buf.bytes >= MaxBytes {
		b.flush(to, buf)
	}
}

// fire handles flush timer gen: it sends its buffer unless a full flush emptied it since.
func (b *batcher) fire(gen uint64) {
	to, ok := b.armed[gen]
	if !ok {
		return
	}
	delete(b.armed, gen)
	if buf := b.bufs[to]; buf.gen == gen && len(buf.msgs) > 0 {
		b.flush(to, buf)
	}
}

// flush sends to's buffer: its one message, or a Batch.
func (b *batcher) flush(to protocol.NodeID, buf *buffer) {
	if len(buf.msgs) == 1 {
		b.env.Send(to, buf.msgs[0])
	} else {
		b.env.Send(to, &Batch{Msgs: buf.msgs})
	}
	buf.msgs, buf.bytes = nil, 0
}
