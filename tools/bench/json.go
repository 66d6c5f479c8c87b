package bench

import (
	"encoding/json"
	"io"

	"github.com/meridian-kv/meridian/workload"
)

// The JSON form of results, the same for every workload and protocol (docs/RESULTS.md):
//
//	{"runs":[{"protocol","workload","topology","partitions","seed","consistency",
//	  "datacenters":[{"name","commit_latency_ms":{"mean","p50","p99"},"lower_bound_ms",
//	    "committed_tps","ops_per_s","abort_rate","committed","aborted","aborts_by_reason":{...},
//	    "end_to_end_latency_ms":{"mean","p50","p99"},"attempts_per_commit"}],
//	  "checker":{"ok","model","anomalies","expected_anomalies","summary"},
//	  "unfinished","warnings":[...],"workload_metrics":{...},
//	  "ordering":{"fast_decisions","slow_decisions","fast_path_share","components",
//	    "multi_component_share","largest_component","component_sizes":{...}},"replay"}]}
//
// "ordering" is present for simulated runs of protocols whose replicas report it (EPaxos).

// RunJSON is one run in the JSON form of results.
type RunJSON struct {
	Protocol    string           `json:"protocol"`
	Workload    string           `json:"workload"`
	Topology    string           `json:"topology"`
	Partitions  int              `json:"partitions"`
	Seed        uint64           `json:"seed"`
	Consistency string           `json:"consistency"`
	Datacenters []DCJSON         `json:"datacenters"`
	Checker     CheckerJSON      `json:"checker"`
	Unfinished  int              `json:"unfinished"`
	Warnings    []string         `json:"warnings"`
	Metrics     workload.Metrics `json:"workload_metrics"`
	Ordering    *OrderingJSON    `json:"ordering,omitempty"`
	Replay      string           `json:"replay"`
}

// OrderingJSON is a run's ordering figures (Result.Ordering): decisions by path, over every
// replica, and the strongly connected components executed, counted at every replica, by size.
type OrderingJSON struct {
	FastDecisions       int         `json:"fast_decisions"`
	SlowDecisions       int         `json:"slow_decisions"`
	FastPathShare       float64     `json:"fast_path_share"`
	Components          int         `json:"components"`
	MultiComponentShare float64     `json:"multi_component_share"`
	LargestComponent    int         `json:"largest_component"`
	ComponentSizes      map[int]int `json:"component_sizes,omitempty"`
}

// DCJSON is one datacenter's figures.
type DCJSON struct {
	Name          string      `json:"name"`
	CommitLatency LatencyJSON `json:"commit_latency_ms"`
	LowerBoundMs  float64     `json:"lower_bound_ms"`
	CommittedTPS  float64     `json:"committed_tps"`
	OpsPerSec     float64     `json:"ops_per_s"`
	AbortRate     float64     `json:"abort_rate"`
	Committed     int         `json:"committed"`
	Aborted       int         `json:"aborted"`
	// AbortsByReason counts the aborted attempts by reason.
	AbortsByReason map[string]int `json:"aborts_by_reason"`
	// EndToEndLatency runs from a transaction's first attempt to its commit (bench --retry).
	EndToEndLatency   LatencyJSON `json:"end_to_end_latency_ms"`
	AttemptsPerCommit float64     `json:"attempts_per_commit"`
}

// LatencyJSON is a latency summary in milliseconds.
type LatencyJSON struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

// CheckerJSON is the checker's verdict: ok is the checker's own (no finding at all);
// expected_anomalies counts the findings the protocol's consistency allows (an eventually
// consistent protocol's C2 and C3).
type CheckerJSON struct {
	OK                bool   `json:"ok"`
	Model             string `json:"model"`
	Anomalies         int    `json:"anomalies"`
	ExpectedAnomalies int    `json:"expected_anomalies"`
	Summary           string `json:"summary"`
}

// JSON returns r in the JSON form of results.
func (r *Result) JSON() RunJSON {
	out := RunJSON{Protocol: r.Protocol, Workload: r.Workload, Topology: r.Topology, Partitions: r.Partitions, Seed: r.Seed,
		Consistency: string(r.Consistency), Datacenters: make([]DCJSON, len(r.DCs)), Unfinished: r.Unfinished, Warnings: r.Warnings(), Metrics: r.Metrics,
		Replay: r.Replay, Checker: CheckerJSON{OK: r.Checker.OK, Model: r.Checker.Model.String(), Anomalies: len(r.Checker.Anomalies),
			ExpectedAnomalies: r.ExpectedAnomalies(), Summary: r.Checker.Summary()}}
	if o := r.Ordering; o != nil {
		count, multi, largest := o.Components()
		out.Ordering = &OrderingJSON{FastDecisions: o.FastDecisions, SlowDecisions: o.SlowDecisions, FastPathShare: o.FastShare(),
			Components: count, MultiComponentShare: multi, LargestComponent: largest, ComponentSizes: o.ComponentSizes}
	}
	for i, d := range r.DCs {
		out.Datacenters[i] = DCJSON{Name: d.Name, CommitLatency: LatencyJSON{Mean: d.Latency.Mean, P50: d.Latency.P50, P99: d.Latency.P99},
			LowerBoundMs: d.LowerBoundMs, CommittedTPS: d.CommittedTPS, OpsPerSec: d.OpsPerSec, AbortRate: d.AbortRate,
			Committed: d.Committed, Aborted: d.Aborted, AbortsByReason: d.AbortReasons,
			EndToEndLatency:   LatencyJSON{Mean: d.EndToEnd.Mean, P50: d.EndToEnd.P50, P99: d.EndToEnd.P99},
			AttemptsPerCommit: d.AttemptsPerCommit}
	}
	return out
}

// WriteJSON writes results as {"runs":[...]}, indented.
func WriteJSON(w io.Writer, results []*Result) error {
	runs := make([]RunJSON, len(results))
	for i, r := range results {
		runs[i] = r.JSON()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string][]RunJSON{"runs": runs})
}
