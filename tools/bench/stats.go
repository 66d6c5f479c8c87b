package bench

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// collector accumulates per-datacenter measurements of the transactions that start and end
// inside the measurement window [warmupUs, endUs). Throughput counts committed transactions; latency
// counts committed ones only (spec GAP-E2, the Chapter 4 convention) unless withAborts (the
// Chapter 3 convention, where quick aborts lower the average); the abort rate counts both.
type collector struct {
	warmupUs, endUs int64
	withAborts      bool
	immediateUs     int64 // a decision within this of the request counts as immediate
	boundMs         []float64
	dcs             []dcStats
}

type dcStats struct {
	hist               *hdrhistogram.Histogram // commit latency, µs
	sumUs, sumSquareUs float64
	measured           int // latencies recorded
	immediate          int // of those, decided within 1 ms plus the client's round trip
	committed, aborted int
	committedOps       int // operations of the committed transactions
	reasons            map[txn.AbortReason]int
	// endToEnd is the latency of committed transactions from their first attempt's start to
	// the commit, µs; attempts sums their attempts.
	endToEnd    *hdrhistogram.Histogram
	endToEndSum float64
	attempts    int
}

// newCollector returns a collector for datacenters whose lower bounds are boundMs.
func newCollector(boundMs []float64, warmupUs, endUs int64, withAborts bool, clientHopUs int64) *collector {
	c := &collector{warmupUs: warmupUs, endUs: endUs, withAborts: withAborts,
		immediateUs: 2*clientHopUs + 1000, boundMs: boundMs, dcs: make([]dcStats, len(boundMs))}
	for i := range c.dcs {
		c.dcs[i].hist = hdrhistogram.New(1, 3_600_000_000, 3)
		c.dcs[i].endToEnd = hdrhistogram.New(1, 3_600_000_000, 3)
		c.dcs[i].reasons = map[txn.AbortReason]int{}
	}
	return c
}

// add records the outcome o of a transaction of datacenter dc that ran from startUs to endUs.
func (c *collector) add(dc int, startUs, endUs int64, o workload.Outcome) {
	if startUs < c.warmupUs || endUs > c.endUs {
		return
	}
	d := &c.dcs[dc]
	if o.Status == txn.Unknown {
		return // the client lost the answer (a crashed node): neither latency nor outcome
	}
	if o.Status == txn.Committed {
		d.committed++
		d.committedOps += o.Ops
	} else {
		d.aborted++
		d.reasons[o.Reason]++
		if !c.withAborts {
			return
		}
	}
	lat := o.LatencyUs
	_ = d.hist.RecordValue(max(lat, 1)) // in range: latencies are below an hour
	d.sumUs += float64(lat)
	d.sumSquareUs += float64(lat) * float64(lat)
	d.measured++
	if lat < c.immediateUs {
		d.immediate++
	}
}

// addCommitted records a transaction of datacenter dc that committed at endUs after attempts
// attempts, the first of which started at firstStartUs.
func (c *collector) addCommitted(dc int, firstStartUs, endUs int64, attempts int) {
	if firstStartUs < c.warmupUs || endUs > c.endUs {
		return
	}
	d := &c.dcs[dc]
	lat := endUs - firstStartUs
	_ = d.endToEnd.RecordValue(max(lat, 1)) // in range: latencies are below an hour
	d.endToEndSum += float64(lat)
	d.attempts += attempts
}

// summarise returns the per-datacenter figures.
func (c *collector) summarise(topo *topology.Topology) []DCResult {
	windowS := float64(c.endUs-c.warmupUs) / 1e6
	out := make([]DCResult, len(c.dcs))
	for i, d := range c.dcs {
		r := DCResult{Name: topo.DCs[i], LowerBoundMs: c.boundMs[i], Committed: d.committed, Aborted: d.aborted}
		if d.measured > 0 {
			n := float64(d.measured)
			r.ImmediateFraction = float64(d.immediate) / n
			mean := d.sumUs / n
			r.Latency = Latency{
				Mean:   mean / 1000,
				P50:    float64(d.hist.ValueAtQuantile(50)) / 1000,
				P99:    float64(d.hist.ValueAtQuantile(99)) / 1000,
				StdDev: math.Sqrt(max(0, d.sumSquareUs/n-mean*mean)) / 1000,
			}
			r.LatencyCDF = workload.CDFOf(d.hist)
		}
		if total := d.committed + d.aborted; total > 0 {
			r.AbortRate = float64(d.aborted) / float64(total)
		}
		if n := d.endToEnd.TotalCount(); n > 0 {
			r.EndToEnd = Latency{Mean: d.endToEndSum / float64(n) / 1000, P50: float64(d.endToEnd.ValueAtQuantile(50)) / 1000,
				P99: float64(d.endToEnd.ValueAtQuantile(99)) / 1000}
			r.AttemptsPerCommit = float64(d.attempts) / float64(n)
		}
		r.AbortReasons = make(map[string]int, len(d.reasons))
		for reason, n := range d.reasons {
			r.AbortReasons[string(reason)] = n
		}
		r.CommittedTPS = float64(d.committed) / windowS
		if d.committed > 0 {
			r.OpsPerSec = r.CommittedTPS * (float64(d.committedOps) / float64(d.committed))
		}
		out[i] = r
	}
	return out
}
