package workload

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

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

// ExtraClientsPerDC is the number of read-only clients per datacenter.
func (c TYCSB) ExtraClientsPerDC() int { return c.ReadOnlyClientsPerDC }

// NewRun returns the client side of one T-YCSB run: each read-write client runs generated
// transactions through a client.Session, reading each key with a Get and writing its own id as
// the value; each read-only client runs read-only transactions through the protocol's
// serializable snapshots (client.Session.ReadOnly), which the history records for the checker.
// T-YCSB has no final checks of its own: the serializability checker and the replicas'
// convergence judge its runs.
func (c TYCSB) NewRun(info RunInfo) (Run, error) {
	if c.ReadOnlyClientsPerDC > 0 && !info.Protocol.SerializableSnapshotsPerDC {
		return nil, fmt.Errorf("workload: %s has no serializable read-only snapshots, so tycsb cannot run read-only clients on it", info.Protocol.Name)
	}
	gen, err := NewGenerator(c)
	if err != nil {
		return nil, err
	}
	r := &tycsbRun{cfg: c, info: info, gen: gen}
	if c.ReadOnlyClientsPerDC > 0 {
		r.m.ReadOnly = &ReadOnlyMetrics{}
		r.roLatency = newLatencyHistogram()
	}
	return r, nil
}

type tycsbRun struct {
	cfg  TYCSB
	info RunInfo
	gen  *Generator

	mu        sync.Mutex
	m         TYCSBMetrics
	roLatency *hdrhistogram.Histogram
	roReads   int
}

func (r *tycsbRun) NewClient(ci ClientInfo) (Client, error) {
	tr, ok := ci.Conn.(client.Transport)
	if !ok {
		return nil, fmt.Errorf("workload: tycsb needs a read-write client transport, got %T", ci.Conn)
	}
	sess := client.NewSession(tr, ci.ID, r.info.Topology.DCs[ci.DC], ci.Name, r.info.Record)
	if ci.Index >= r.info.ClientsPerDC {
		return &tycsbReader{run: r, conn: ci.Conn, sess: sess}, nil
	}
	return newTYCSBClient(r.gen, sess), nil
}

// Tick reads the RoT-Storage buffering statistics of the replicas that keep them.
func (r *tycsbRun) Tick(replicas []protocol.Replica, _ int64) {
	var sum RoTBufferMetrics
	found := false
	for _, rep := range replicas {
		if br, ok := rep.(rotBufferReporter); ok {
			found = true
			ingested, everBuffered, bufferedUs := br.RoTBufferStats()
			sum.Ingested += ingested
			sum.EverBuffered += everBuffered
			sum.bufferedUs += bufferedUs
		}
	}
	if found {
		r.mu.Lock()
		r.m.RoTBuffer = &sum
		r.mu.Unlock()
	}
}

// rotBufferReporter is implemented by replicas with a RoT-Storage (Ogre): how many committed
// transactions they received, how many of those had to wait in the buffer, and how long those
// waited in all (µs).
type rotBufferReporter interface {
	RoTBufferStats() (ingested, everBuffered int, bufferedUs int64)
}

func (r *tycsbRun) Final(Settler) ([]txn.ID, error) { return nil, nil }

func (r *tycsbRun) Metrics() Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m
	if ro := m.ReadOnly; ro != nil {
		windowS := float64(r.info.WindowUs[1]-r.info.WindowUs[0]) / 1e6
		ro.Latency = latencyOf(r.roLatency)
		ro.TPS, ro.ReadsPerSec = float64(ro.Transactions)/windowS, float64(r.roReads)/windowS
	}
	if b := m.RoTBuffer; b != nil && b.Ingested > 0 {
		b.BufferedFraction = float64(b.EverBuffered) / float64(b.Ingested)
		if b.EverBuffered > 0 {
			b.MeanBufferedMs = float64(b.bufferedUs) / float64(b.EverBuffered) / 1000
		}
	}
	return &m
}

// TYCSBMetrics are T-YCSB's own figures of a run (JSON "workload_metrics"): the read-only
// clients' transactions, and the RoT-Storage's buffering (Ogre), when there are any; the
// read-write transactions' figures are the per-datacenter ones every workload has.
type TYCSBMetrics struct {
	ReadOnly  *ReadOnlyMetrics  `json:"read_only,omitempty"`
	RoTBuffer *RoTBufferMetrics `json:"rot_buffer,omitempty"`
}

// ReadOnlyMetrics are the read-only clients' measured transactions, over every datacenter.
type ReadOnlyMetrics struct {
	Transactions int        `json:"transactions"`
	Latency      TCCLatency `json:"latency"`
	TPS          float64    `json:"tps"`
	ReadsPerSec  float64    `json:"reads_per_s"`
}

