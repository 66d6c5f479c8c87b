package repro

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/tools/bench"
)

func init() {
	register(Experiment{Name: "e4.2", Title: "Throughput, latency and aborts against the number of clients, calibrated CPU model (Fig. 4.5)", Run: runE42})
}

// e42Clients are Fig. 4.5's total client counts, 3 to 51 per DC (15, 45, …, 255: spec GAP-E7
// replaces the paper's last point, 285, whose "258" is off the grid, by 255).
var e42Clients = []int{15, 45, 75, 105, 135, 165, 195, 225, 255}

// e42Protocols are the systems of Fig. 4.5.
var e42Protocols = []string{"helios-0", "helios-1", "helios-2", "helios-b", "mf", "rc", "2pc-paxos"}

// e42DurationUs is each point's virtual duration (the paper ran 10 minutes; the simulator's
// steady state makes 20 s enough, and keeps the 63 runs within a few minutes).
const e42DurationUs = 20_000_000

// e42Point is one protocol at one client count.
type e42Point struct {
	clients          int
	opsPerS, latency float64       // total committed ops/s; mean commit latency over the DCs
	txnMs            float64       // mean transaction latency (reads and commit) over the DCs
	abortPct         float64       // aborted share of all decided transactions
	res              *bench.Result // the run, for figures beyond these (workload metrics, history)
}

// e42Curve is one protocol's sweep.
type e42Curve []e42Point

func (c e42Curve) peak() e42Point { return c[peakIndex(len(c), c.ops)] }

// levelOff is the client count where the curve levels off (levelOffIndex).
func (c e42Curve) levelOff() int { return c[levelOffIndex(len(c), c.ops)].clients }

// ops is the throughput of point i.
func (c e42Curve) ops(i int) float64 { return c[i].opsPerS }

// peakIndex returns the index of the largest of n values (the first of equals).
func peakIndex(n int, value func(i int) float64) int {
	best := 0
	for i := range n {
		if value(i) > value(best) {
			best = i
		}
	}
	return best
}

// levelOffIndex returns where the curve of n values levels off: the first index of the run of
// values within 5% of the largest that ends at the largest (the plateau the peak sits on). A
// curve still climbing at its end levels off at its last index only, which is no level-off
// (levelsOff); a curve that falls after its peak levels off where its plateau began.
func levelOffIndex(n int, value func(i int) float64) int {
	top := peakIndex(n, value)
	peak := value(top)
	from := top
	for from > 0 && value(from-1) >= 0.95*peak {
		from--
	}
	return from
}

// levelsOff reports whether the curve levels off before its last point (levelOff).
func (c e42Curve) levelsOff() bool { return c.levelOff() != c[len(c)-1].clients }

func (c e42Curve) at(clients int) e42Point {
	for _, p := range c {
		if p.clients == clients {
			return p
		}
	}
	panic(fmt.Sprintf("repro: e4.2 has no point at %d clients", clients))
}

// e42ClientTol is the tolerance of a level-off client count: one step of the sweep (30).
const e42ClientTol = 30

// abortSlope is the least-squares slope of the abort rate, in points per 30 clients.
func (c e42Curve) abortSlope() float64 {
	var xs, ys []float64
	for _, p := range c {
		xs, ys = append(xs, float64(p.clients)), append(ys, p.abortPct)
	}
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i]/n, my+ys[i]/n
	}
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	return 30 * sxy / sxx
}

func e42Summarise(clients int, res *bench.Result) e42Point {
	p := e42Point{clients: clients, res: res}
	committed, aborted := 0, 0
	n := 0
	for _, dc := range res.DCs {
		p.opsPerS += dc.OpsPerSec
		committed += dc.Committed
		aborted += dc.Aborted
		if dc.Committed > 0 {
			p.latency += dc.Latency.Mean
			p.txnMs += dc.EndToEnd.Mean
			n++
		}
	}
	if n > 0 {
		p.latency /= float64(n)
		p.txnMs /= float64(n)
	}
	if committed+aborted > 0 {
		p.abortPct = 100 * float64(aborted) / float64(committed+aborted)
	}
	return p
}

