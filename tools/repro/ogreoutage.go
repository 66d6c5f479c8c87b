package repro

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

// ogreOutageDC is the datacenter that fails in Fig. 5.6.
const ogreOutageDC = "C"

// E5's read-only clients, one per datacenter, show that read-only transactions do not notice
// the outage: ogreOutageROKeys reads each, ogreOutageRORate per second.
const (
	ogreOutageROKeys = 50
	ogreOutageRORate = 10
)

// ogreOutageBins is how many points E5's time series have over the run.
const ogreOutageBins = 40

// ogreMajorityMs is §7.6's analytic commit latency of a datacenter (the RTT to its nearest
// majority, all up and with C down) for the datacenters Fig. 5.6 plots.
var ogreMajorityMs = []struct {
	dc            string
	before, after float64
}{{"O", 66, 175}, {"I", 175, 175}, {"S", 194, 210}}

// runOgreE5 is Fig. 5.6: 60 read-modify clients (and one read-only client per datacenter), C
// down from crashUs to the end of the run; per-datacenter latency before and during the outage
// against §7.6's nearest-majority RTTs and the paper's reading, and the aborts that C's orphaned
// pending transactions cause (§5.4.5). The run is measured twice, with a window before the
// outage and one during it (the simulation is the same); the first keeps the history, for the
// time series and the orphans.
func runOgreE5(env Env, sc ogreScale) (*Report, error) {
	o := ogreOptions(env, sc, ogreMixedClients, sc.outageUs)
	o.Faults = []sim.Fault{{Kind: sim.Outage, DC: ogreOutageDC, StartUs: sc.crashUs, EndUs: sc.outageUs}}
	setTYCSB(&o, func(w *workload.TYCSB) {
		w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 1, ogreOutageROKeys, ogreOutageRORate
	})
	before, during := o, o
	before.CooldownUs, before.KeepHistory = sc.outageUs-sc.crashUs, true
	during.WarmupUs = sc.crashUs + sc.settleUs
	b, err := runProtocols(env, "ogre-e5 (measured before C fails)", before, []string{"ogre"})
	if err != nil {
		return nil, err
	}
	d, err := runProtocols(env, "ogre-e5 (measured while C is down)", during, []string{"ogre"})
	if err != nil {
		return nil, err
	}
	pb, pd := b["ogre"], d["ogre"]
	p50 := func(pr protoResult, dc string) float64 { return dcResult(pr.res, dc).Latency.P50 }
	hopMs := 2 * float64(o.ClientHopUs) / 1000
	r := &Report{Name: "ogre-e5", Title: experiments["ogre-e5"].Title}
	for _, m := range ogreMajorityMs {
		for _, x := range []struct {
			when    string
			pr      protoResult
			paperMs float64
		}{{"before the outage", pb, m.before}, {"while C is down", pd, m.after}} {
			c := within(fmt.Sprintf("%s %s: median commit latency = RTT to the nearest majority (§7.6) + the client's round trip (%.0f ms)", m.dc, x.when, hopMs),
				x.paperMs+hopMs, p50(x.pr, m.dc), ogreModelTolMs, "ms")
			c.Paper = fmt.Sprintf("%.0f ms (+ %.0f)", x.paperMs, hopMs)
			r.Claims = append(r.Claims, note(c, "mean %.1f ms", dcResult(x.pr.res, m.dc).Latency.Mean))
		}
	}
	iDelta := p50(pd, "I") - p50(pb, "I")
	r.Claims = append(r.Claims,
		within("the paper's reading: O before the outage, around", 70, p50(pb, "O"), ogreRelTol*70, "ms"),
		within("the paper's reading: O while C is down, around", 140, p50(pd, "O"), ogreRelTol*140, "ms"),
		within("the paper's reading: S before the outage, around", 180, p50(pb, "S"), ogreRelTol*180, "ms"),
		within("the paper's reading: S while C is down, around", 200, p50(pd, "S"), ogreRelTol*200, "ms"),
		holds(fmt.Sprintf("the paper's reading: I is not affected (median within %d ms)", ogreModelTolMs), "unchanged",
			fmt.Sprintf("%+.1f ms", iDelta), math.Abs(iDelta) <= ogreModelTolMs),
	)
	orphans := ogreOrphans(pb.res.History, sc)
	// Transactions that began in [from, to) and were decided by end, conflicting or not.
	seg := func(from, to, end int64, conflicting bool) abortShare {
		return orphans.aborts(pb.res.History, from, to, end, conflicting)
	}
	outageFrom, outageTo := sc.crashUs+sc.settleUs, sc.outageUs-sc.decideUs
	fifth := (outageTo - outageFrom) / 5
	beforeC := seg(o.WarmupUs, sc.crashUs-sc.decideUs, sc.crashUs, true)
	firstC, lastC := seg(outageFrom, outageFrom+fifth, sc.outageUs, true), seg(outageTo-fifth, outageTo, sc.outageUs, true)
	firstO, lastO := seg(outageFrom, outageFrom+fifth, sc.outageUs, false), seg(outageTo-fifth, outageTo, sc.outageUs, false)
	const floorPP = 5 // percentage points: what counts as more
	elevated := firstC.pct() >= beforeC.pct()+floorPP && lastC.pct() >= beforeC.pct()+floorPP &&
		firstC.pct() >= firstO.pct()+floorPP && lastC.pct() >= lastO.pct()+floorPP
	r.Claims = append(r.Claims,
		holds(fmt.Sprintf("C's orphaned pending transactions make conflicting transactions abort for the whole outage: at V, O, I and S, transactions "+
			"conflicting with one of C's in-flight transactions abort more (by ≥ %d points) when begun in the first and in the last fifth of the outage "+
			"than the same keys' transactions before it, and than the other transactions", floorPP), "abort for the whole outage",
			fmt.Sprintf("%d in-flight transactions of C on %d keys; conflicting: before %s, first fifth %s, last fifth %s; others: first %s, last %s; "+
				"aborts while C is down: %s", orphans.n, len(orphans.keys()), beforeC, firstC, lastC, firstO, lastO, abortReasons(pd)), elevated),
	)
	roB, roD := tycsbMetrics(pb.res).ReadOnly, tycsbMetrics(pd.res).ReadOnly
	if roB != nil && roD != nil {
		r.Claims = append(r.Claims, holds("read-only transactions are not affected (mean latency within 1 ms)", "not affected",
			fmt.Sprintf("%.2f ms before, %.2f ms while C is down (%d and %d transactions)", roB.Latency.Mean, roD.Latency.Mean, roB.Transactions, roD.Transactions),
			roD.Transactions > 0 && math.Abs(roD.Latency.Mean-roB.Latency.Mean) <= 1))
	}
	r.Series = append(ogreTimelines(pb.res.History, orphans, sc), seriesFromResults([]string{"before the outage", "C down"}, pb, pd)...)
	return r, nil
}

