package repro

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/meridian-kv/meridian/tools/bench"
)

// Kinds of Series.
const (
	// KindBars is a grouped bar chart: for every category (datacenter), one bar per Line, and
	// the category's Bound, if any, marked across its group.
	KindBars = "bars"
	// KindCDF is a set of cumulative distributions: each Line's X are latencies in increasing
	// order and its Y the fractions of transactions (0 to 1) that took at most as long.
	KindCDF = "cdf"
	// KindXY is a set of lines through (X, Y) points, such as throughput against clients.
	KindXY = "xy"
)

// Series is one set of measurements of an experiment, drawn as one plot and written as one
// CSV file.
type Series struct {
	// Name identifies the series within its report and names its files (latency.csv,
	// latency.png).
	Name string `json:"name"`
	// Kind is KindBars, KindCDF or KindXY.
	Kind string `json:"kind"`
	// Title describes the plot, without the experiment's name.
	Title string `json:"title"`
	// XLabel and YLabel name the axes, with units.
	XLabel string `json:"x_label,omitempty"`
	YLabel string `json:"y_label,omitempty"`
	// Categories are the bar groups of KindBars, in order.
	Categories []string `json:"categories,omitempty"`
	// Lines are the bar sets (KindBars) or lines (KindCDF, KindXY), one per protocol or run.
	Lines []Line `json:"lines"`
	// Bound, for KindBars, holds a reference value per category (the MAO lower bound), or is
	// empty; BoundLabel names it in the legend.
	Bound      Floats `json:"bound,omitempty"`
	BoundLabel string `json:"bound_label,omitempty"`
	// LogX and LogY draw KindXY axes on a logarithmic scale (sweeps over doublings; the FastCCS
	// thesis's log-log scaling plot). KindCDF picks its x scale itself.
	LogX bool `json:"log_x,omitempty"`
	LogY bool `json:"log_y,omitempty"`
}

// Line is one labelled set of values of a Series. For KindBars, Y holds one value per category
// and X is unused; otherwise X and Y are the coordinates of its points.
type Line struct {
	Label string `json:"label"`
	X     Floats `json:"x,omitempty"`
	Y     Floats `json:"y"`
}

// Floats is a list of measurements whose JSON form writes a missing value (NaN, or an
// infinity) as null and reads null back as NaN: encoding/json refuses non-finite numbers, and
// a series marks a cell it has no value for with NaN.
type Floats []float64

// MarshalJSON writes fs with null for every non-finite value.
func (fs Floats) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads a list written by MarshalJSON.
func (fs *Floats) UnmarshalJSON(data []byte) error {
	var raw []*float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*fs = make(Floats, len(raw))
	for i, f := range raw {
		(*fs)[i] = math.NaN()
		if f != nil {
			(*fs)[i] = *f
		}
	}
	return nil
}

