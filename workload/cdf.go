package workload

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

// CDFPoint is one point of a latency distribution: Fraction of the measured transactions took
// at most Ms milliseconds.
type CDFPoint struct {
	Ms, Fraction float64
}

// CDFOf samples the distribution of h's latencies (µs) at CDFPercentiles, in milliseconds;
// nil for an empty histogram.
func CDFOf(h *hdrhistogram.Histogram) []CDFPoint {
	if h.TotalCount() == 0 {
		return nil
	}
	out := make([]CDFPoint, len(CDFPercentiles))
	for j, q := range CDFPercentiles {
		out[j] = CDFPoint{Ms: float64(h.ValueAtQuantile(q)) / 1000, Fraction: q / 100}
	}
	return out
}

// CDFPercentiles are the percentiles the latency CDFs of a result sample: every 2% from 0 to 98, then
// the tail at 99, 99.5, 99.9 and 100.
var CDFPercentiles = func() []float64 {
	var qs []float64
	for q := 0; q < 100; q += 2 {
		qs = append(qs, float64(q))
	}
	return append(qs, 99, 99.5, 99.9, 100)
}()
