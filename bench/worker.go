package bench

import (
	"math/rand/v2"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/history"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/txn"
	"github.com/meridian-kv/meridian/workload"
)

func clientID(i int) txn.ClientID { return txn.ClientID(i) }

// runState is shared by one run's workers.
type runState struct {
	opts    *Options
	gen     *workload.Generator
	workers []*worker
	txns    []history.Txn
	stats   *collector
}

func (r *runState) record(t history.Txn) { r.txns = append(r.txns, t) }

func (r *runState) idle() bool {
	for _, w := range r.workers {
		if w.busy {
			return false
		}
	}
	return true
}

// worker is one T-YCSB client: it runs generated transactions one at a time until the run's
// duration is over.
type worker struct {
	run     *runState
	dc      int
	conn    *sim.Conn
	sess    *client.Session
	rng     *rand.Rand
	busy    bool
	startUs int64 // when the current transaction started
}

// next starts the next transaction: at once (closed loop) or at the next pacing slot (open loop).
func (w *worker) next() {
	now := w.conn.NowUs()
	if now >= w.run.opts.DurationUs {
		w.busy = false
		return
	}
	if rate := w.run.opts.RatePerClient; rate > 0 && w.busy {
		slotUs := int64(1e6 / rate)
		if wait := w.startUs + slotUs - now; wait > 0 {
			w.busy = false
			w.conn.After(wait, w.next)
			return
		}
	}
	w.busy = true
	w.startUs = now
	spec := w.run.gen.Next(w.rng)
	w.step(w.sess.Begin(), spec.Ops)
}

// step issues ops in order, then commits.
func (w *worker) step(tx *client.Tx, ops []workload.Op) {
	if len(ops) == 0 {
		tx.Commit(func(res client.Result) {
			w.run.stats.add(w.dc, w.startUs, w.conn.NowUs(), res)
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
