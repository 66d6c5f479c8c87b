package bench

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// collector accumulates per-datacenter measurements of the transactions that start inside the
// measurement window [warmupUs, durationUs). Throughput counts committed transactions; latency
// counts committed ones only (spec GAP-E2, the Chapter 4 convention) unless withAborts (the
// Chapter 3 convention, where quick aborts lower the average); the abort rate counts both.
type collector struct {
	warmupUs, durationUs int64
	withAborts           bool
	immediateUs          int64 // a decision within this of the request counts as immediate
	dcs                  []dcStats
}

type dcStats struct {
	hist               *hdrhistogram.Histogram // commit latency, µs
	sumUs, sumSquareUs float64
	measured           int // latencies recorded
	immediate          int // of those, decided within 1 ms plus the client's round trip
	committed, aborted int
}

func newCollector(n int, warmupUs, durationUs int64, withAborts bool, clientHopUs int64) *collector {
	c := &collector{warmupUs: warmupUs, durationUs: durationUs, withAborts: withAborts,
		immediateUs: 2*clientHopUs + 1000, dcs: make([]dcStats, n)}
	for i := range c.dcs {
		c.dcs[i].hist = hdrhistogram.New(1, 3_600_000_000, 3)
	}
	return c
}

func (c *collector) add(dc int, startUs, endUs int64, res client.Result) {
	if startUs < c.warmupUs || endUs > c.durationUs {
		return
	}
	d := &c.dcs[dc]
	if res.Status == txn.Unknown {
		return // the client lost the answer (a crashed node): neither latency nor outcome
	}
	if res.Status == txn.Committed {
		d.committed++
	} else {
		d.aborted++
		if !c.withAborts {
			return
		}
	}
	lat := res.CommitLatencyUs
	_ = d.hist.RecordValue(max(lat, 1)) // in range: latencies are below an hour
	d.sumUs += float64(lat)
	d.sumSquareUs += float64(lat) * float64(lat)
	d.measured++
	if lat < c.immediateUs {
		d.immediate++
	}
}

// cdfOf samples the distribution of h's latencies (µs) at cdfPercentiles, in milliseconds;
// nil for an empty histogram.
func cdfOf(h *hdrhistogram.Histogram) []CDFPoint {
	if h.TotalCount() == 0 {
		return nil
	}
	out := make([]CDFPoint, len(cdfPercentiles))
	for j, q := range cdfPercentiles {
		out[j] = CDFPoint{Ms: float64(h.ValueAtQuantile(q)) / 1000, Fraction: q / 100}
	}
	return out
}

// cdfPercentiles are the percentiles DCResult.LatencyCDF samples: every 2% from 0 to 98, then
// the tail at 99, 99.5, 99.9 and 100.
var cdfPercentiles = func() []float64 {
	var qs []float64
	for q := 0; q < 100; q += 2 {
		qs = append(qs, float64(q))
	}
	return append(qs, 99, 99.5, 99.9, 100)
}()

func (c *collector) summarise(topo *topology.Topology, boundMs []float64, opsPerTxn int) []DCResult {
	windowS := float64(c.durationUs-c.warmupUs) / 1e6
	out := make([]DCResult, len(c.dcs))
	for i, d := range c.dcs {
		r := DCResult{Name: topo.DCs[i], LowerBoundMs: boundMs[i], Committed: d.committed, Aborted: d.aborted}
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
			r.LatencyCDF = cdfOf(d.hist)
		}
		if total := d.committed + d.aborted; total > 0 {
			r.AbortRate = float64(d.aborted) / float64(total)
		}
		r.CommittedTPS = float64(d.committed) / windowS
		r.OpsPerSec = r.CommittedTPS * float64(opsPerTxn)
		out[i] = r
	}
	return out
}
