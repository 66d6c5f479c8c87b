package bench

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// Conn is one benchmark client's connection: a client.Transport whose callbacks run one at a
// time, which can also schedule work on that same serial loop. The simulator's sim.Conn and
// the network client's rpc.Conn both are.
type Conn interface {
	client.Transport
	// After runs fn on the connection's callback loop after delayUs microseconds.
	After(delayUs int64, fn func())
}

// runState is shared by one run's workers. In the simulator they all run on one goroutine;
// against a real cluster each runs on its connection's goroutine, hence the lock.
type runState struct {
	opts     *Options
	gen      *workload.Generator
	workers  []*worker
	originUs int64     // the clients' clock reading at time 0 of the run
	boundMs  []float64 // each datacenter's lower bound

	mu    sync.Mutex
	txns  []history.Txn
	stats *collector
}

func (r *runState) record(t history.Txn) {
	r.mu.Lock()
	r.txns = append(r.txns, t)
	r.mu.Unlock()
}

func (r *runState) idle() bool {
	for _, w := range r.workers {
		if w.busy.Load() {
			return false
		}
	}
	return true
}

// errorBackoffUs is how long a client waits after a failed request before its next transaction.
const errorBackoffUs = 100_000

// worker is one T-YCSB client: it runs generated transactions one at a time until the run's
// duration is over.
type worker struct {
	run        *runState
	dc         int
	conn       Conn
	sess       *client.Session
	rng        *rand.Rand
	busy       atomic.Bool
	started    bool  // it has started a transaction
	startUs    int64 // when the current transaction started, in run time
	nextSlotUs int64 // open loop: the earliest start of the next transaction, in run time
}

// nowUs is the run's time: the client's clock since the run began.
func (w *worker) nowUs() int64 { return w.conn.NowUs() - w.run.originUs }

// next starts the next transaction: at once (closed loop), or at the start of the next pacing
// slot, or at once if the last transaction overran its slot (open loop, spec GAP-E13).
func (w *worker) next() {
	now := w.nowUs()
	if now >= w.run.opts.DurationUs {
		w.busy.Store(false)
		return
	}
	if w.started && w.nextSlotUs > now {
		w.busy.Store(false)
		w.conn.After(w.nextSlotUs-now, w.next)
		return
	}
	w.busy.Store(true)
	w.started, w.startUs = true, now
	if rate := w.run.opts.RatePerClient; rate > 0 {
		// Slots last 1/rate on average, each drawn from [0.5, 1.5)/rate: exactly periodic
		// clients would stay phase-locked to anything periodic in the system (MF's sends).
		w.nextSlotUs = now + int64((0.5+w.rng.Float64())*1e6/rate)
	}
	spec := w.run.gen.Next(w.rng)
	w.step(w.sess.Begin(), spec.Ops)
}

// step issues ops in order, then commits.
func (w *worker) step(tx *client.Tx, ops []workload.Op) {
	if len(ops) == 0 {
		tx.Commit(func(res client.Result) {
			w.run.mu.Lock()
			w.run.stats.add(w.dc, w.startUs, w.nowUs(), res)
			w.run.mu.Unlock()
			if res.Err != nil { // the node is unreachable: retry after a pause, not in a spin
				w.conn.After(errorBackoffUs, w.next)
				return
			}
			w.next()
		})
		return
	}
	op := ops[0]
	if op.Read {
		tx.Get(op.Key, func([]byte, error) { w.step(tx, ops[1:]) })
		return
	}
	_ = tx.Put(op.Key, []byte(tx.ID().String())) // the key is non-empty and tx unfinished
	w.step(tx, ops[1:])
}
