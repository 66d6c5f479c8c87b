package workload

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// Name is "tycsb".
func (c TYCSB) Name() string { return "tycsb" }

// Family is registry.ReadWrite: T-YCSB runs interactive read-write transactions.
func (c TYCSB) Family() registry.Family { return registry.ReadWrite }

// ClientStream is the client's id.
func (c TYCSB) ClientStream(id txn.ClientID) uint64 { return uint64(id) }

// NewRun returns the client side of one T-YCSB run: each client runs generated transactions
// through a client.Session, reading each key with a Get and writing its own id as the value.
// T-YCSB has no figures and no final checks of its own: the serializability checker and the
// replicas' convergence judge its runs.
func (c TYCSB) NewRun(info RunInfo) (Run, error) {
	gen, err := NewGenerator(c)
	if err != nil {
		return nil, err
	}
	return &tycsbRun{info: info, gen: gen}, nil
}

type tycsbRun struct {
	info RunInfo
	gen  *Generator
}

func (r *tycsbRun) NewClient(ci ClientInfo) (Client, error) {
	tr, ok := ci.Conn.(client.Transport)
	if !ok {
		return nil, fmt.Errorf("workload: tycsb needs a read-write client transport, got %T", ci.Conn)
	}
	return &tycsbClient{gen: r.gen, sess: client.NewSession(tr, ci.ID, r.info.Topology.DCs[ci.DC], ci.Name, r.info.Record)}, nil
}

func (r *tycsbRun) Tick([]protocol.Replica, int64)  {}
func (r *tycsbRun) Final(Settler) ([]txn.ID, error) { return nil, nil }
func (r *tycsbRun) Metrics() Metrics                { return tycsbMetrics{} }

// tycsbMetrics is T-YCSB's (empty) section of a result: its figures are the per-datacenter
// ones every workload has.
type tycsbMetrics struct{}

func (tycsbMetrics) Violations() []string { return nil }

// tycsbClient is one T-YCSB client.
type tycsbClient struct {
	gen  *Generator
	sess *client.Session
	last []Op       // the last transaction's operations, for Retry
	tx   *client.Tx // the last transaction
}

func (c *tycsbClient) Next(rng *rand.Rand, done func(Outcome)) {
	c.last = c.gen.Next(rng).Ops
	c.tx = c.sess.Begin()
	c.step(c.tx, c.last, len(c.last), done)
}

func (c *tycsbClient) Retry(done func(Outcome)) {
	c.tx = c.sess.BeginRetry(c.tx)
	c.step(c.tx, c.last, len(c.last), done)
}

// step issues ops in order, then commits.
func (c *tycsbClient) step(tx *client.Tx, ops []Op, n int, done func(Outcome)) {
	if len(ops) == 0 {
		tx.Commit(func(res client.Result) {
			done(Outcome{Status: res.Status, Reason: res.Reason, LatencyUs: res.CommitLatencyUs, Ops: n, Err: res.Err})
		})
		return
	}
	op := ops[0]
	if op.Read {
		tx.Get(op.Key, func([]byte, error) { c.step(tx, ops[1:], n, done) })
		return
	}
	_ = tx.Put(op.Key, []byte(tx.ID().String())) // the key is non-empty and tx unfinished
	c.step(tx, ops[1:], n, done)
}

// Abandon does nothing: a transaction whose commit was never answered is not recorded (the run
// counts it as unfinished).
func (c *tycsbClient) Abandon(int64) {}
