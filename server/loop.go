package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// inputKind says what a recorded input was.
type inputKind byte

const (
	inStart inputKind = iota + 1
	inMessage
	inRequest
	inTimer
	inCall // runs call on the loop goroutine (inspection); not a replica input, not recorded
)

// input is one thing the event loop hands the replica.
type input struct {
	kind  inputKind
	from  protocol.NodeID
	raw   []byte // inMessage: the encoded message, as persisted
	msg   protocol.Message
	req   protocol.Request
	reply func(protocol.Reply, error) // inRequest: where the answer or refusal goes (not persisted)
	timer protocol.TimerID
	atUs  int64 // when the input reached the node (for latency metrics)
	call  func()
}

type send struct {
	to  protocol.NodeID
	msg protocol.Message
}

type timerReq struct {
	afterUs int64
	id      protocol.TimerID
}

// env is the replica's protocol.Env in the network runtime. Effects are buffered and released
// by the loop only after the inputs that caused them are durable ("persist before send").
type env struct {
	wallUs    func() int64
	lastUs    int64
	readings  []int64 // clock readings of the current input: recorded, or replayed
	replaying bool
	replayPos int
	pcg       *rand.PCG // the state of rand, which checkpoints save
	rand      *rand.Rand
	store     *store.Store
	disk      disk
	// recordVersions: the replica records the checker's version order (cluster.Config.NoVersionRecord).
	recordVersions bool

	sends   []send
	timers  []timerReq
	replies []protocol.Reply
}

func (e *env) NowUs() int64 {
	if e.replaying {
		if e.replayPos < len(e.readings) {
			e.lastUs = max(e.lastUs, e.readings[e.replayPos])
			e.replayPos++
			return e.lastUs
		}
		// More readings than were recorded: the protocol is not deterministic given its inputs.
		panic("server: replay asked for a clock reading that was never recorded; the protocol is not deterministic")
	}
	e.lastUs = max(e.lastUs, e.wallUs())
	e.readings = append(e.readings, e.lastUs)
	return e.lastUs
}

func (e *env) Rand() *rand.Rand    { return e.rand }
func (e *env) Store() *store.Store { return e.store }

// Disk implements protocol.DiskEnv: the replica's keys in the node's Pebble (see disk).
func (e *env) Disk() protocol.Disk {
	e.disk.used = true
	return &e.disk
}

// RecordsVersions implements protocol.VersionRecorder.
func (e *env) RecordsVersions() bool { return e.recordVersions }

func (e *env) Send(to protocol.NodeID, m protocol.Message) {
	e.sends = append(e.sends, send{to: to, msg: m})
}

func (e *env) SetTimer(afterUs int64, id protocol.TimerID) {
	e.timers = append(e.timers, timerReq{afterUs: afterUs, id: id})
}

func (e *env) Reply(r protocol.Reply) { e.replies = append(e.replies, r) }

// maxBatch bounds how many inputs one loop iteration makes durable with one fsync.
const maxBatch = 256

// run is the event loop: it owns the replica and everything it touches.
func (n *Node) run(ctx context.Context) error {
	for {
		var first input
		select {
		case <-ctx.Done():
			return nil
		case first = <-n.inputs:
		}
		batch := n.log.newBatch(n.env.disk.used)
		n.env.disk.batch = batch.b
		if err := n.handle(batch, first); err != nil {
			return err
		}
	drain:
		for i := 1; i < maxBatch; i++ {
			select {
			case in := <-n.inputs:
				if err := n.handle(batch, in); err != nil {
					return err
				}
			default:
				break drain
			}
		}
		n.env.disk.batch = nil
		if err := batch.commit(); err != nil {
			return fmt.Errorf("server: persisting inputs: %w", err)
		}
		n.flush()
		if f, ok := protocol.Innermost(n.replica).(protocol.Failer); ok {
			if err := f.Failure(); err != nil {
				return fmt.Errorf("server: the replica cannot go on: %w", err)
			}
		}
		if n.checkpointDue() {
			if err := n.writeCheckpoint(); err != nil {
				return err
			}
		}
	}
}

// handle runs one input through the replica and records it in batch, noting whether it put out
// a message or reply (batch.releases). A request naming a transaction its client already
// submitted for commit is refused instead, and neither reaches the replica nor is recorded: the
// replay of the recorded commits rebuilds what refuses it. A request the replica serves locally
// (protocol.LocalReader) is not recorded either: it changes nothing a replay would rebuild.
func (n *Node) handle(b *batch, in input) error {
	if in.kind == inCall {
		in.call()
		return nil
	}
	if in.kind == inRequest {
		if err := n.submitted.check(in.req); err != nil {
			in.reply(protocol.Reply{Client: in.req.Client, Seq: in.req.Seq}, err)
			return nil
		}
	}
	e := n.env
	e.readings = e.readings[:0]
	if in.kind == inTimer {
		disarm(n.armed, in.timer)
	}
	effects := len(e.sends) + len(e.replies)
	n.dispatch(in)
	if e.disk.err != nil {
		return e.disk.err
	}
	if in.kind == inRequest && in.reply != nil {
		n.pending[replyKey{in.req.Client, in.req.Seq}] = pendingReply{reply: in.reply, atUs: in.atUs, commit: in.req.Kind == protocol.Commit}
	}
	if len(e.sends)+len(e.replies) > effects {
		b.releases()
	}
	if in.kind == inRequest && n.localReader != nil && n.localReader.ServesLocally(in.req) {
		return nil
	}
	rec, err := n.encodeInput(n.recordBuf[:0], in, e.readings)
	if err != nil {
		return fmt.Errorf("server: recording input: %w", err)
	}
	n.recordBuf = rec // the batch copied it
	return b.add(rec)
}