// seriesFromResults describes runs, one bar set or line per run, labelled by labels (by the
// runs' protocols if labels is nil): mean latency per datacenter with the lower bound marked,
// committed throughput, abort rate, the share of immediate commits if any, and a latency CDF
// per datacenter. Datacenters where no run measured anything are left out.
func seriesFromResults(labels []string, runs ...protoResult) []Series {
	if len(runs) == 0 {
		return nil
	}
	if labels == nil {
		for _, pr := range runs {
			labels = append(labels, pr.res.Protocol)
		}
	}
	if len(labels) != len(runs) {
		panic("repro: seriesFromResults: labels and runs differ in number")
	}
	dcs := measuredDCs(runs)
	if len(dcs) == 0 {
		return nil
	}
	bars := func(name, title, yLabel string, value func(bench.DCResult) float64) Series {
		s := Series{Name: name, Kind: KindBars, Title: title, XLabel: "datacenter", YLabel: yLabel}
		for _, dc := range dcs {
			s.Categories = append(s.Categories, dc.Name)
		}
		for i, pr := range runs {
			l := Line{Label: labels[i]}
			for _, dc := range dcs {
				l.Y = append(l.Y, value(dcResult(pr.res, dc.Name)))
			}
			s.Lines = append(s.Lines, l)
		}
		return s
	}
	latency := bars("latency", "Mean commit latency per datacenter", "mean commit latency (ms)",
		func(dc bench.DCResult) float64 { return dc.Latency.Mean })
	latency.BoundLabel = "MAO lower bound"
	for _, dc := range dcs {
		latency.Bound = append(latency.Bound, dc.LowerBoundMs)
	}
	out := []Series{
		latency,
		bars("throughput", "Committed throughput per datacenter", "committed transactions/s",
			func(dc bench.DCResult) float64 { return dc.CommittedTPS }),
		bars("abort-rate", "Abort rate per datacenter", "aborted (% of decided transactions)",
			func(dc bench.DCResult) float64 { return 100 * dc.AbortRate }),
	}
	immediate := bars("immediate", "Immediate commits per datacenter", "decided within 1 ms (% of measured)",
		func(dc bench.DCResult) float64 { return 100 * dc.ImmediateFraction })
	for _, l := range immediate.Lines {
		if slices.Max(l.Y) > 0 {
			out = append(out, immediate)
			break
		}
	}
	for _, dc := range dcs {
		s := Series{Name: "cdf-" + dc.Name, Kind: KindCDF, Title: "Commit latency distribution at " + dc.Name,
			XLabel: "commit latency (ms)", YLabel: "fraction of transactions"}
		for i, pr := range runs {
			l := Line{Label: labels[i]}
			for _, p := range dcResult(pr.res, dc.Name).LatencyCDF {
				l.X, l.Y = append(l.X, p.Ms), append(l.Y, p.Fraction)
			}
			if len(l.X) > 0 {
				s.Lines = append(s.Lines, l)
			}
		}
		if len(s.Lines) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// sweepSeries describes a sweep: runs[i] ran with x = xs[i], a quantity called what, in unit.
// It gives the mean latency of every datacenter against x, and the committed throughput of
// every datacenter and in total against x.
func sweepSeries(what, unit string, xs []float64, runs ...protoResult) []Series {
	if len(xs) != len(runs) {
		panic("repro: sweepSeries: xs and runs differ in number")
	}
	xLabel := what + " (" + unit + ")"
	latency := Series{Name: "sweep-latency", Kind: KindXY, Title: "Mean commit latency against " + what,
		XLabel: xLabel, YLabel: "mean commit latency (ms)"}
	throughput := Series{Name: "sweep-throughput", Kind: KindXY, Title: "Committed throughput against " + what,
		XLabel: xLabel, YLabel: "committed transactions/s"}
	total := Line{Label: "total", X: xs}
	for _, pr := range runs {
		total.Y = append(total.Y, pr.tps)
	}
	for _, dc := range measuredDCs(runs) {
		lat, tps := Line{Label: dc.Name, X: xs}, Line{Label: dc.Name, X: xs}
		for _, pr := range runs {
			r := dcResult(pr.res, dc.Name)
			lat.Y, tps.Y = append(lat.Y, r.Latency.Mean), append(tps.Y, r.CommittedTPS)
		}
		latency.Lines, throughput.Lines = append(latency.Lines, lat), append(throughput.Lines, tps)
	}
	throughput.Lines = append(throughput.Lines, total)
	return []Series{latency, throughput}
}

// dcBars is a bar chart of one value per datacenter of dcs for every line, such as the
// latencies of a lower-bound solution.
func dcBars(name, title, yLabel string, dcs []string, lines ...Line) Series {
	return Series{Name: name, Kind: KindBars, Title: title, XLabel: "datacenter", YLabel: yLabel, Categories: dcs, Lines: lines}
}

// measuredDCs returns the first run's datacenters where some run decided a transaction.
func measuredDCs(runs []protoResult) []bench.DCResult {
	var out []bench.DCResult
	for _, dc := range runs[0].res.DCs {
		for _, pr := range runs {
			if r := dcResult(pr.res, dc.Name); r.Committed+r.Aborted > 0 {
				out = append(out, dc)
				break
			}
		}
	}
	return out
}

// dcResult returns the measurements of the datacenter called name in res, or none.
func dcResult(res *bench.Result, name string) bench.DCResult {
	if i := dcIndex(res, name); i >= 0 {
		return res.DCs[i]
	}
	return bench.DCResult{Name: name}
}