// clientSweep runs every protocol at every total client count of clients, with the options
// opts returns for that protocol and count, and returns each protocol's curve. A run the checker
// rejects is an error.
func clientSweep(env Env, exp string, protocols []string, clients []int, opts func(protocol string, clients int) bench.Options) (map[string]e42Curve, error) {
	curves := map[string]e42Curve{}
	for _, p := range protocols {
		for _, n := range clients {
			o := opts(p, n)
			env.progress("%s: %s, %d clients, %d virtual s", exp, p, n, o.DurationUs/1_000_000)
			res, err := bench.Run(o, p)
			if err != nil {
				return nil, err
			}
			if !res.Checker.OK {
				return nil, fmt.Errorf("%s at %d clients: checker: %s", p, n, res.Checker.Summary())
			}
			curves[p] = append(curves[p], e42Summarise(n, res))
		}
	}
	return curves, nil
}

// curveSeries is a KindXY series of y against the number of clients, one line per protocol of
// protocols.
func curveSeries(name, title, yLabel string, protocols []string, curves map[string]e42Curve, y func(e42Point) float64) Series {
	s := Series{Name: name, Kind: KindXY, Title: title, XLabel: "clients (total)", YLabel: yLabel}
	for _, p := range protocols {
		l := Line{Label: p}
		for _, pt := range curves[p] {
			l.X, l.Y = append(l.X, float64(pt.clients)), append(l.Y, y(pt))
		}
		s.Lines = append(s.Lines, l)
	}
	return s
}

