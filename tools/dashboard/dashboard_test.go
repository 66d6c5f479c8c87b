package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/meridian-kv/meridian/protocols/all" // cluster files name protocols
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

// fakeNode serves a node's /metrics with the counters it is set to, and a /status.
type fakeNode struct {
	commits, aborts, latencySumMs atomic.Int64
}

func (f *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/metrics":
		fmt.Fprintf(w, "# TYPE meridian_commits_total counter\nmeridian_commits_total %d\n", f.commits.Load())
		fmt.Fprintf(w, "# TYPE meridian_aborts_total counter\nmeridian_aborts_total{reason=\"remote-conflict\"} %d\n", f.aborts.Load())
		fmt.Fprintf(w, "# TYPE meridian_commit_latency_seconds histogram\nmeridian_commit_latency_seconds_bucket{le=\"+Inf\"} %d\n"+
			"meridian_commit_latency_seconds_sum %g\nmeridian_commit_latency_seconds_count %d\n",
			f.commits.Load(), float64(f.latencySumMs.Load())/1000, f.commits.Load())
	case "/status":
		fmt.Fprint(w, `{"node":"x","peers":[{"peer":"B","connected":true,"last_receive_age_s":0.5},{"peer":"C","connected":false,"last_receive_age_s":-1,"cut":true}]}`)
	default:
		http.NotFound(w, r)
	}
}

// TestCollectorRates: rates are the counters' growth over the interval, the latency the mean of
// the interval's commits, a restarted node's counters count from zero, and a node that does not
// answer is reported and not counted.
func TestCollectorRates(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	cfg := cluster.Generate(topo, "table4.1", "helios-0", t.TempDir(), 7100)
	nodes := make([]*fakeNode, len(cfg.Nodes))
	for i := range cfg.Nodes {
		nodes[i] = &fakeNode{}
		srv := httptest.NewServer(nodes[i])
		t.Cleanup(srv.Close)
		cfg.Nodes[i].MetricsAddr = strings.TrimPrefix(srv.URL, "http://")
		if i == 2 {
			srv.Close() // C does not answer
		}
	}
	c, err := NewCollector(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := nodes[0]
	a.commits.Store(100)
	a.latencySumMs.Store(100 * 20)
	c.Poll(context.Background())
	if st := c.State(); st.IntervalS != 0 || st.DCs[0].CommitsPerS != 0 {
		t.Fatalf("first poll has rates: %+v", st)
	}
	a.commits.Store(150)
	a.latencySumMs.Store(100*20 + 50*30)
	a.aborts.Store(50)
	c.Poll(context.Background())
	st := c.State()
	dcA := st.DCs[0]
	perS := 50 / st.IntervalS
	switch {
	case dcA.CommitLatencyMs == nil || *dcA.CommitLatencyMs < 29.9 || *dcA.CommitLatencyMs > 30.1:
		t.Errorf("A's latency %v, want the interval's mean 30 ms", dcA.CommitLatencyMs)
	case dcA.CommitsPerS < perS*0.999 || dcA.CommitsPerS > perS*1.001 || dcA.AbortRate != 0.5:
		t.Errorf("A: %.1f commits/s (want %.1f), abort rate %.2f (want 0.5)", dcA.CommitsPerS, perS, dcA.AbortRate)
	case dcA.LowerBoundMs == nil || *dcA.LowerBoundMs != 5:
		t.Errorf("A's lower bound %v, want 5 ms (table4.1)", dcA.LowerBoundMs)
	case st.DCs[2].NodesUp != 0 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "node C"):
		t.Errorf("C: %d up, errors %v", st.DCs[2].NodesUp, st.Errors)
	case len(st.Links) != 4 || !st.Links[1].Cut || st.Links[0].To != "B" || st.Links[0].From != "A":
		t.Errorf("links %+v", st.Links)
	}
	a.commits.Store(10) // A restarted and committed 10 since
	a.latencySumMs.Store(10 * 40)
	a.aborts.Store(0)
	c.Poll(context.Background())
	if dcA := c.State().DCs[0]; dcA.CommitLatencyMs == nil || *dcA.CommitLatencyMs != 40 || dcA.CommitsPerS <= 0 {
		t.Errorf("after A's restart: %+v", dcA)
	}
}
