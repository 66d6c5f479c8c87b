package workload

import (
	"fmt"
	"math/rand/v2"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/verify/history"
)

// placedSession is one client of a partitioned read-write protocol (registry.PartitionedReadWrite)
// in the workloads that drive that family (micro, social): it names the client's transactions,
// runs each through the protocol's client library (Begin, the workload's operations, Commit)
// and records it in the run's history.
type placedSession struct {
	info RunInfo
	ci   ClientInfo
	lib  partitioned.Client
	home int // the client's home partition
	seq  uint32
	// committing is the update transaction whose commit is in flight, recorded with an unknown
	// outcome if the run ends first.
	committing *history.Txn
}

// newPlacedSession builds client ci's library; its pseudo-random stream is 2·id.
func newPlacedSession(info RunInfo, ci ClientInfo) (*placedSession, error) {
	if info.Placement == nil || info.Protocol.NewPartitionedClient == nil {
		return nil, fmt.Errorf("workload: %s is not a partitioned read-write protocol", info.Protocol.Name)
	}
	tr, ok := ci.Conn.(partitioned.Transport)
	if !ok {
		return nil, fmt.Errorf("workload: a partitioned client needs a transport to every node, got %T", ci.Conn)
	}
	lib, err := info.Protocol.NewPartitionedClient(partitioned.ClientConfig{ID: ci.ID, DC: ci.DC, Topology: info.Topology,
		Placement: info.Placement, Transport: tr, Rand: rand.New(rand.NewPCG(info.Seed, uint64(ci.ID)<<1)), Params: info.Params})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", info.Protocol.Name, err)
	}
	return &placedSession{info: info, ci: ci, lib: lib, home: info.Placement.HomePartition(info.Topology, ci.DC)}, nil
}

// run runs one transaction: Begin (read-only or not), ops (the workload's reads and writes with
// the library, given the transaction's id; it calls next once, with the first error), then
// Commit. writes are the keys the transaction writes. done gets the recorded entry (status,
// reason, times, reads) and the error of a failed request, if any: then nothing was committed
// unless the commit itself failed (status Unknown).
func (s *placedSession) run(ro bool, writes []string, ops func(id txn.ID, next func(error)), done func(*history.Txn, error)) {
	s.seq++
	id := txn.NewID(s.ci.ID, s.seq)
	conn := s.ci.Conn
	h := &history.Txn{ID: id, DC: s.info.Topology.DCs[s.ci.DC], Client: s.ci.Name, StartUs: conn.NowUs(), Writes: writes}
	s.lib.Begin(id, ro, func(err error) {
		if err != nil {
			s.fail(h, err, done)
			return
		}
		ops(id, func(err error) {
			if err != nil {
				s.fail(h, err, done)
				return
			}
			if !ro {
				s.committing = h
			}
			s.lib.Commit(func(status txn.Status, reason txn.AbortReason, err error) {
				s.committing = nil
				h.Status, h.Reason, h.EndUs, h.Reads = status, reason, conn.NowUs(), s.lib.Reads()
				s.info.Record(*h)
				done(h, err)
			})
		})
	})
}

// fail records a transaction whose begin or operations failed: nothing was submitted for
// commit, so nothing can have been installed.
func (s *placedSession) fail(h *history.Txn, err error, done func(*history.Txn, error)) {
	h.Status, h.EndUs, h.Reads = txn.Aborted, s.ci.Conn.NowUs(), s.lib.Reads()
	s.info.Record(*h)
	h.Status = txn.Unknown
	done(h, err)
}

// abandon records the update transaction whose commit was in flight at nowUs, at the end of
// the run, with an unknown outcome.
func (s *placedSession) abandon(nowUs int64) {
	if h := s.committing; h != nil {
		h.Status, h.EndUs, h.Reads = txn.Unknown, nowUs, s.lib.Reads()
		s.info.Record(*h)
		s.committing = nil
	}
}

// chain runs steps one after the other, each when the previous one called its next without an
// error, and then calls done (with the first error, if any).
func chain(steps []func(next func(error)), done func(error)) {
	var step func(i int)
	step = func(i int) {
		if i == len(steps) {
			done(nil)
			return
		}
		steps[i](func(err error) {
			if err != nil {
				done(err)
				return
			}
			step(i + 1)
		})
	}
	step(0)
}

// placedRun is what the runs of the partitioned read-write workloads share: the run's
// description, a lock, and per transaction class (micro's local, global, read-only; social's
// operations) the measured commits' latencies and the measured aborts. Their shared state is
// safe for concurrent clients.
type placedRun struct {
	info   RunInfo
	mu     sync.Mutex
	hist   []*hdrhistogram.Histogram
	counts [][2]int // class → (committed, aborted), measured
}

// init prepares r for a run described by info with the given number of transaction classes.
func (r *placedRun) init(info RunInfo, classes int) {
	r.info, r.hist, r.counts = info, make([]*hdrhistogram.Histogram, classes), make([][2]int, classes)
	for i := range r.hist {
		r.hist[i] = newLatencyHistogram()
	}
}

// Tick reads nothing from the replicas.
func (r *placedRun) Tick([]protocol.Replica, int64) {}

// Final runs no final reads: the checker compares the replicas' stores.
func (r *placedRun) Final(Settler) ([]txn.ID, error) { return nil, nil }

// measure counts transaction h of class if it is measured.
func (r *placedRun) measure(class int, h *history.Txn) {
	if !r.info.Measured(h.StartUs, h.EndUs) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch h.Status {
	case txn.Committed:
		r.counts[class][0]++
		_ = r.hist[class].RecordValue(max(h.EndUs-h.StartUs, 1))
	case txn.Aborted:
		r.counts[class][1]++
	}
}

// classFigures are class's committed transactions per second of the measurement window, their
// latency and its CDF, and the aborted share of its decided attempts; r.mu is held.
func (r *placedRun) classFigures(class int) (tps float64, latency TCCLatency, cdf []CDFPoint, abortRate float64) {
	c := r.counts[class]
	tps = float64(c[0]) / (float64(r.info.WindowUs[1]-r.info.WindowUs[0]) / 1e6)
	if c[0]+c[1] > 0 {
		abortRate = float64(c[1]) / float64(c[0]+c[1])
	}
	return tps, latencyOf(r.hist[class]), CDFOf(r.hist[class]), abortRate
}
