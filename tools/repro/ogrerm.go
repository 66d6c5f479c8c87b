package repro

import (
	"fmt"
	"math"
	"strings"

	"github.com/meridian-kv/meridian/workload"
)

// runOgreE1 is Fig. 5.3: read-modify transaction latency (reads and commit) and committed
// throughput of Ogre, Helios-2, RC and 2PC/Paxos from 15 to 135 closed-loop clients, and the
// paper's figures about them (§5.4.2).
func runOgreE1(env Env, sc ogreScale) (*Report, error) {
	curves, err := ogreSweep(env, sc)
	if err != nil {
		return nil, err
	}
	og, h2, rc, tpc := curves["ogre"], curves["helios-2"], curves["rc"], curves["2pc-paxos"]
	first, last := ogreClients[0], ogreClients[len(ogreClients)-1]
	txn := func(c e42Curve, n int) float64 { return c.at(n).txnMs }
	ops := func(c e42Curve, n int) float64 { return c.at(n).opsPerS }
	r := &Report{Name: "ogre-e1", Title: experiments["ogre-e1"].Title}

	for _, base := range []struct {
		p   string
		pct float64
	}{{"ogre", 160}, {"helios-2", 103}} {
		for _, b := range []string{"rc", "2pc-paxos"} {
			r.Claims = append(r.Claims, note(within(fmt.Sprintf("60 clients: %s's transaction latency above %s's", ogreLabels[b], ogreLabels[base.p]),
				base.pct, pctChange(txn(curves[base.p], 60), txn(curves[b], 60)), ogrePctTol(base.pct), "%"),
				"%.0f vs %.0f ms", txn(curves[b], 60), txn(curves[base.p], 60)))
		}
	}
	farBelow := true
	var lows []string
	for _, n := range ogreClients {
		if n > 75 {
			break
		}
		fast, slow := math.Max(txn(og, n), txn(h2, n)), math.Min(txn(rc, n), txn(tpc, n))
		farBelow = farBelow && fast < 0.5*slow
		lows = append(lows, fmt.Sprintf("%d: %.0f vs %.0f", n, fast, slow))
	}
	r.Claims = append(r.Claims,
		holds("up to 75 clients Ogre and Helios-2 are far below RC and 2PC/Paxos (the slower of the two under half the faster baseline's latency)",
			"significantly lower", strings.Join(lows, "; ")+" ms", farBelow),
		holds("Helios thrashes beyond 75 clients: its latency climbs steeply (at 135 clients ≥ 1.5× its 75-client latency)", "climbs steeply",
			fmt.Sprintf("%.0f ms at 75, %.0f ms at %d clients", txn(h2, 75), txn(h2, last), last), txn(h2, last) >= 1.5*txn(h2, 75)),
	)
	for _, g := range []struct {
		p   string
		pct float64
	}{{"ogre", 73}, {"rc", 44}, {"2pc-paxos", 22}} {
		c := curves[g.p]
		r.Claims = append(r.Claims, note(within(fmt.Sprintf("%s's transaction latency grows from %d to %d clients by", ogreLabels[g.p], first, last),
			g.pct, pctChange(txn(c, first), txn(c, last)), ogrePctTol(g.pct), "%"), "%.0f → %.0f ms", txn(c, first), txn(c, last)))
	}

	aborted := func(c e42Curve) float64 {
		res := c.at(first).res
		return abortedAttemptMs(res, first/len(res.DCs), sc.sweepUs-sc.warmupUs)
	}
	r.Claims = append(r.Claims,
		within(fmt.Sprintf("RC's throughput at %d clients", first), 214, ops(rc, first), ogreRelTol*214, "ops/s"),
		note(within(fmt.Sprintf("Ogre's throughput above RC's at %d clients", first), 210, pctChange(ops(rc, first), ops(og, first)), ogrePctTol(210), "%"),
			"%.0f vs %.0f ops/s", ops(og, first), ops(rc, first)),
		note(within(fmt.Sprintf("Ogre's throughput above 2PC/Paxos's at %d clients", first), 144, pctChange(ops(tpc, first), ops(og, first)), ogrePctTol(144), "%"),
			"%.0f vs %.0f ops/s", ops(og, first), ops(tpc, first)),
		note(within(fmt.Sprintf("Ogre's throughput above Helios-2's at %d clients", first), 16, pctChange(ops(h2, first), ops(og, first)), ogrePctTol(16), "%"),
			"%.0f vs %.0f ops/s; aborts %.0f%% vs %.0f%%, an aborted attempt lasts %.0f vs %.0f ms", ops(og, first), ops(h2, first),
			og.at(first).abortPct, h2.at(first).abortPct, aborted(og), aborted(h2)),
		within("Ogre's throughput gain from 15 to 30 clients", 535, ops(og, 30)-ops(og, 15), ogreRelTol*535, "ops/s"),
		within("… as a share of its 15-client throughput (19.5% less than it)", 80.5, 100*(ops(og, 30)-ops(og, 15))/ops(og, 15), ogrePctTol(80.5), "%"),
	)
	peakClaim := func(label string, c e42Curve, paperOps float64) Claim {
		return note(within(label+"'s peak throughput", paperOps, c.peak().opsPerS, ogreRelTol*paperOps, "ops/s"), "at %d clients", c.peak().clients)
	}
	converges := func(label string, c e42Curve, clients int) Claim {
		return holds(fmt.Sprintf("%s converges: it first reaches its peak (95%% of it) at %d clients (±%d) and sustains it (every later point ≥ 90%% of the peak)",
			label, clients, ogreClientTol), fmt.Sprintf("at %d clients, sustained", clients),
			fmt.Sprintf("first at %d clients; %s ops/s", c.levelOff(), listPoints(c, "%.0f", e42Ops)),
			math.Abs(float64(c.levelOff()-clients)) <= ogreClientTol && c.sustains())
	}
	r.Claims = append(r.Claims,
		peakClaim("Ogre", og, 1800), converges("Ogre", og, 75),
		peakClaim("Helios-2", h2, 1800),
		within("Helios-2 first reaches its peak (95% of it) at", 60, float64(h2.levelOff()), ogreClientTol, "clients"),
		note(within(fmt.Sprintf("Helios-2's throughput at %d clients below its peak", last), 62, 100*(1-ops(h2, last)/h2.peak().opsPerS), ogrePctTol(62), "%"),
			"%.0f ops/s", ops(h2, last)),
		peakClaim("RC", rc, 1000), converges("RC", rc, 90),
	)
	tpcPeak := tpc.peak()
	r.Claims = append(r.Claims,
		note(within("Ogre's peak throughput above RC's", 80, pctChange(rc.peak().opsPerS, og.peak().opsPerS), ogrePctTol(80), "%"),
			"%.0f vs %.0f ops/s", og.peak().opsPerS, rc.peak().opsPerS),
		within("2PC/Paxos's peak throughput", 692, tpcPeak.opsPerS, ogreRelTol*692, "ops/s"),
		within("2PC/Paxos peaks at", 45, float64(tpcPeak.clients), ogreClientTol, "clients"),
		within(fmt.Sprintf("2PC/Paxos's peak above its %d-client throughput", first), 154, pctChange(ops(tpc, first), tpcPeak.opsPerS), ogrePctTol(154), "%"),
		note(within(fmt.Sprintf("2PC/Paxos's throughput at %d clients below its peak", last), 21.5, 100*(1-ops(tpc, last)/tpcPeak.opsPerS), ogrePctTol(21.5), "%"),
			"%.0f ops/s", ops(tpc, last)),
	)
	r.Series = []Series{
		curveSeries("throughput", "Committed throughput against the number of clients", "committed ops/s", ogreProtocols, curves, e42Ops),
		curveSeries("latency", "Mean transaction latency (reads and commit) against the number of clients", "mean transaction latency (ms)",
			ogreProtocols, curves, func(p e42Point) float64 { return p.txnMs }),
		curveSeries("commit-latency", "Mean commit latency against the number of clients", "mean commit latency (ms)", ogreProtocols, curves,
			func(p e42Point) float64 { return p.latency }),
		curveSeries("abort-rate", "Abort rate against the number of clients", "aborted (% of decided transactions)", ogreProtocols, curves, e42AbortPct),
	}
	return r, nil
}

