package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/verify/history"
)

// Micro is S-DUR's microbenchmark (spec sdur.md §7.2) on the PartitionedReadWrite family: every
// transaction reads two distinct objects and writes both (read x, read y, write x, write y). A
// local transaction draws both from the client's home partition; a global one, with probability
// GlobalFraction, draws y from another partition, uniformly. Keys are drawn uniformly from
// ItemsPerPartition items per partition. ReadOnlyFraction (0 in the spec's experiments) makes
// that share of transactions snapshot read-only transactions that read x and y only (y from
// another partition with probability GlobalFraction, as for updates), so that property tests
// exercise the certification-less path.
type Micro struct {
	ItemsPerPartition int
	GlobalFraction    float64
	ReadOnlyFraction  float64
	// ValueBytes is the size of a value: at least the writer's id and key, which every value
	// names so that a read whose value and version disagree is caught.
	ValueBytes int
}

// DefaultMicro is the spec's setting: 1,000,000 items per partition, 10% globals.
func DefaultMicro() Micro {
	return Micro{ItemsPerPartition: 1_000_000, GlobalFraction: 0.1, ValueBytes: 4}
}

// Name is "micro".
func (m Micro) Name() string { return "micro" }

// Family is registry.PartitionedReadWrite.
func (m Micro) Family() registry.Family { return registry.PartitionedReadWrite }

// ExtraClientsPerDC is 0.
func (m Micro) ExtraClientsPerDC() int { return 0 }

// ClientStream is 2·id+1; the client library of client id draws from stream 2·id.
func (m Micro) ClientStream(id txn.ClientID) uint64 { return uint64(id)<<1 | 1 }

// Validate reports the first invalid setting.
func (m Micro) Validate() error {
	switch {
	case m.ItemsPerPartition < 2:
		return fmt.Errorf("workload: micro needs at least 2 items per partition, got %d", m.ItemsPerPartition)
	case m.GlobalFraction < 0 || m.GlobalFraction > 1 || m.ReadOnlyFraction < 0 || m.ReadOnlyFraction > 1:
		return errors.New("workload: micro's global and read-only fractions must be in [0, 1]")
	case m.ValueBytes < 0:
		return errors.New("workload: micro's value size must not be negative")
	}
	return nil
}

// MicroMetrics are the micro workload's figures (JSON "workload_metrics"): local and global
// update transactions apart, as the spec's figures show them (the convoy effect is local latency
// taking the shape of global latency), and the snapshot read-only transactions.
type MicroMetrics struct {
	// ThroughputTPS counts committed transactions finished inside the measurement window, per
	// second; LocalTPS and GlobalTPS the committed update transactions of each class.
	ThroughputTPS float64 `json:"throughput_tps"`
	LocalTPS      float64 `json:"local_tps"`
	GlobalTPS     float64 `json:"global_tps"`
	// Local, Global and ReadOnly are the end-to-end latencies (begin to outcome) of committed
	// transactions of each class, with their CDFs.
	Local     TCCLatency `json:"local_latency"`
	Global    TCCLatency `json:"global_latency"`
	ReadOnly  TCCLatency `json:"read_only_latency"`
	LocalCDF  []CDFPoint `json:"local_latency_cdf"`
	GlobalCDF []CDFPoint `json:"global_latency_cdf"`
	// LocalAbortRate and GlobalAbortRate are each class's aborted share of decided attempts.
	LocalAbortRate  float64 `json:"local_abort_rate"`
	GlobalAbortRate float64 `json:"global_abort_rate"`
	// ValueMismatches counts reads whose value is not what their version's writer wrote.
	ValueMismatches int `json:"value_mismatches"`
}

// Violations reports reads whose values do not match their versions.
func (m *MicroMetrics) Violations() []string { return mismatches(m.ValueMismatches) }

// The transaction classes of the micro workload.
const (
	classLocal = iota
	classGlobal
	classReadOnly
	microClasses
)

