package repro

import (
	"fmt"
	"math"
	"strings"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/topology/lowerbound"
)

func init() {
	register(Experiment{Name: "table4.1", Title: "Lower bound and MAO on Table 4.1 (§3.5)", Run: runTable41})
	register(Experiment{Name: "e4.1", Title: "Helios and baselines, 60 clients on aws-helios (Fig. 4.4)", Run: runE41})
	register(Experiment{Name: "e4.3", Title: "Helios-0 under clock skew (Fig. 4.6 left)", Run: runE43})
}

// runTable41 plots the MAO latencies and the throughput-optimal vertex on Table 4.1. It sets
// no claim: the solver's outputs (5 / 25 / 15 ms, average 15, the vertex (0, 30, 20)) are facts
// of a deterministic computation, tested where it lives (topology/lowerbound's
// TestMAOTable4_1 and TestThroughputVertexTable4_1), not measurements
// that could differ from the paper's.
func runTable41(env Env) (*Report, error) {
	env.progress("table4.1: solving the MAO linear program")
	topo, _ := topology.Preset("table4.1")
	sol, err := lowerbound.MAO(topo.RTTMs)
	if err != nil {
		return nil, err
	}
	tp, err := lowerbound.Throughput(topo.RTTMs, 5)
	if err != nil {
		return nil, err
	}
	r := &Report{Name: "table4.1", Title: experiments["table4.1"].Title}
	r.Series = []Series{dcBars("latency", "Commit latency per datacenter: MAO and the throughput-optimal vertex", "commit latency (ms)",
		topo.DCs, Line{Label: "MAO (latency-optimal)", Y: sol.LatencyMs}, Line{Label: "throughput-optimal vertex", Y: tp.LatencyMs})}
	return r, nil
}

// e41Options is the spec's E4.1 setting: aws-helios, 12 closed-loop clients per DC, T-YCSB
// (50,000 keys, Zipfian 0.99, 5 ops, 50% reads), propagation interval 10 ms, GT 500 ms; 60 s.
func e41Options(env Env) bench.Options {
	opts := bench.Defaults()
	opts.Seed = env.Seed
	env.network(&opts)
	return opts
}

type protoResult struct {
	avgMs, tps float64
	res        *bench.Result
}

func runProtocols(env Env, exp string, opts bench.Options, protocols []string) (map[string]protoResult, error) {
	out := map[string]protoResult{}
	for _, p := range protocols {
		env.progress("%s: %s, %d virtual s", exp, p, opts.DurationUs/1_000_000)
		res, err := bench.Run(opts, p)
		if err != nil {
			return nil, err
		}
		if !res.Checker.OK {
			return nil, fmt.Errorf("%s: checker: %s", p, res.Checker.Summary())
		}
		pr := protoResult{res: res}
		for _, dc := range res.DCs {
			pr.avgMs += dc.Latency.Mean / float64(len(res.DCs))
			pr.tps += dc.CommittedTPS
		}
		out[p] = pr
	}
	return out, nil
}