// ogreReadShares are Fig. 5.4's read shares.
var ogreReadShares = []float64{0, 0.2, 0.5}

// ogreRatioClients offer Fig. 5.4's 15 transactions/s, one each per second, spread evenly over
// the datacenters (spec E2).
const ogreRatioClients = 15

// runOgreE2 is Fig. 5.4: transaction and commit latency of the four systems at 0, 20 and 50%
// reads, with the offered load capped at 15 transactions/s so that only the network shapes the
// latencies (§5.4.3).
func runOgreE2(env Env, sc ogreScale) (*Report, error) {
	pts := map[string][]e42Point{} // per protocol, per read share
	for _, share := range ogreReadShares {
		o := ogreOptions(env, sc, ogreRatioClients, sc.ratioUs)
		o.RatePerClient = 1
		setTYCSB(&o, func(w *workload.TYCSB) { w.ReadRatio = share })
		runs, err := runProtocols(env, fmt.Sprintf("ogre-e2 %.0f%% reads", 100*share), o, ogreProtocols)
		if err != nil {
			return nil, err
		}
		for _, p := range ogreProtocols {
			pts[p] = append(pts[p], e42Summarise(ogreRatioClients, runs[p].res))
		}
	}
	txn := func(p string, i int) float64 { return pts[p][i].txnMs }
	list := func(ps []string, f func(p string) string) string {
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = ogreLabels[p] + " " + f(p)
		}
		return strings.Join(parts, "; ")
	}
	trend := func(ms func(i int) float64) string {
		parts := make([]string, len(ogreReadShares))
		for i := range ogreReadShares {
			parts[i] = fmt.Sprintf("%.0f", ms(i))
		}
		return strings.Join(parts, ", ") + " ms"
	}
	commitFlat := true
	for _, p := range ogreProtocols {
		for i := range ogreReadShares {
			commitFlat = commitFlat && math.Abs(pctChange(pts[p][0].latency, pts[p][i].latency)) <= 10
		}
	}
	localSmall := true
	for _, p := range []string{"ogre", "helios-2"} {
		g := pctChange(txn(p, 0), txn(p, 2))
		localSmall = localSmall && g > 0 && g <= 10
	}
	similar := true
	for _, p := range []string{"helios-2", "rc"} {
		similar = similar && math.Abs(pctChange(txn("ogre", 0), txn(p, 0))) <= 10
	}
	rcGrowth, tpcGrowth := pctChange(txn("rc", 1), txn("rc", 2)), pctChange(txn("2pc-paxos", 1), txn("2pc-paxos", 2))
	r := &Report{Name: "ogre-e2", Title: experiments["ogre-e2"].Title}
	r.Claims = append(r.Claims,
		holds("commit latency barely changes with the read share, in every system (within 10% of its 0%-read value)", "roughly unchanged",
			"commit latency at 0, 20, 50% reads: "+list(ogreProtocols, func(p string) string {
				return trend(func(i int) float64 { return pts[p][i].latency })
			}), commitFlat),
		holds("Ogre and Helios-2: transaction latency rises only a little with reads (local reads; 0 → 50%: above 0, at most +10%)", "small increase",
			list([]string{"ogre", "helios-2"}, func(p string) string { return fmt.Sprintf("%+.1f%%", pctChange(txn(p, 0), txn(p, 2))) }), localSmall),
		note(within("RC: transaction latency from 0 to 20% reads", 93, pctChange(txn("rc", 0), txn("rc", 1)), ogrePctTol(93), "%"),
			"%.0f → %.0f ms", txn("rc", 0), txn("rc", 1)),
		note(within("2PC/Paxos: transaction latency from 0 to 20% reads", 53, pctChange(txn("2pc-paxos", 0), txn("2pc-paxos", 1)), ogrePctTol(53), "%"),
			"%.0f → %.0f ms", txn("2pc-paxos", 0), txn("2pc-paxos", 1)),
		note(within("RC: transaction latency from 20 to 50% reads", 40, rcGrowth, ogrePctTol(40), "%"), "%.0f → %.0f ms", txn("rc", 1), txn("rc", 2)),
		note(within("2PC/Paxos: transaction latency from 20 to 50% reads", 21, tpcGrowth, ogrePctTol(21), "%"),
			"%.0f → %.0f ms", txn("2pc-paxos", 1), txn("2pc-paxos", 2)),
		holds("2PC/Paxos's latency grows less than RC's from 20 to 50% reads (V's clients read locally)", "2PC/Paxos < RC",
			fmt.Sprintf("2PC/Paxos %+.0f%%, RC %+.0f%%", tpcGrowth, rcGrowth), tpcGrowth < rcGrowth),
		holds("at 0% reads Ogre, Helios-2 and RC have similar transaction latency (within 10% of Ogre's)", "similar",
			list([]string{"ogre", "helios-2", "rc"}, func(p string) string { return fmt.Sprintf("%.0f ms", txn(p, 0)) }), similar),
	)
	cats := make([]string, len(ogreReadShares))
	for i, share := range ogreReadShares {
		cats[i] = fmt.Sprintf("%.0f%% reads", 100*share)
	}
	bars := func(name, title, yLabel string, y func(e42Point) float64) Series {
		s := Series{Name: name, Kind: KindBars, Title: title, XLabel: "read share", YLabel: yLabel, Categories: cats}
		for _, p := range ogreProtocols {
			l := Line{Label: p}
			for _, pt := range pts[p] {
				l.Y = append(l.Y, y(pt))
			}
			s.Lines = append(s.Lines, l)
		}
		return s
	}
	r.Series = []Series{
		bars("latency", "Mean transaction latency (reads and commit)", "mean transaction latency (ms)", func(p e42Point) float64 { return p.txnMs }),
		bars("commit-latency", "Mean commit latency", "mean commit latency (ms)", func(p e42Point) float64 { return p.latency }),
		bars("read-latency", "Reads' share of the transaction latency (transaction − commit)", "mean read latency (ms)",
			func(p e42Point) float64 { return p.txnMs - p.latency }),
	}
	return r, nil
}