// abortReasons lists the shares of abort reasons at the datacenters of pr, pooled.
func abortReasons(pr protoResult) string {
	counts := map[string]int{}
	total := 0
	for _, dc := range pr.res.DCs {
		for reason, n := range dc.AbortReasons {
			counts[reason] += n
			total += n
		}
	}
	reasons := make([]string, 0, len(counts))
	for reason := range counts {
		reasons = append(reasons, reason)
	}
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	parts := make([]string, len(reasons))
	for i, reason := range reasons {
		parts[i] = fmt.Sprintf("%s %.0f%%", reason, 100*float64(counts[reason])/float64(total))
	}
	return strings.Join(parts, ", ")
}

// orphanSet is what the transactions of the failed datacenter's clients that were in flight when
// it failed (begun before, finished only when it recovered) read and wrote: while it is down,
// those that reached their vote stay pending at the replicas that voted for them.
type orphanSet struct {
	n              int
	reads, written map[string]bool
}

// ogreOrphans finds the orphans of E5's run in h.
func ogreOrphans(h *history.History, sc ogreScale) orphanSet {
	o := orphanSet{reads: map[string]bool{}, written: map[string]bool{}}
	for _, t := range h.Txns {
		if t.DC != ogreOutageDC || t.Snapshot || t.StartUs >= sc.crashUs || t.EndUs < sc.outageUs {
			continue
		}
		o.n++
		for _, rd := range t.Reads {
			o.reads[rd.Key] = true
		}
		for _, k := range t.Writes {
			o.written[k] = true
		}
	}
	return o
}

// keys lists the keys the orphans touch.
func (o orphanSet) keys() map[string]bool {
	out := map[string]bool{}
	for k := range o.reads {
		out[k] = true
	}
	for k := range o.written {
		out[k] = true
	}
	return out
}