// NewRun returns the client side of one run.
func (m Micro) NewRun(info RunInfo) (Run, error) {
	if info.Placement == nil || info.Protocol.NewPartitionedClient == nil {
		return nil, fmt.Errorf("workload: micro runs on partitioned read-write protocols, not %s", info.Protocol.Name)
	}
	r := &microRun{cfg: m}
	r.init(info, microClasses)
	return r, nil
}

type microRun struct {
	placedRun
	cfg        Micro
	mismatches int // guarded by mu
}

func (r *microRun) NewClient(ci ClientInfo) (Client, error) {
	sess, err := newPlacedSession(r.info, ci)
	if err != nil {
		return nil, err
	}
	return &microClient{run: r, sess: sess}, nil
}

func (r *microRun) Metrics() Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &MicroMetrics{ValueMismatches: r.mismatches}
	var roTPS float64
	m.LocalTPS, m.Local, m.LocalCDF, m.LocalAbortRate = r.classFigures(classLocal)
	m.GlobalTPS, m.Global, m.GlobalCDF, m.GlobalAbortRate = r.classFigures(classGlobal)
	roTPS, m.ReadOnly, _, _ = r.classFigures(classReadOnly)
	m.ThroughputTPS = m.LocalTPS + m.GlobalTPS + roTPS
	return m
}

// microTxn is one drawn transaction.
type microTxn struct {
	class int
	keys  [2]string
}

type microClient struct {
	run  *microRun
	sess *placedSession
	last microTxn
}

// draw draws the next transaction.
func (c *microClient) draw(rng *rand.Rand) microTxn {
	cfg, parts := c.run.cfg, c.run.info.Placement.Partitions()
	t := microTxn{class: classLocal}
	global := parts > 1 && rng.Float64() < cfg.GlobalFraction
	switch {
	case rng.Float64() < cfg.ReadOnlyFraction:
		t.class = classReadOnly
	case global:
		t.class = classGlobal
	}
	x := rng.IntN(cfg.ItemsPerPartition)
	home := c.sess.home
	t.keys[0] = partitioned.Key(home, strconv.Itoa(x))
	if global {
		other := (home + 1 + rng.IntN(parts-1)) % parts
		t.keys[1] = partitioned.Key(other, strconv.Itoa(rng.IntN(cfg.ItemsPerPartition)))
	} else {
		y := (x + 1 + rng.IntN(cfg.ItemsPerPartition-1)) % cfg.ItemsPerPartition
		t.keys[1] = partitioned.Key(home, strconv.Itoa(y))
	}
	return t
}

func (c *microClient) Next(rng *rand.Rand, done func(Outcome)) {
	c.last = c.draw(rng)
	c.start(c.last, done)
}

// Retry re-runs the last transaction on the same keys.
func (c *microClient) Retry(done func(Outcome)) { c.start(c.last, done) }

// start runs t: begin, read both keys, write both (update transactions), commit.
func (c *microClient) start(t microTxn, done func(Outcome)) {
	r, lib := c.run, c.sess.lib
	ro := t.class == classReadOnly
	var writes []string
	if !ro {
		writes = t.keys[:]
	}
	c.sess.run(ro, writes, func(id txn.ID, next func(error)) {
		var steps []func(func(error))
		for _, k := range t.keys {
			steps = append(steps, func(next func(error)) {
				lib.Read(k, func(v []byte, version txn.ID, err error) {
					if err == nil && !valueMatches(k, v, version, r.cfg.ValueBytes) {
						r.mu.Lock()
						r.mismatches++
						r.mu.Unlock()
					}
					next(err)
				})
			})
		}
		for _, k := range writes {
			steps = append(steps, func(next func(error)) { lib.Write(k, valueOf(id, k, r.cfg.ValueBytes), next) })
		}
		chain(steps, next)
	}, func(h *history.Txn, err error) {
		if err == nil {
			r.measure(t.class, h)
		}
		done(Outcome{Status: h.Status, Reason: h.Reason, Err: err, LatencyUs: h.EndUs - h.StartUs, Ops: 4})
	})
}

// Abandon records the update transaction whose commit was in flight with an unknown outcome.
func (c *microClient) Abandon(nowUs int64) { c.sess.abandon(nowUs) }