// RoTBufferMetrics describe, over every replica, how often committed transactions had to wait
// in the RoT-Storage's buffer for their dependencies (spec ogre.md E4), over the whole run.
type RoTBufferMetrics struct {
	Ingested         int     `json:"ingested"`
	EverBuffered     int     `json:"ever_buffered"`
	BufferedFraction float64 `json:"buffered_fraction"`
	MeanBufferedMs   float64 `json:"mean_buffered_ms"`
	bufferedUs       int64
}

// Violations: T-YCSB has no invariants of its own.
func (*TYCSBMetrics) Violations() []string { return nil }

// tycsbReader is one read-only client.
type tycsbReader struct {
	run    *tycsbRun
	conn   Conn
	sess   *client.Session
	rng    *rand.Rand
	nextUs int64 // with a rate: the earliest start of the next transaction
}

// Next runs one read-only transaction, at once or at the client's next slot.
func (c *tycsbReader) Next(rng *rand.Rand, done func(Outcome)) {
	c.rng = rng
	if rate := c.run.cfg.ReadOnlyRate; rate > 0 {
		now := c.conn.NowUs()
		if c.nextUs > now {
			c.conn.After(c.nextUs-now, func() { c.Next(rng, done) })
			return
		}
		c.nextUs = max(c.nextUs, now) + int64(1e6/rate)
	}
	keys := c.run.gen.DistinctKeys(rng, c.run.cfg.ReadOnlyKeys)
	startUs := c.conn.NowUs()
	c.sess.ReadOnly(keys, func(_ []protocol.SnapshotRead, err error) {
		endUs := c.conn.NowUs()
		out := Outcome{Status: txn.Committed, LatencyUs: endUs - startUs, Ops: len(keys), Err: err, OwnMetrics: true}
		if err != nil {
			out.Status = txn.Unknown
		} else if c.run.info.Measured(startUs, endUs) {
			c.run.mu.Lock()
			c.run.m.ReadOnly.Transactions++
			c.run.roReads += len(keys)
			_ = c.run.roLatency.RecordValue(max(endUs-startUs, 1))
			c.run.mu.Unlock()
		}
		done(out)
	})
}

// Retry re-runs nothing: read-only transactions do not abort.
func (c *tycsbReader) Retry(done func(Outcome)) { c.Next(c.rng, done) }

// Abandon does nothing: an unanswered read-only transaction is not recorded.
func (c *tycsbReader) Abandon(int64) {}

// tycsbClient is one T-YCSB client. It runs one transaction at a time, so the transaction in
// progress lives in the client (todo, n, done) and the callbacks that continue it are bound
// once (afterRead, afterCommit) instead of a closure allocated per operation.
type tycsbClient struct {
	gen  *Generator
	sess *client.Session
	last []Op       // the last transaction's operations, for Retry
	tx   *client.Tx // the last transaction

	todo        []Op          // the operations of tx still to issue
	done        func(Outcome) // reports tx's outcome
	afterRead   func([]byte, error)
	afterCommit func(client.Result)
}

func newTYCSBClient(gen *Generator, sess *client.Session) *tycsbClient {
	c := &tycsbClient{gen: gen, sess: sess}
	c.afterRead = func([]byte, error) { c.step() }
	c.afterCommit = func(res client.Result) {
		c.done(Outcome{Status: res.Status, Reason: res.Reason, LatencyUs: res.CommitLatencyUs, Ops: len(c.last), Err: res.Err})
	}
	return c
}

func (c *tycsbClient) Next(rng *rand.Rand, done func(Outcome)) {
	c.last = c.gen.Next(rng).Ops
	c.tx = c.sess.Begin()
	c.start(done)
}

func (c *tycsbClient) Retry(done func(Outcome)) {
	c.tx = c.sess.BeginRetry(c.tx)
	c.start(done)
}

// start runs c.last in c.tx, its read and write sets sized for it.
func (c *tycsbClient) start(done func(Outcome)) {
	reads := 0
	for _, op := range c.last {
		if op.Read {
			reads++
		}
	}
	c.tx.Reserve(reads, len(c.last)-reads)
	c.todo, c.done = c.last, done
	c.step()
}

// step issues the operations still to do in order, then commits.
func (c *tycsbClient) step() {
	for len(c.todo) > 0 {
		op := c.todo[0]
		c.todo = c.todo[1:]
		if op.Read {
			c.tx.Get(op.Key, c.afterRead)
			return
		}
		// The value is the writer's name, t<client>.<seq>; the key is non-empty and tx unfinished.
		var name [24]byte
		_ = c.tx.Put(op.Key, bytes.Clone(c.tx.ID().Append(name[:0])))
	}
	c.tx.Commit(c.afterCommit)
}

// Abandon does nothing: a transaction whose commit was never answered is not recorded (the run
// counts it as unfinished).
func (c *tycsbClient) Abandon(int64) {}