// conflicts reports whether t conflicts with an orphan by Ogre's rule (Alg. 7: any overlap but
// read/read): it writes a key an orphan touches, or reads a key an orphan writes.
func (o orphanSet) conflicts(t history.Txn) bool {
	for _, k := range t.Writes {
		if o.reads[k] || o.written[k] {
			return true
		}
	}
	return slices.ContainsFunc(t.Reads, func(rd txn.Read) bool { return o.written[rd.Key] })
}

// abortShare counts decided transactions and the aborted among them.
type abortShare struct{ aborted, decided int }

func (a abortShare) pct() float64 {
	if a.decided == 0 {
		return 0
	}
	return 100 * float64(a.aborted) / float64(a.decided)
}

func (a abortShare) String() string { return fmt.Sprintf("%.0f%% of %d", a.pct(), a.decided) }

// aborts counts the read-write transactions of the datacenters other than the failed one that
// began in [fromUs, toUs), were decided by endUs, and conflict with an orphan (or, with
// conflicting false, do not).
func (o orphanSet) aborts(h *history.History, fromUs, toUs, endUs int64, conflicting bool) abortShare {
	var a abortShare
	for _, t := range h.Txns {
		if t.DC == ogreOutageDC || t.Snapshot || t.StartUs < fromUs || t.StartUs >= toUs || t.EndUs > endUs ||
			(t.Status != txn.Committed && t.Status != txn.Aborted) || o.conflicts(t) != conflicting {
			continue
		}
		a.decided++
		if t.Status == txn.Aborted {
			a.aborted++
		}
	}
	return a
}

// ogreTimelines are Fig. 5.6's time series from E5's history, by commit (decision) time in
// ogreOutageBins bins: the mean transaction latency of the committed read-write transactions of
// each datacenter ogreMajorityMs names, and the abort rate at the datacenters that stay up, of
// all their read-write transactions and of those conflicting with C's orphans.
func ogreTimelines(h *history.History, orphans orphanSet, sc ogreScale) []Series {
	binUs := sc.outageUs / ogreOutageBins
	type bin struct {
		all, conflict        abortShare
		latencySum, latencyN map[string]float64 // per datacenter, committed transactions
	}
	bins := make([]bin, ogreOutageBins)
	for i := range bins {
		bins[i].latencySum, bins[i].latencyN = map[string]float64{}, map[string]float64{}
	}
	for _, t := range h.Txns {
		i := int(t.EndUs / binUs)
		if t.Snapshot || i >= len(bins) || t.DC == ogreOutageDC || (t.Status != txn.Committed && t.Status != txn.Aborted) {
			continue
		}
		b := &bins[i]
		aborted := 0
		if t.Status == txn.Aborted {
			aborted = 1
		} else {
			b.latencySum[t.DC] += float64(t.EndUs-t.StartUs) / 1000
			b.latencyN[t.DC]++
		}
		b.all.decided, b.all.aborted = b.all.decided+1, b.all.aborted+aborted
		if orphans.conflicts(t) {
			b.conflict.decided, b.conflict.aborted = b.conflict.decided+1, b.conflict.aborted+aborted
		}
	}
	at := func(i int) float64 { return (float64(i) + 0.5) * float64(binUs) / 1e6 }
	latency := Series{Name: "latency-timeline", Kind: KindXY, Title: fmt.Sprintf("Transaction latency against commit time, %s down from %g s",
		ogreOutageDC, float64(sc.crashUs)/1e6), XLabel: "commit time (s)", YLabel: "mean transaction latency (ms)"}
	for _, m := range ogreMajorityMs {
		l := Line{Label: m.dc}
		for i, b := range bins {
			if n := b.latencyN[m.dc]; n > 0 {
				l.X, l.Y = append(l.X, at(i)), append(l.Y, b.latencySum[m.dc]/n)
			}
		}
		latency.Lines = append(latency.Lines, l)
	}
	aborts := Series{Name: "abort-timeline", Kind: KindXY, Title: "Abort rate at the datacenters that stay up against decision time",
		XLabel: "decision time (s)", YLabel: "aborted (% of decided transactions)"}
	all, conflict := Line{Label: "all transactions"}, Line{Label: "conflicting with C's orphans (their keys)"}
	for i, b := range bins {
		if b.all.decided > 0 {
			all.X, all.Y = append(all.X, at(i)), append(all.Y, b.all.pct())
		}
		if b.conflict.decided > 0 {
			conflict.X, conflict.Y = append(conflict.X, at(i)), append(conflict.Y, b.conflict.pct())
		}
	}
	aborts.Lines = []Line{all, conflict}
	return []Series{latency, aborts}
}
