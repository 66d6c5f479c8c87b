package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// metrics are the node's Prometheus metrics, served on /metrics.
type metrics struct {
	registry      *prometheus.Registry
	commits       prometheus.Counter
	aborts        *prometheus.CounterVec
	commitLatency prometheus.Histogram
	sentMessages  *prometheus.CounterVec
	sentBytes     *prometheus.CounterVec
}

func newMetrics(t func() *transport) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		commits:  prometheus.NewCounter(prometheus.CounterOpts{Name: "meridian_commits_total", Help: "Transactions committed at this node."}),
		aborts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_aborts_total",
			Help: "Transactions aborted at this node, by reason."}, []string{"reason"}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "meridian_commit_latency_seconds",
			Help:    "Time from a commit request reaching the node to its decision leaving it.",
			Buckets: prometheus.ExponentialBuckets(0.001, 1.5, 24)}),
		sentMessages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_peer_messages_sent_total",
			Help: "Replica messages queued for each peer."}, []string{"peer"}),
		sentBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_peer_bytes_sent_total",
			Help: "Encoded bytes of replica messages queued for each peer."}, []string{"peer"}),
	}
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "meridian_peer_max_receive_age_seconds",
		Help: "Longest time since a message arrived from any peer (log lag); -1 if one never spoke."},
		func() float64 {
			worst := 0.0
			if tr := t(); tr != nil {
				for _, p := range tr.status() {
					if p.LastReceiveAgeS < 0 {
						return -1
					}
					worst = max(worst, p.LastReceiveAgeS)
				}
			}
			return worst
		})
	m.registry.MustRegister(m.commits, m.aborts, m.commitLatency, m.sentMessages, m.sentBytes, lag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observeCommit(r protocol.Reply, latencyS float64) {
	switch {
	case r.Err != "":
		m.aborts.WithLabelValues("error").Inc()
	case r.Status == txn.Committed:
		m.commits.Inc()
		m.commitLatency.Observe(latencyS)
	default:
		m.aborts.WithLabelValues(string(r.Reason)).Inc()
	}
}

// peerCounters are the sent-message counters of one peer, looked up once (a label lookup hashes
// and locks, per message otherwise).
type peerCounters struct {
	messages, bytes prometheus.Counter
}

func (m *metrics) peerCounters(peer string) peerCounters {
	return peerCounters{messages: m.sentMessages.WithLabelValues(peer), bytes: m.sentBytes.WithLabelValues(peer)}
}

func (c peerCounters) sent(bytes int) {
	c.messages.Inc()
	c.bytes.Add(float64(bytes))
}

// httpHandler serves /metrics, /healthz (200 "ok" while the node is healthy, else 503 with the
// reason; see unhealthy), /status (per-peer link state as JSON: the log lag towards every peer)
// /versions (every key's installed version order as JSON, for checking a real cluster's
// convergence), /visibility (the visibility events of a transactional-causal replica since the
// previous request, VisibilityReport) and Go's profiler under /debug/pprof/. On a cluster with
// TLS the server speaks HTTPS, and /versions, /visibility and the profiler, which reveal data
// and memory, answer only clients that present a certificate from the cluster CA.
func (n *Node) httpHandler(ready *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.metrics.registry, promhttp.HandlerOpts{}))
	mux.Handle("/debug/pprof/", n.certified(http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/profile", n.certified(http.HandlerFunc(pprof.Profile)))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if reason := n.unhealthy(r.Context(), ready.Load()); reason != "" {
			http.Error(w, reason, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.Handle("/versions", n.certified(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !n.recordsOrder() {
			http.Error(w, fmt.Sprintf("%s keeps its version order only when it records it, and this node's cluster file sets record_versions: false (`meridian cluster up --record-versions=false`)", n.cfg.Protocol), http.StatusConflict)
			return
		}
		if orders, ok := onLoop(n, r.Context(), n.versionOrder); ok {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(orders)
		}
	})))
	mux.Handle("/visibility", n.certified(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		report, ok := onLoop(n, r.Context(), n.drainVisibility)
		switch {
		case !ok:
		case report == nil:
			http.Error(w, "this protocol makes versions visible on commit and reports no visibility events", http.StatusNotFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(report)
		}
	})))
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"node": n.cfg.Nodes[n.self].Name, "peers": n.transport.status(),
			"clock_skew_us": n.skewUs.Load()})
	})
	if n.cfg.Admin {
		mux.Handle("/admin/", n.certified(http.HandlerFunc(n.adminHandler)))
	}
	return mux
}