func (n *Node) dispatch(in input) {
	switch in.kind {
	case inStart:
		n.replica.Start()
	case inMessage:
		n.replica.HandleMessage(in.from, in.msg)
	case inRequest:
		n.submitted.record(in.req)
		n.replica.HandleRequest(in.req)
	case inTimer:
		n.replica.HandleTimer(in.timer)
	}
}

type replyKey struct {
	client txn.ClientID
	seq    uint64
}

type pendingReply struct {
	reply  func(protocol.Reply, error)
	atUs   int64
	commit bool
}

// flush releases the buffered effects of the inputs just made durable.
func (n *Node) flush() {
	e := n.env
	for _, s := range e.sends {
		n.transport.send(s.to, s.msg)
	}
	for _, t := range e.timers {
		n.armed[t.id]++
		n.armTimer(time.Duration(t.afterUs)*time.Microsecond, t.id)
	}
	now := e.wallUs()
	for _, r := range e.replies {
		key := replyKey{r.Client, r.Seq}
		p, ok := n.pending[key]
		if !ok {
			if to, relay := n.relayTarget(r); relay {
				n.relay(to, r)
			}
			continue // its client is gone (e.g. it asked before a restart), or it waits elsewhere
		}
		delete(n.pending, key)
		if p.commit {
			n.metrics.observeCommit(r, float64(now-p.atUs)/1e6)
		}
		p.reply(r, nil)
	}
	clear(e.sends)
	clear(e.replies)
	e.sends, e.timers, e.replies = e.sends[:0], e.timers[:0], e.replies[:0]
}

func (n *Node) armTimer(d time.Duration, id protocol.TimerID) {
	time.AfterFunc(d, func() {
		select {
		case n.inputs <- input{kind: inTimer, timer: id}:
		case <-n.stopped:
		}
	})
}

// encodeInput appends an input record to rec: kind, clock readings, then the kind's payload.
func (n *Node) encodeInput(rec []byte, in input, readings []int64) ([]byte, error) {
	rec = append(rec, byte(in.kind))
	rec = binary.AppendUvarint(rec, uint64(len(readings)))
	for _, r := range readings {
		rec = binary.AppendVarint(rec, r)
	}
	switch in.kind {
	case inMessage:
		rec = binary.AppendUvarint(rec, uint64(in.from))
		rec = append(rec, in.raw...)
	case inRequest:
		return wire.AppendRequestWith(rec, &in.req, n.codec)
	case inTimer:
		rec = binary.AppendVarint(rec, int64(in.timer))
	}
	return rec, nil
}

// recorded is an input decoded from the log, with the clock readings the replica took while
// handling it.
type recorded struct {
	in       input
	readings []int64
}

// decodeInput decodes a log record. It only reads the node's configuration and codec, so the
// recovery reader runs it on its own goroutine; rec must not change afterwards.
func (n *Node) decodeInput(rec []byte) (recorded, error) {
	var r recorded
	d := wire.NewDecoder(rec)
	kindByte, err := d.Byte("input kind")
	if err != nil {
		return r, err
	}
	count, err := d.Count("clock readings", len(rec), 1)
	if err != nil {
		return r, err
	}
	r.readings = make([]int64, 0, count)
	for range count {
		v, err := d.Varint("clock reading")
		if err != nil {
			return r, err
		}
		r.readings = append(r.readings, v)
	}
	r.in.kind = inputKind(kindByte)
	switch r.in.kind {
	case inStart:
	case inMessage:
		from, err := d.Int("sender", len(n.cfg.Nodes)-1)
		if err != nil {
			return r, err
		}
		r.in.from = protocol.NodeID(from)
		if r.in.msg, err = n.codec.Decode(rec[d.Offset():]); err != nil {
			return r, fmt.Errorf("%w: %v", errInputCorrupt, err)
		}
	case inRequest:
		if r.in.req, err = wire.DecodeRequestWith(rec[d.Offset():], n.codec); err != nil {
			return r, fmt.Errorf("%w: %v", errInputCorrupt, err)
		}
	case inTimer:
		id, err := d.Varint("timer id")
		if err != nil {
			return r, err
		}
		r.in.timer = protocol.TimerID(id)
	default:
		return r, errInputCorrupt
	}
	return r, nil
}

// replayInput runs one recorded input through the replica with its recorded clock readings;
// its effects are dropped (the peers and clients that could see them already did or are gone)
// except timers, which are counted so that the live node can re-arm those still pending.
func (n *Node) replayInput(r recorded, armed map[protocol.TimerID]int) error {
	if r.in.kind == inTimer {
		disarm(armed, r.in.timer)
	}
	e := n.env
	e.readings = r.readings
	e.replaying, e.replayPos = true, 0
	if err := n.dispatchReplay(r.in); err != nil {
		return err
	}
	for _, t := range e.timers {
		armed[t.id]++
	}
	clear(e.sends)
	clear(e.replies)
	e.sends, e.timers, e.replies = e.sends[:0], e.timers[:0], e.replies[:0]
	return nil
}

// disarm counts a timer that fired: one fewer of id is armed.
func disarm(armed map[protocol.TimerID]int, id protocol.TimerID) {
	if armed[id]--; armed[id] <= 0 {
		delete(armed, id)
	}
}

// dispatchReplay runs a recorded input, turning a replay that diverges from the recording (the
// protocol asked for a clock reading that was never recorded) into an error instead of a crash.
func (n *Node) dispatchReplay(in input) (err error) {
	defer func() {
		n.env.replaying = false
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: replay diverged: %v", errInputCorrupt, r)
		}
	}()
	n.dispatch(in)
	return nil
}
