package e2e

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/tools/dashboard"
)

// TestDashboard serves the dashboard of a real cluster under load and opens it in headless
// Chromium: every datacenter's row must show a commit latency, its lower bound and a non-zero
// throughput, and every link must be connected. It is skipped where Chromium is not installed
// (.ci/run installs it).
func TestDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	cfg, _ := startCluster(t, "table4.1", "helios-0")
	c, err := dashboard.NewCollector(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, 500*time.Millisecond)
	srv := httptest.NewServer(dashboard.Handler(c))
	defer srv.Close()
	load := make(chan error, 1)
	go func() {
		// Longer than the test needs: it is cancelled once the page is read.
		_, err := bench.RunCluster(ctx, workloadOptions(60*time.Second), cfg, nil)
		load <- err
	}()
	time.Sleep(3 * time.Second) // a few intervals under load
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--virtual-time-budget=3000", "--dump-dom", srv.URL+"/").Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	rows := regexp.MustCompile(`<tr data-dc="(\w+)"><td>\w+</td><td class="latency">([0-9.]+)</td><td>([0-9.]+)</td>.*?<td class="tps">([0-9.]+)</td>`).FindAllStringSubmatch(dom, -1)
	if len(rows) != len(cfg.Topology.DCs) {
		t.Fatalf("%d datacenter rows rendered, want %d:\n%s", len(rows), len(cfg.Topology.DCs), dom)
	}
	for _, r := range rows {
		latency, _ := strconv.ParseFloat(r[2], 64)
		bound, _ := strconv.ParseFloat(r[3], 64)
		tps, _ := strconv.ParseFloat(r[4], 64)
		t.Logf("%s: commit %.1f ms (bound %.1f), %.1f commits/s", r[1], latency, bound, tps)
		if latency <= 0 || bound <= 0 || tps <= 0 {
			t.Errorf("datacenter %s renders latency %s, bound %s, throughput %s", r[1], r[2], r[3], r[4])
		}
	}
	if links := regexp.MustCompile(`class="ok">connected<`).FindAllString(dom, -1); len(links) != 6 {
		t.Errorf("%d connected links rendered, want 6", len(links))
	}
	cancel()
	if err := <-load; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
}
