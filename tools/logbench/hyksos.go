package logbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/log/hyksos"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
)

// Hyksos describes the Hyksos clients of a run: each operation is a get of one key or a
// GET_TXN of TxnKeys keys (ReadRatio of the operations, half of them each), or else a put of a
// unique value; keys are drawn uniformly from Keys.
type Hyksos struct {
	Keys      int
	ReadRatio float64
	TxnKeys   int
	// SettleTimeout bounds the wait, after the run, for every datacenter's log to hold every
	// acknowledged put and reach every read's head of log (0: 30 s).
	SettleTimeout time.Duration
}

// check reports why h (nil: no Hyksos) cannot run.
func (h *Hyksos) check() error {
	if h != nil && (h.Keys < 1 || h.TxnKeys < 1 || h.ReadRatio < 0 || h.ReadRatio > 1) {
		return fmt.Errorf("logbench: Hyksos wants at least one key, GET_TXNs of at least one key and a read ratio from 0 to 1 (got %+v)", *h)
	}
	return nil
}

// HyksosResult is what the Hyksos clients read, and what the checks covered.
type HyksosResult struct {
	Reads       int     `json:"reads"` // gets and GET_TXNs answered
	ReadsPerSec float64 `json:"reads_per_s"`
	ReadP50Ms   float64 `json:"read_latency_p50_ms"`
	ReadP99Ms   float64 `json:"read_latency_p99_ms"`
	// CheckedReads and CheckedPuts are the reads checked (CH-I9) and the acknowledged puts
	// found, with their key and value, at their positions and in every datacenter's log.
	CheckedReads int `json:"checked_reads"`
	CheckedPuts  int `json:"checked_puts"`
}

// ackedPut is an acknowledged put: of the d-th datacenter of the run (host: its index in the
// cluster's topology).
type ackedPut struct {
	d, host    int
	key, value string
	res        flstore.AppendResult
}

// hyksosRun is the record of a run's Hyksos clients.
type hyksosRun struct {
	o     Hyksos
	cfg   *cluster.Config
	mu    sync.Mutex
	reads []hyksos.Observed
	puts  []ackedPut
}

func newHyksosRun(o Hyksos, cfg *cluster.Config) *hyksosRun {
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 30 * time.Second
	}
	return &hyksosRun{o: o, cfg: cfg}
}

// client returns the operation of client i of the run, c, of the d-th datacenter of the run
// (named dc): one get, GET_TXN or put, reporting whether it read.
func (h *hyksosRun) client(c *logclient.Client, i, d int, dc string) func(context.Context) (bool, error) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
	host := slices.Index(h.cfg.Topology.DCs, dc)
	puts := 0
	return func(ctx context.Context) (bool, error) {
		p := rng.Float64()
		if p >= h.o.ReadRatio {
			puts++
			key, value := KeyName(rng.IntN(h.o.Keys)), fmt.Sprintf("c%d-%d", i, puts)
			res, err := c.Put(ctx, key, []byte(value))
			if err == nil {
				h.mu.Lock()
				h.puts = append(h.puts, ackedPut{d, host, key, value, res})
				h.mu.Unlock()
			}
			return false, err
		}
		n := 1
		if p < h.o.ReadRatio/2 {
			n = min(h.o.TxnKeys, h.o.Keys)
		}
		keys := make([]string, n)
		for j, k := range rng.Perm(h.o.Keys)[:n] {
			keys[j] = KeyName(k)
		}
		snap, err := c.GetTxn(ctx, keys)
		if err == nil {
			h.mu.Lock()
			h.reads = append(h.reads, hyksos.Observed{DC: d, Who: fmt.Sprintf("client %d (%s)", i, dc), HL: snap.HL, Keys: keys, Reads: snap.Reads})
			h.mu.Unlock()
		}
		return true, err
	}
}

// KeyName is the name of the k-th key of a Hyksos run.
func KeyName(k int) string { return fmt.Sprintf("key%d", k) }

// check reads every datacenter's log back (readers[d]: a client of the d-th datacenter of the
// run) once each holds every acknowledged put and reaches every read's head of log, and checks
// the puts and the reads (hyksos.Check, CH-I9), counting them into hr.
func (h *hyksosRun) check(ctx context.Context, hr *HyksosResult, readers []*logclient.Client) error {
	need := make([]uint64, len(readers)) // per datacenter, the highest head of log a read used
	for _, rd := range h.reads {
		need[rd.DC] = max(need[rd.DC], rd.HL)
	}
	deadline := time.Now().Add(h.o.SettleTimeout)
	var logs []map[uint64]*flstore.Record
	for {
		var missing string
		logs, missing = h.readLogs(ctx, readers, need)
		if missing == "" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("hyksos: the logs did not settle in %s: %s", h.o.SettleTimeout, missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range h.puts {
		at := logs[p.d][p.res.LId]
		k, v, ok := hyksos.PutOf(at)
		if !ok || k != p.key || string(v) != p.value || at.Host != p.host || at.TOId != p.res.TOId {
			return fmt.Errorf("hyksos: the put %s=%s was acknowledged at position %d (TOId %d), which holds %s=%s (host %d, TOId %d)",
				p.key, p.value, p.res.LId, p.res.TOId, k, v, at.Host, at.TOId)
		}
	}
	if err := hyksos.Check(logs, h.reads, hyksos.PutOf); err != nil {
		return err
	}
	hr.CheckedReads, hr.CheckedPuts = len(h.reads), len(h.puts)
	return nil
}

// readLogs reads every datacenter's log up to its head, or names what is not there yet: a head
// of log below need, or an acknowledged put.
func (h *hyksosRun) readLogs(ctx context.Context, readers []*logclient.Client, need []uint64) ([]map[uint64]*flstore.Record, string) {
	logs := make([]map[uint64]*flstore.Record, len(readers))
	for d, c := range readers {
		hd, err := c.Head(ctx)
		if err != nil {
			return nil, fmt.Sprintf("datacenter %s: %v", h.cfg.Topology.DCs[d], err)
		}
		if hd.HL < need[d] {
			return nil, fmt.Sprintf("datacenter %d: head of log %d, below a read's %d", d, hd.HL, need[d])
		}
		recs, err := c.Read(ctx, 1, hd.HL)
		if err != nil {
			return nil, fmt.Sprintf("datacenter %d: %v", d, err)
		}
		logs[d] = make(map[uint64]*flstore.Record, len(recs))
		for _, r := range recs {
			logs[d][r.LId] = r
		}
		have := map[flstore.Key]bool{}
		for _, r := range recs {
			have[r.Key()] = true
		}
		for _, p := range h.puts {
			if !have[flstore.Key{Host: p.host, TOId: p.res.TOId}] {
				return nil, fmt.Sprintf("datacenter %d: the acknowledged put %s=%s (host %d, TOId %d) is missing", d, p.key, p.value, p.host, p.res.TOId)
			}
		}
	}
	return logs, ""
}