func runE41(env Env) (*Report, error) {
	opts := e41Options(env)
	results, err := runProtocols(env, "e4.1", opts, []string{"helios-0", "helios-1", "helios-2", "helios-b", "mf"})
	if err != nil {
		return nil, err
	}
	baselines := opts
	baselines.Params = nil // the baselines take none of Helios's parameters
	more, err := runProtocols(env, "e4.1", baselines, []string{"rc", "2pc-paxos"})
	if err != nil {
		return nil, err
	}
	rc, tpc := more["rc"], more["2pc-paxos"]
	h0, h1, h2, hb, mf := results["helios-0"], results["helios-1"], results["helios-2"], results["helios-b"], results["mf"]
	r := &Report{Name: "e4.1", Title: experiments["e4.1"].Title}
	var over []string
	inRange := true
	for _, dc := range h0.res.DCs {
		d := dc.Latency.Mean - dc.LowerBoundMs
		over = append(over, fmt.Sprintf("%s %+.0f", dc.Name, d))
		inRange = inRange && d <= 54
	}
	r.Claims = append(r.Claims,
		holds("Helios-0 is within 7–54 ms of the MAO bound at every DC", "7–54 ms above", strings.Join(over, ", ")+" ms", inRange),
		holds("average latency: Helios-0 < Helios-1 < Helios-2", "ordered", fmt.Sprintf("%.1f < %.1f < %.1f ms", h0.avgMs, h1.avgMs, h2.avgMs), h0.avgMs < h1.avgMs && h1.avgMs < h2.avgMs),
		holds("Helios-0 beats MF on average", "Helios-0 lower", fmt.Sprintf("%.1f vs %.1f ms", h0.avgMs, mf.avgMs), h0.avgMs < mf.avgMs),
		within("Helios-B's average latency above Helios-0", 12.2, hb.avgMs-h0.avgMs, 5, "ms"),
		within("MF's average latency above Helios-0", 99, mf.avgMs-h0.avgMs, 25, "ms"),
		within("Helios-2 throughput below Helios-0", 37, 100*(1-h2.tps/h0.tps), 10, "%"),
		within("MF throughput below Helios-0", 52, 100*(1-mf.tps/h0.tps), 10, "%"),
		within("Helios-B throughput below Helios-0", 24, 100*(1-hb.tps/h0.tps), 10, "%"),
	)
	// RC commits after the RTT to the closest majority (spec §5.6). Under E4.1's jitter and load
	// the comparison is with that RTT as the simulated network delivers it (rcExpectation): the
	// order statistic of jittered RTTs, each message also queued behind its link's earlier ones.
	rcRef := rcExpectation(baselines.Topology, baselines.Jitter, baselines.JitterCorrelationUs, baselines.ClientHopUs, baselines.DurationUs, rc.res, env.Seed)
	var rcOff []string
	rcOK := true
	for i, dc := range rc.res.DCs {
		d := dc.Latency.Mean - rcRef.loadedMs[i]
		rcOff = append(rcOff, fmt.Sprintf("%s %.1f (static %.0f, jittered %.1f, loaded %.1f)", dc.Name, dc.Latency.Mean, rcRef.staticMs[i], rcRef.jitterMs[i], rcRef.loadedMs[i]))
		rcOK = rcOK && math.Abs(d) <= 5
	}
	slowest := func(dc string) bool {
		i := dcIndex(tpc.res, dc)
		for _, other := range []protoResult{h0, h1, h2, hb, mf, rc} {
			if other.res.DCs[i].Latency.Mean >= tpc.res.DCs[i].Latency.Mean {
				return false
			}
		}
		return true
	}
	r.Claims = append(r.Claims,
		holds("RC commits within 5 ms of the RTT to the closest majority (expected under the run's jitter and per-link load, client hop included)",
			"≈ RTT to the closest majority", strings.Join(rcOff, "; ")+" ms", rcOK),
		holds("2PC/Paxos is the slowest at O and C", "slowest at O and C", fmt.Sprintf("O %.0f ms, C %.0f ms",
			tpc.res.DCs[dcIndex(tpc.res, "O")].Latency.Mean, tpc.res.DCs[dcIndex(tpc.res, "C")].Latency.Mean), slowest("O") && slowest("C")),
		within("RC's average latency below Helios-2", 20, h2.avgMs-rc.avgMs, 10, "ms"),
		within("RC and 2PC/Paxos throughput below Helios-2 (average of the two)", 56.5, 100*(1-(rc.tps+tpc.tps)/2/h2.tps), 10, "%"),
	)
	for _, pair := range []struct {
		dc    string
		delta float64
	}{{"O", 9}, {"C", 9}} {
		i := dcIndex(h0.res, pair.dc)
		r.Claims = append(r.Claims, within("Helios-1 above Helios-0 at "+pair.dc+" (model: the ack from the closest DC)", pair.delta,
			h1.res.DCs[i].Latency.Mean-h0.res.DCs[i].Latency.Mean, 3, "ms"))
	}
	r.Series = seriesFromResults(nil, h0, h1, h2, hb, mf, rc, tpc)
	return r, nil
}

func dcIndex(res *bench.Result, name string) int {
	for i, dc := range res.DCs {
		if dc.Name == name {
			return i
		}
	}
	return -1
}

func runE43(env Env) (*Report, error) {
	base := e41Options(env)
	base.DurationUs = 30_000_000
	r := &Report{Name: "e4.3", Title: experiments["e4.3"].Title}
	run := func(label string, skewMs map[string]int64) (protoResult, error) {
		opts := base
		opts.ClockOffsetUs = make([]int64, opts.Topology.N())
		for dc, ms := range skewMs {
			i, _ := opts.Topology.Index(dc)
			opts.ClockOffsetUs[i] = ms * 1000
		}
		res, err := runProtocols(env, "e4.3 "+label, opts, []string{"helios-0"})
		return res["helios-0"], err
	}
	sync, err := run("synchronised", nil)
	if err != nil {
		return nil, err
	}
	ahead, err := run("V +100 ms", map[string]int64{"V": 100})
	if err != nil {
		return nil, err
	}
	behind, err := run("V −100 ms", map[string]int64{"V": -100})
	if err != nil {
		return nil, err
	}
	mixed, err := run("mixed", map[string]int64{"V": 24, "O": -60, "C": 120, "I": -10, "S": 55})
	if err != nil {
		return nil, err
	}
	v := dcIndex(sync.res, "V")
	r.Claims = append(r.Claims,
		within("V +100 ms: V's latency rises", 62, ahead.res.DCs[v].Latency.Mean-sync.res.DCs[v].Latency.Mean, 15, "ms"),
		within("V −100 ms: V improves", 37, sync.res.DCs[v].Latency.Mean-behind.res.DCs[v].Latency.Mean, 15, "ms"),
		within("V −100 ms: the average rises", 64, behind.avgMs-sync.avgMs, 15, "ms"),
		within("mixed skew {V+24, O−60, C+120, I−10, S+55}: the average rises", 60, mixed.avgMs-sync.avgMs, 20, "ms"),
	)
	r.Series = seriesFromResults([]string{"synchronised", "V +100 ms", "V −100 ms", "mixed skew"}, sync, ahead, behind, mixed)
	return r, nil
}