func runE42(env Env) (*Report, error) {
	curves, err := clientSweep(env, "e4.2", e42Protocols, e42Clients, func(_ string, clients int) bench.Options {
		opts := e41Options(env)
		opts.ClientsPerDC = clients / opts.Topology.N()
		opts.DurationUs = e42DurationUs
		opts.Service = Calibrated
		return opts
	})
	if err != nil {
		return nil, err
	}
	r := &Report{Name: "e4.2", Title: experiments["e4.2"].Title}
	heliosNames := []string{"helios-0", "helios-1", "helios-2", "helios-b"}
	var peaks []string
	peaksOK := true
	for _, h := range heliosNames {
		pk := curves[h].peak()
		peaks = append(peaks, fmt.Sprintf("%s %.0f", h, pk.opsPerS))
		peaksOK = peaksOK && pk.opsPerS >= 6000 && pk.opsPerS <= 7000
	}
	levelClaim := func(h string, want int) Claim {
		c := curves[h]
		cl := within(h+" levels off at", float64(want), float64(c.levelOff()), e42ClientTol, "clients")
		if !c.levelsOff() {
			cl.Ours, cl.Verdict = fmt.Sprintf("never levels off: still climbing at %d clients (%s ops/s)", c[len(c)-1].clients,
				listPoints(c[len(c)-3:], "%.0f", e42Ops)), Differs
		}
		return cl
	}
	tpc, rc, mf := curves["2pc-paxos"], curves["rc"], curves["mf"]
	last := e42Clients[len(e42Clients)-1]
	tpcThrash := tpc.at(last).opsPerS < 0.9*tpc.peak().opsPerS
	var slopes []string
	slopeSum := 0.0
	for _, p := range append(slices.Clone(heliosNames), "mf") {
		slopes = append(slopes, fmt.Sprintf("%s %+.1f", p, curves[p].abortSlope()))
		slopeSum += curves[p].abortSlope() / 5
	}
	mfSlower := true
	for _, h := range heliosNames {
		for i, p := range curves[h] {
			mfSlower = mfSlower && mf[i].opsPerS < p.opsPerS
		}
	}
	r.Claims = append(r.Claims,
		shape("Helios variants level off at 6000–7000 ops/s (peak of the sweep)", "6000–7000 ops/s", strings.Join(peaks, ", ")+" ops/s",
			"every peak in [6000, 7000]", peaksOK),
		levelClaim("helios-0", 195), levelClaim("helios-1", 195), levelClaim("helios-2", 255), levelClaim("helios-b", 255),
		holds("MF climbs more slowly than every Helios variant", "MF below Helios", fmt.Sprintf("MF peak %.0f ops/s", mf.peak().opsPerS), mfSlower),
		holds("2PC/Paxos never exceeds about 1700 ops/s (≤ 1955, +15%)", "≤ ~1700 ops/s", fmt.Sprintf("peak %.0f ops/s at %d clients", tpc.peak().opsPerS, tpc.peak().clients),
			tpc.peak().opsPerS <= 1955),
		holds(fmt.Sprintf("2PC/Paxos thrashes from 195 clients (peak at 195 ± 30, %d clients below 90%% of it)", last), "peak at 195, then falls",
			fmt.Sprintf("peak at %d clients, %d clients at %.0f%% of it", tpc.peak().clients, last, 100*tpc.at(last).opsPerS/tpc.peak().opsPerS),
			math.Abs(float64(tpc.peak().clients-195)) <= 30 && tpcThrash),
		holds("RC reaches a throughput similar to 2PC/Paxos (peaks within 30%) without thrashing (last point ≥ 90% of its peak)", "similar, no thrashing",
			fmt.Sprintf("RC peak %.0f ops/s, %d clients at %.0f%% of it", rc.peak().opsPerS, last, 100*rc.at(last).opsPerS/rc.peak().opsPerS),
			math.Abs(rc.peak().opsPerS/tpc.peak().opsPerS-1) <= 0.3 && rc.at(last).opsPerS >= 0.9*rc.peak().opsPerS),
		note(withinRel("aborts of Helios and MF rise per 30 clients (mean least-squares slope)", 0.7, slopeSum, heliosRelTol, "points"),
			"%s", strings.Join(slopes, ", ")),
		withinRel(fmt.Sprintf("2PC/Paxos abort rate at %d clients", last), 15.8, tpc.at(last).abortPct, heliosRelTol, "%"),
		withinRel(fmt.Sprintf("RC abort rate at %d clients", last), 20, rc.at(last).abortPct, heliosRelTol, "%"),
		holds("MF and RC latency stays flat across the range (last point within 15% of the first)", "flat",
			fmt.Sprintf("MF %.0f → %.0f ms, RC %.0f → %.0f ms", mf[0].latency, mf.at(last).latency, rc[0].latency, rc.at(last).latency),
			math.Abs(mf.at(last).latency/mf[0].latency-1) <= 0.15 && math.Abs(rc.at(last).latency/rc[0].latency-1) <= 0.15),
		holds("2PC/Paxos latency rises steadily from the start (every step up, within 5%)", "rises steadily",
			fmt.Sprintf("%.0f → %.0f ms", tpc[0].latency, tpc.at(last).latency), risesSteadily(tpc)),
	)
	r.Series = []Series{
		curveSeries("throughput", "Committed throughput against the number of clients", "committed ops/s", e42Protocols, curves, e42Ops),
		curveSeries("latency", "Mean commit latency against the number of clients", "mean commit latency (ms)", e42Protocols, curves,
			func(p e42Point) float64 { return p.latency }),
		curveSeries("abort-rate", "Abort rate against the number of clients", "aborted (% of decided transactions)", e42Protocols, curves, e42AbortPct),
	}
	return r, nil
}

// risesSteadily reports whether latency never falls by more than 5% from one point to the next
// and ends above where it started.
func risesSteadily(c e42Curve) bool {
	for i := 1; i < len(c); i++ {
		if c[i].latency < 0.95*c[i-1].latency {
			return false
		}
	}
	return c[len(c)-1].latency > c[0].latency
}

// e42Ops is a point's committed throughput in ops/s.
func e42Ops(p e42Point) float64 { return p.opsPerS }

// e42AbortPct is a point's abort rate in percent.
func e42AbortPct(p e42Point) float64 { return p.abortPct }
