// Package dashboard serves a live view of a running cluster (`meridian dashboard`): per
// datacenter, the node-side commit latency beside the datacenter's lower bound, the throughput,
// the abort rate by reason, and the state of every link between nodes. A Collector reads every
// node's /metrics (Prometheus text) and /status once a second and turns the counters into rates
// over the last interval; the page polls the collector's JSON and redraws.
package dashboard

import (
	"bytes"
	"context"
	"crypto/tls"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology/lowerbound"
)

// State is what the page shows: one snapshot of the cluster's last interval.
type State struct {
	Cluster  string `json:"cluster"`
	Protocol string `json:"protocol"`
	Topology string `json:"topology"`
	// AtUnixMs is when the snapshot was taken; IntervalS the length of the interval its rates
	// cover (0 until two polls have been made).
	AtUnixMs  int64   `json:"at_unix_ms"`
	IntervalS float64 `json:"interval_s"`
	DCs       []DC    `json:"datacenters"`
	Links     []Link  `json:"links"`
	// Errors lists the nodes that did not answer, and why.
	Errors []string `json:"errors,omitempty"`
}

// DC is one datacenter's figures over the last interval, summed over its nodes.
type DC struct {
	Name string `json:"name"`
	// CommitLatencyMs is the mean time from a commit request reaching a node to its decision
	// leaving it (the clients' own hop is not in it); null when nothing committed.
	CommitLatencyMs *float64 `json:"commit_latency_ms"`
	// LowerBoundMs is the datacenter's lower bound on commit latency (the MAO solution), for the
	// serializable protocols; null otherwise.
	LowerBoundMs *float64 `json:"lower_bound_ms"`
	CommitsPerS  float64  `json:"commits_per_s"`
	AbortsPerS   float64  `json:"aborts_per_s"`
	// AbortRate is aborts / (commits + aborts) over the interval.
	AbortRate      float64            `json:"abort_rate"`
	AbortsByReason map[string]float64 `json:"aborts_by_reason"` // per second
	Nodes          int                `json:"nodes"`
	NodesUp        int                `json:"nodes_up"`
}

// Link is one node's view of its connection to a peer.
type Link struct {
	From            string  `json:"from"`
	To              string  `json:"to"`
	Connected       bool    `json:"connected"`
	LastReceiveAgeS float64 `json:"last_receive_age_s"` // -1: never heard
	Cut             bool    `json:"cut"`
}

// sample is one node's cumulative counters at one poll.
type sample struct {
	ok             bool
	commits        float64
	latencySumS    float64
	latencyCount   float64
	abortsByReason map[string]float64
	links          []Link
	errorText      string
}

// Collector polls a cluster's nodes and keeps the latest State.
type Collector struct {
	cfg     *cluster.Config
	probe   *cluster.Prober
	boundMs []float64 // per datacenter; nil when the protocol is not serializable

	mu     sync.Mutex
	prev   []sample
	prevAt time.Time
	state  State
}

// NewCollector returns the collector of cfg's nodes, presenting cert on a TLS cluster (nil
// otherwise).
func NewCollector(cfg *cluster.Config, cert *tls.Certificate) (*Collector, error) {
	probe, err := cluster.NewProber(cfg, cert)
	if err != nil {
		return nil, err
	}
	c := &Collector{cfg: cfg, probe: probe}
	if e, err := registry.Lookup(cfg.Protocol); err == nil && e.Promises() == registry.Serializable {
		sol, err := lowerbound.MAO(cfg.Topology.RTTMs)
		if err != nil {
			return nil, fmt.Errorf("dashboard: lower bound of %s: %w", cfg.Topology.Name, err)
		}
		c.boundMs = sol.LatencyMs
	}
	c.state = State{Cluster: cfg.Name, Protocol: cfg.Protocol, Topology: cfg.Topology.Name}
	return c, nil
}

