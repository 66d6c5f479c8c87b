package repro

import (
	"fmt"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// ogre-ro-isolation: the issue's benchmark of §1.1's non-interference ("read-only transactions
// never slow down, and are never slowed down by, the read-modify ones"): at Ogre's saturation
// point, read-only latency (p99) within 10% of its value at 15 clients. The paper gives no
// figure for it; the claim is the issue's, measured side by side here.
//
// The simulator charges CPU with the calibrated model (Calibrated), so a replica saturates: its
// inputs queue behind one another. Ogre's saturation point is where its committed throughput
// peaks on a sweep of read-modify clients (the paper's E1 sweep, 15 to 135 clients, stays far
// below it in the simulator: its sweep is extended here, by doubling). One read-only client per
// datacenter (50 keys, 20 transactions/s each: a light analytics load) runs beside them, served
// by a RoT unit node of its own datacenter (rot_units=1), which pays for the ingestion stream
// and the read-only transactions only. The same two points with the RoT-Storage inside the
// replica (rot_units=0), where read-only transactions queue behind read-modify work, show what
// the separate unit buys.

// isolationScale is how much the experiment runs.
type isolationScale struct {
	clients              []int // total read-modify clients of the sweep, 15 first
	durationUs, warmupUs int64
}

// isolationFull: 6 virtual s per point (the first 2 unmeasured: the simulator's steady state
// comes within a second), up to 1,080 clients.
var isolationFull = isolationScale{clients: []int{15, 135, 270, 540, 1080}, durationUs: 6_000_000, warmupUs: 2_000_000}

// isolationTiny proves the machinery in tests.
var isolationTiny = isolationScale{clients: []int{15, 45}, durationUs: 1_000_000, warmupUs: 300_000}

// isolationROTol is the tolerance: 10% of the read-only p99 at 15 clients.
const isolationROTol = 0.10

func init() {
	register(Experiment{Name: "ogre-ro-isolation",
		Title: "Read-only latency independent of read-modify load: RO p99 at Ogre's saturation point against 15 clients, RoT units and in-replica RoT-Storage",
		Run:   func(env Env) (*Report, error) { return runOgreROIsolation(env, isolationFull) }})
}

func runOgreROIsolation(env Env, sc isolationScale) (*Report, error) {
	options := func(units string) func(string, int) bench.Options {
		return func(_ string, clients int) bench.Options {
			o := ogreOptions(env, ogreScale{warmupUs: sc.warmupUs}, clients, sc.durationUs)
			o.Params = protocol.Params{"rot_units": units}
			setTYCSB(&o, func(w *workload.TYCSB) { w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 1, 50, 20 })
			return o
		}
	}
	units, err := clientSweep(env, "ogre-ro-isolation (RoT units)", []string{"ogre"}, sc.clients, options("1"))
	if err != nil {
		return nil, err
	}
	curve := units["ogre"]
	sat := curve.peak()
	for _, p := range curve { // the first point at 95% of the peak: where the throughput levels off
		if p.opsPerS >= 0.95*sat.opsPerS {
			sat = p
			break
		}
	}
	inReplica, err := clientSweep(env, "ogre-ro-isolation (in-replica RoT-Storage)", []string{"ogre"}, []int{sc.clients[0], sat.clients}, options("0"))
	if err != nil {
		return nil, err
	}
	p99 := func(p e42Point) float64 {
		if ro := tycsbMetrics(p.res).ReadOnly; ro != nil {
			return ro.Latency.P99
		}
		return 0
	}
	low, high := curve[0], sat
	inLow, inHigh := inReplica["ogre"][0], inReplica["ogre"][1]
	var sweep []string
	for _, p := range curve {
		sweep = append(sweep, fmt.Sprintf("%d: %.0f ops/s, RO p99 %.2f ms", p.clients, p.opsPerS, p99(p)))
	}
	r := &Report{Name: "ogre-ro-isolation", Title: experiments["ogre-ro-isolation"].Title}
	r.Claims = append(r.Claims,
		holds("Ogre saturates on the sweep: its throughput levels off before the largest client count", "saturates (E1: ≈1800 ops/s from 75 clients)",
			strings.Join(sweep, "; "), sat.clients < curve[len(curve)-1].clients),
		note(within(fmt.Sprintf("RoT units: RO p99 at the saturation point (%d clients) against 15 clients (±%.0f%%)", high.clients, 100*isolationROTol),
			p99(low), p99(high), isolationROTol*p99(low), "ms"), "%.0f vs %.0f ops/s of read-modify work", high.opsPerS, low.opsPerS),
		holds(fmt.Sprintf("contrast, RoT-Storage inside the replica: RO p99 at %d clients grows beyond 10%% of its 15-client value (RO queues behind RM work)", inHigh.clients),
			"not in the paper (its RoT units are separate)", fmt.Sprintf("%.2f → %.2f ms", p99(inLow), p99(inHigh)), p99(inHigh) > (1+isolationROTol)*p99(inLow)),
	)
	line := func(label string, pts []e42Point) Line {
		l := Line{Label: label}
		for _, p := range pts {
			l.X, l.Y = append(l.X, float64(p.clients)), append(l.Y, p99(p))
		}
		return l
	}
	r.Series = []Series{
		{Name: "ro-p99", Kind: KindXY, Title: "Read-only p99 latency against read-modify clients", XLabel: "read-modify clients (total)",
			YLabel: "RO p99 (ms)", Lines: []Line{line("RoT units", curve), line("in-replica RoT-Storage", inReplica["ogre"])}},
		curveSeries("throughput", "Ogre's committed read-modify throughput (RoT units)", "committed ops/s", []string{"ogre"}, units,
			func(p e42Point) float64 { return p.opsPerS }),
	}
	return r, nil
}
