package logsim

import (
	"github.com/meridian-kv/meridian/protocol"
)

// restartable runs a stage machine that an event may restart empty (spec 5.13: its machine
// and disk lost): on a restartOp request it builds a fresh replica with the factory, with no
// state and a new Disk, and starts it. The request makes the restart an input of the node, so
// that the new replica's first outputs leave at the simulated time of the restart. The old
// replica's timers still fire; the generation in the timer id tells them apart.
type restartable struct {
	cfg       protocol.Config
	onRestart func(id protocol.NodeID, old protocol.Replica)
	env       protocol.Env
	factory   protocol.Factory
	gen       int
	inner     protocol.Replica
}

// restartOp asks a restartable stage machine to restart empty.
type restartOp struct{}

// SizeBytes implements protocol.Message.
func (restartOp) SizeBytes() int { return 16 }

// genShift places a replica's generation above its own timer ids.
const genShift = 20

// restartableFactory wraps factory's replicas in restartable; onRestart runs as one restarts.
func restartableFactory(factory protocol.Factory, onRestart func(id protocol.NodeID, old protocol.Replica)) protocol.Factory {
	return func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		w := &restartable{cfg: cfg, onRestart: onRestart, env: env, factory: factory}
		var err error
		w.inner, err = factory(cfg, genEnv{env, 0})
		return w, err
	}
}

// Inner implements protocol.Wrapper.
func (w *restartable) Inner() protocol.Replica { return w.inner }

// Start implements protocol.Replica.
func (w *restartable) Start() { w.inner.Start() }

// HandleMessage implements protocol.Replica.
func (w *restartable) HandleMessage(from protocol.NodeID, m protocol.Message) {
	w.inner.HandleMessage(from, m)
}

// HandleTimer passes on the current replica's timers.
func (w *restartable) HandleTimer(id protocol.TimerID) {
	if int(id)>>genShift == w.gen {
		w.inner.HandleTimer(id & (1<<genShift - 1))
	}
}

// HandleRequest restarts the replica on a restartOp, and passes on other requests.
func (w *restartable) HandleRequest(req protocol.Request) {
	if _, ok := req.Op.(restartOp); !ok {
		w.inner.HandleRequest(req)
		return
	}
	w.gen++
	r, err := w.factory(w.cfg, genEnv{w.env, w.gen})
	if err != nil {
		w.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: err.Error()})
		return
	}
	old := w.inner
	w.inner = r
	w.onRestart(w.cfg.Self, old)
	r.Start()
	w.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq})
}

// genEnv is a replica's Env with its generation in its timer ids.
type genEnv struct {
	protocol.Env
	gen int
}

// SetTimer implements protocol.Env.
func (e genEnv) SetTimer(afterUs int64, id protocol.TimerID) {
	e.Env.SetTimer(afterUs, id|protocol.TimerID(e.gen<<genShift))
}
