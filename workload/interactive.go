package workload

import (
	"errors"
	"fmt"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// This file is the machinery shared by the workloads whose transactions decide what to write
// from what they read (TPC-C, Bank): a transaction is a body run through client.Tx in steps of
// concurrent reads, re-run from its input when it aborts, with its latency measured from the
// first attempt's BEGIN; rows are integers in a value; a never-written key holds its initial
// row, a pure function of the key, so a run needs no load phase; and the final state is read
// at quiescence for the workload's own invariants.

// attempt is one attempt of an interactive transaction. The body reads through read (every key
// of a step at once), buffers writes with put, and ends with commit; a failed read ends the
// attempt with an unknown outcome.
type attempt struct {
	tx  *client.Tx
	ops int
	end func(client.Result)
}

// read reads keys concurrently and calls next with their values, in the order of keys (nil
// for a key never written). If a read fails, the attempt is submitted for commit as it is (its
// successful reads, no writes: what its reads hold, such as read locks, is released) and ends
// with an unknown outcome and the read's error.
func (a *attempt) read(keys []string, next func(vals [][]byte)) {
	vals := make([][]byte, len(keys))
	if len(keys) == 0 {
		next(vals)
		return
	}
	left := len(keys)
	var failed error
	for i, k := range keys {
		a.ops++
		a.tx.Get(k, func(v []byte, err error) {
			vals[i] = v
			if err != nil && failed == nil {
				failed = err
			}
			if left--; left > 0 {
				return
			}
			if failed != nil {
				a.tx.Commit(func(client.Result) { a.end(client.Result{Status: txn.Unknown, Err: failed}) })
				return
			}
			next(vals)
		})
	}
}

// put buffers a write of key.
func (a *attempt) put(key string, r row) {
	a.ops++
	_ = a.tx.Put(key, r.encode()) // keys are non-empty and the attempt is unfinished
}

// commit submits the attempt.
func (a *attempt) commit() { a.tx.Commit(a.end) }

// interactive runs one client's interactive transactions: run starts a new transaction from
// its body, retry re-runs the last one's body (the same input, fresh reads, possibly other
// keys: TPC-C's order id comes from its district) as a new attempt. An attempt's outcome
// carries its own latency, from its BEGIN to its decision (bench's per-datacenter "commit
// latency"); bench measures spec alvin.md §7.2's latency, from the first BEGIN to the final
// commit, as the end-to-end latency of retried transactions, and firstUs lets a workload
// measure it per transaction type.
type interactive struct {
	conn    Conn
	sess    *client.Session
	tx      *client.Tx // the current attempt's transaction
	body    func(*attempt)
	firstUs int64 // when the current transaction's first attempt began
}

// run starts a new transaction.
func (c *interactive) run(body func(*attempt), done func(Outcome)) {
	c.body, c.firstUs, c.tx = body, c.conn.NowUs(), c.sess.Begin()
	c.start(done)
}

// retry starts the next attempt of the current transaction.
func (c *interactive) retry(done func(Outcome)) {
	c.tx = c.sess.BeginRetry(c.tx)
	c.start(done)
}

func (c *interactive) start(done func(Outcome)) {
	a, startUs := &attempt{tx: c.tx}, c.conn.NowUs()
	a.end = func(res client.Result) {
		done(Outcome{Status: res.Status, Reason: res.Reason, LatencyUs: c.conn.NowUs() - startUs, Ops: a.ops, Err: res.Err})
	}
	c.body(a)
}

// row is a table row: integer fields, encoded as decimal numbers separated by commas.
type row []int64

func (r row) encode() []byte {
	b := make([]byte, 0, 8*len(r))
	for i, v := range r {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return b
}

// errBadRow is parseRow's error for a value that is not a row of the expected width.
var errBadRow = errors.New("not a row")

// parseRow decodes a value read from the store: a copy of initial for a key never written
// (an empty value), else a row of len(initial) fields.
func parseRow(v []byte, initial row) (row, error) {
	out := make(row, len(initial))
	if len(v) == 0 {
		copy(out, initial)
		return out, nil
	}
	field, start := 0, 0
	for i := 0; i <= len(v); i++ {
		if i < len(v) && v[i] != ',' {
			continue
		}
		if field == len(out) {
			return nil, errBadRow
		}
		n, err := strconv.ParseInt(string(v[start:i]), 10, 64)
		if err != nil {
			return nil, errBadRow
		}
		out[field], field, start = n, field+1, i+1
	}
	if field != len(out) {
		return nil, errBadRow
	}
	return out, nil
}

// withBadRows is a run's violations: those listed, and the values read that were not rows.
func withBadRows(listed []string, badRows int) []string {
	out := append([]string(nil), listed...)
	if badRows > 0 {
		out = append(out, fmt.Sprintf("%d values read are not rows of their table", badRows))
	}
	return out
}

// mix64 is SplitMix64's finalizer: the deterministic hash behind initial rows.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hashIn maps the ids of a row to a number in [lo, hi], the same in every run.
func hashIn(lo, hi int64, ids ...int64) int64 {
	h := uint64(0)
	for _, id := range ids {
		h = mix64(h ^ uint64(id))
	}
	return lo + int64(h%uint64(hi-lo+1))
}

// finalBatchKeys is how many keys one read-only transaction at quiescence reads.
const finalBatchKeys = 512

// finalAttempts bounds the attempts of one read at quiescence, and finalPauseUs is the pause
// before the second, doubling up to maxFinalPauseUs: a lossy network (swarm chaos) can time out
// a read, and the locks of a timed-out read are released only once its abort gets through.
const (
	finalAttempts   = 40
	finalPauseUs    = 200_000
	maxFinalPauseUs = 1_000_000
)

// finalReader reads keys at quiescence through read-only transactions of a fresh client,
// finalBatchKeys at a time: a client of the first datacenter, or of the next one when that
// fails.
type finalReader struct {
	s    Settler
	info RunInfo
	dc   int
	c    ClientInfo
	sess *client.Session // nil until connected
}

// read returns the values of keys, in order.
func (f *finalReader) read(keys []string) ([][]byte, error) {
	var errs []error
	for ; f.dc < len(f.info.Layout.Node); f.dc++ {
		if f.sess == nil {
			c, err := f.s.Connect(f.dc, f.info.Layout.Node[f.dc][0], f.info.Topology.DCs[f.dc]+"/final")
			if err != nil {
				return nil, err
			}
			tr, ok := c.Conn.(client.Transport)
			if !ok {
				return nil, fmt.Errorf("workload: final reads need a read-write client transport, got %T", c.Conn)
			}
			f.c, f.sess = c, client.NewSession(tr, c.ID, f.info.Topology.DCs[f.dc], c.Name, f.info.Record)
		}
		vals, err := readFinal(f.s, f.c, f.sess, keys)
		if err == nil {
			return vals, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", f.info.Topology.DCs[f.dc], err))
		f.sess = nil
	}
	return nil, errors.Join(errs...)
}

// readFinal reads keys through read-only transactions of c, finalBatchKeys at a time, and
// returns their values in order. Each transaction is then submitted for commit (the history
// records it, and the commit releases what its reads hold, such as Replicated Commit's read
// locks), but its outcome does not matter: at quiescence nothing changes, and under a chaotic
// network a protocol may abort every commit (Helios NACKs transactions whose records arrive
// after the grace time) while its reads succeed. After a failed read it pauses and halves the
// batch (down to one key; it doubles again after a success): keys need not be read together,
// and under heavy loss a read of many keys at a majority (Replicated Commit) rarely succeeds.
func readFinal(s Settler, c ClientInfo, sess *client.Session, keys []string) ([][]byte, error) {
	out := make([][]byte, 0, len(keys))
	size := finalBatchKeys
	for len(out) < len(keys) {
		var vals [][]byte
		var last error
		for try := 0; try < finalAttempts && vals == nil; try++ {
			if try > 0 {
				size = max(size/2, 1)
				pauseUs := min(int64(finalPauseUs)<<(try-1), maxFinalPauseUs)
				if err := s.Await(c, func(done func(error)) { c.Conn.After(pauseUs, func() { done(nil) }) }); err != nil {
					return nil, err
				}
			}
			batch := keys[len(out):min(len(out)+size, len(keys))]
			a := &attempt{tx: sess.Begin()}
			last = s.Await(c, func(done func(error)) {
				a.end = func(res client.Result) {
					if vals != nil { // the commit's outcome
						res.Err = nil
					}
					done(res.Err)
				}
				a.read(batch, func(v [][]byte) { vals = v; a.commit() })
			})
			if last != nil {
				vals = nil
			}
		}
		if vals == nil {
			return nil, fmt.Errorf("workload: a final read at quiescence failed %d times, last: %w", finalAttempts, last)
		}
		out = append(out, vals...)
		size = min(2*size, finalBatchKeys)
	}
	return out, nil
}

// typeStats measures one transaction type: its measured attempts, commits and the latency of
// its commits from their first BEGIN.
type typeStats struct {
	attempts, committed int
	latency             *hdrhistogram.Histogram
}

// TypeMetrics are one transaction type's figures over the measurement window: commits,
// attempts (aborted ones included), committed transactions per second over every datacenter,
// and latency from the first BEGIN to the final commit.
type TypeMetrics struct {
	Committed int        `json:"committed"`
	Attempts  int        `json:"attempts"`
	AbortRate float64    `json:"abort_rate"`
	TPS       float64    `json:"tps"`
	Latency   TCCLatency `json:"latency"`
}

// add records an attempt's outcome o (an unknown one counts neither way), latencyUs after its
// transaction's first BEGIN.
func (s *typeStats) add(o Outcome, latencyUs int64) {
	if o.Status == txn.Unknown {
		return
	}
	if s.latency == nil {
		s.latency = newLatencyHistogram()
	}
	s.attempts++
	if o.Status == txn.Committed {
		s.committed++
		_ = s.latency.RecordValue(max(latencyUs, 1)) // in range: latencies are below an hour
	}
}

// metrics summarises s over a window of windowS seconds.
func (s *typeStats) metrics(windowS float64) TypeMetrics {
	m := TypeMetrics{Committed: s.committed, Attempts: s.attempts, TPS: float64(s.committed) / windowS}
	if s.attempts > 0 {
		m.AbortRate = 1 - float64(s.committed)/float64(s.attempts)
	}
	if s.latency != nil {
		m.Latency = latencyOf(s.latency)
	}
	return m
}