// adminHandler serves the nemesis's fault injection (cluster.Config.Admin), all POST:
//
//	/admin/cut?peer=B&peer=C   drop every message to and from these peers (this node's side)
//	/admin/heal[?peer=B]       stop dropping them (every peer without a peer argument)
//	/admin/skew?offset=150ms   read the wall clock offset by this duration (negative too)
//
// A link is cut at both ends by asking both nodes. Messages a cut drops are lost, as in a
// network partition: the protocols' own retransmission repairs them after the heal.
func (n *Node) adminHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "admin endpoints take POST", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	peers := func() ([]*peer, error) {
		var out []*peer
		for _, name := range q["peer"] {
			i, _, err := n.cfg.Node(name)
			if err != nil || n.transport.peers[i] == nil {
				return nil, fmt.Errorf("no peer %q", name)
			}
			out = append(out, n.transport.peers[i])
		}
		return out, nil
	}
	switch r.URL.Path {
	case "/admin/cut", "/admin/heal":
		ps, err := peers()
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case len(ps) == 0 && r.URL.Path == "/admin/cut":
			http.Error(w, "cut: name at least one peer", http.StatusBadRequest)
			return
		case len(ps) == 0:
			for _, p := range n.transport.peers {
				if p != nil {
					ps = append(ps, p)
				}
			}
		}
		for _, p := range ps {
			p.cut.Store(r.URL.Path == "/admin/cut")
		}
		n.logger.Warn("nemesis: "+strings.TrimPrefix(r.URL.Path, "/admin/"), "peers", q["peer"])
	case "/admin/skew":
		offset, err := time.ParseDuration(q.Get("offset"))
		if err != nil {
			http.Error(w, "skew: offset must be a duration such as 150ms or -1s", http.StatusBadRequest)
			return
		}
		n.skewUs.Store(offset.Microseconds())
		n.logger.Warn("nemesis: clock skew", "offset", offset)
	default:
		http.Error(w, "unknown admin endpoint (want cut, heal or skew)", http.StatusNotFound)
		return
	}
	w.Write([]byte("ok\n"))
}

// certified passes requests to h only from clients with a verified certificate when the cluster
// runs TLS (the TLS listener has checked it against the cluster CA), and refuses the others
// with 403 Forbidden.
func (n *Node) certified(h http.Handler) http.Handler {
	if n.cfg.TLS == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "a client certificate signed by the cluster CA is required", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// healthProbeTimeout is how long /healthz waits for the event loop to run a no-op input.
const healthProbeTimeout = time.Second

// unhealthy returns why the node is not healthy, or "" if it is. A node is healthy once it has
// recovered (ready) and as long as its peer accept loop runs and its event loop runs a no-op
// input, queued behind the inputs already waiting, within healthProbeTimeout: a loop that has
// stopped, or is stuck in a replica call or a disk write, fails the probe.
func (n *Node) unhealthy(ctx context.Context, ready bool) string {
	select {
	case <-n.stopped:
		return "event loop stopped"
	default:
	}
	switch {
	case !ready:
		return "recovering"
	case n.transport.acceptStopped.Load():
		return "not accepting peer connections: the accept loop has stopped"
	}
	stuck := fmt.Sprintf("event loop stuck: a probe input did not run within %s", healthProbeTimeout)
	timeout := time.NewTimer(healthProbeTimeout)
	defer timeout.Stop()
	ran := make(chan struct{})
	select {
	case n.inputs <- input{kind: inCall, call: func() { close(ran) }}:
	case <-n.stopped:
		return "event loop stopped"
	case <-timeout.C:
		return stuck
	case <-ctx.Done():
		return "request cancelled"
	}
	select {
	case <-ran:
		return ""
	case <-n.stopped:
		return "event loop stopped"
	case <-timeout.C:
		return stuck
	case <-ctx.Done():
		return "request cancelled"
	}
}

// onLoop runs f on n's event loop, which owns the replica, and returns its result; false if ctx
// ends first (the request was cancelled).
func onLoop[T any](n *Node, ctx context.Context, f func() T) (T, bool) {
	out := make(chan T, 1)
	var zero T
	select {
	case n.inputs <- input{kind: inCall, call: func() { out <- f() }}:
	case <-ctx.Done():
		return zero, false
	}
	select {
	case v := <-out:
		return v, true
	case <-ctx.Done():
		return zero, false
	}
}

// VisibilityReport is a node's answer on /visibility: the visibility events its replica
// recorded since the previous request (tcc.VisibilityReporter; the first request turns
// recording on), with times on the node's clock, and how many it dropped for want of a drain.
type VisibilityReport struct {
	Events  []tcc.Visibility `json:"events"`
	Dropped int              `json:"dropped"`
}

// drainVisibility drains the replica's visibility events, or returns nil if its protocol does
// not report any. It runs on the event loop. Draining only reads what the replica observed: it
// changes nothing the replica sends, so it is not an input and is not logged.
func (n *Node) drainVisibility() *VisibilityReport {
	rep, ok := protocol.Innermost(n.replica).(tcc.VisibilityReporter)
	if !ok {
		return nil
	}
	events, dropped := rep.DrainVisibility(nil)
	return &VisibilityReport{Events: events, Dropped: dropped}
}

// recordsOrder reports whether the node can report its version order: its replica keeps none of
// its own (its store's installation order is the order), or the cluster records it.
func (n *Node) recordsOrder() bool {
	_, own := protocol.Innermost(n.replica).(protocol.VersionOrderer)
	return !own || !n.cfg.NoVersionRecord
}

// versionOrder renders the replica's per-key version order (protocol.VersionOrderer if it
// implements it, else its store's installation order) with transaction ids as strings, the form
// the history file and the checker use. It runs on the event loop.
func (n *Node) versionOrder() map[string][]string {
	order := n.env.store.VersionOrder()
	if vo, ok := protocol.Innermost(n.replica).(protocol.VersionOrderer); ok {
		order = vo.VersionOrder()
	}
	out := make(map[string][]string, len(order))
	for k, ids := range order {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = id.String()
		}
		out[k] = s
	}
	return out
}