// Poll reads every node once and updates the state: rates over the time since the previous
// poll.
func (c *Collector) Poll(ctx context.Context) {
	now := time.Now()
	samples := make([]sample, len(c.cfg.Nodes))
	var wg sync.WaitGroup
	for i := range c.cfg.Nodes {
		wg.Go(func() { samples[i] = c.read(ctx, i) })
	}
	wg.Wait()

	c.mu.Lock()
	defer c.mu.Unlock()
	st := State{Cluster: c.cfg.Name, Protocol: c.cfg.Protocol, Topology: c.cfg.Topology.Name, AtUnixMs: now.UnixMilli()}
	if c.prev != nil {
		st.IntervalS = now.Sub(c.prevAt).Seconds()
	}
	type acc struct {
		commits, latSum, latCount float64
		aborts                    map[string]float64
		nodes, up                 int
	}
	perDC := make([]acc, c.cfg.Topology.N())
	for i, s := range samples {
		nd := c.cfg.Nodes[i]
		a := &perDC[nd.DCIndex]
		a.nodes++
		if !s.ok {
			st.Errors = append(st.Errors, fmt.Sprintf("node %s: %s", nd.Name, s.errorText))
			continue
		}
		a.up++
		st.Links = append(st.Links, s.links...)
		if c.prev == nil || !c.prev[i].ok {
			continue
		}
		p := c.prev[i]
		// A restarted node's counters start again from zero: count its new total.
		reset := s.commits < p.commits
		delta := func(now, before float64) float64 {
			if reset {
				return now
			}
			return max(now-before, 0)
		}
		a.commits += delta(s.commits, p.commits)
		a.latSum += delta(s.latencySumS, p.latencySumS)
		a.latCount += delta(s.latencyCount, p.latencyCount)
		if a.aborts == nil {
			a.aborts = map[string]float64{}
		}
		for reason, n := range s.abortsByReason {
			a.aborts[reason] += delta(n, p.abortsByReason[reason])
		}
	}
	for dc, a := range perDC {
		d := DC{Name: c.cfg.Topology.DCs[dc], Nodes: a.nodes, NodesUp: a.up, AbortsByReason: map[string]float64{}}
		if c.boundMs != nil {
			d.LowerBoundMs = &c.boundMs[dc]
		}
		if st.IntervalS > 0 {
			aborts := 0.0
			for reason, n := range a.aborts {
				d.AbortsByReason[reason] = n / st.IntervalS
				aborts += n
			}
			d.CommitsPerS, d.AbortsPerS = a.commits/st.IntervalS, aborts/st.IntervalS
			if total := a.commits + aborts; total > 0 {
				d.AbortRate = aborts / total
			}
			if a.latCount > 0 {
				ms := a.latSum / a.latCount * 1000
				d.CommitLatencyMs = &ms
			}
		}
		st.DCs = append(st.DCs, d)
	}
	c.prev, c.prevAt, c.state = samples, now, st
}

// State returns the latest snapshot.
func (c *Collector) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// read fetches node i's counters and links.
func (c *Collector) read(ctx context.Context, i int) sample {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	code, body, err := c.probe.Get(ctx, i, "/metrics", 16<<20)
	if err != nil || code != http.StatusOK {
		return sample{errorText: fmt.Sprintf("/metrics: %v (status %d)", err, code)}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return sample{errorText: "/metrics: " + err.Error()}
	}
	s := sample{ok: true, abortsByReason: map[string]float64{}}
	if f := families["meridian_commits_total"]; f != nil && len(f.Metric) > 0 {
		s.commits = f.Metric[0].GetCounter().GetValue()
	}
	if f := families["meridian_commit_latency_seconds"]; f != nil && len(f.Metric) > 0 {
		h := f.Metric[0].GetHistogram()
		s.latencySumS, s.latencyCount = h.GetSampleSum(), float64(h.GetSampleCount())
	}
	if f := families["meridian_aborts_total"]; f != nil {
		for _, m := range f.Metric {
			s.abortsByReason[label(m, "reason")] += m.GetCounter().GetValue()
		}
	}
	code, body, err = c.probe.Get(ctx, i, "/status", 1<<20)
	if err == nil && code == http.StatusOK {
		var status struct {
			Peers []struct {
				Peer            string  `json:"peer"`
				Connected       bool    `json:"connected"`
				LastReceiveAgeS float64 `json:"last_receive_age_s"`
				Cut             bool    `json:"cut"`
			} `json:"peers"`
		}
		if json.Unmarshal(body, &status) == nil {
			for _, p := range status.Peers {
				s.links = append(s.links, Link{From: c.cfg.Nodes[i].Name, To: p.Peer, Connected: p.Connected,
					LastReceiveAgeS: p.LastReceiveAgeS, Cut: p.Cut})
			}
		}
	}
	return s
}

// label returns the value of m's label name.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

//go:embed index.html
var indexHTML []byte

// Handler serves the page (/) and the collector's state as JSON (/api/state).
func Handler(c *Collector) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(indexHTML)
	})
	mux.HandleFunc("/api/state", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c.State())
	})
	return mux
}

// Run polls the cluster every interval until ctx ends.
func (c *Collector) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	c.Poll(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Poll(ctx)
		}
	}
}
