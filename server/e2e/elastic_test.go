package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
)

// splitLine is the line of `meridian cluster add --stage filter` that gives the split.
var splitLine = regexp.MustCompile(`takes the even TOIds of (\S+)'s records from TOId (\d+)`)

// TestChariotsElasticity is live elasticity on real processes (spec 5.12, CH-S10): a
// two-datacenter Chariots cluster deployed with a spare of every stage that can join (idle, not
// started), clients appending in both datacenters, and `meridian cluster add` starting a
// maintainer, a batcher, a queue and a filter (which splits the other datacenter's records
// with the first filter) in the first datacenter while the appends run; a client then appends
// through the new batcher. Afterwards every acknowledged append must be in both logs exactly
// once, where its acknowledgement said, the logs must pass the Chariots checker and converge,
// and the new maintainer's epoch must hold acknowledged appends; reads by tag must still work
// after the indexer is killed and restarted. MERIDIAN_LONG=1 adds the
// stages in both datacenters and runs the appends longer.
func TestChariotsElasticity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	long := os.Getenv("MERIDIAN_LONG") != ""
	params := maps.Clone(chariotsParams)
	for _, r := range chariots.Elastic {
		params["spare_"+r.String()] = "1"
	}
	start := time.Now()
	cfg, dir := startChariotsWith(t, params)
	t.Logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var clients []*logclient.Client
	type split struct {
		dc, host int
		from     uint64
	}
	var splits []split
	ap := &appenders{}
	dial := func(dc int, via string) *logclient.Client {
		c, err := logclient.DialVia(ctx, cfg, cfg.Topology.DCs[dc], via, plaintext)
		if err != nil {
			t.Fatal(err)
		}
		c.SetCallTimeout(4 * time.Second)
		t.Cleanup(func() { c.Close() })
		return c
	}
	for dc := range cfg.Topology.DCs {
		clients = append(clients, dial(dc, ""))
		ap.start(ctx, dc, fmt.Sprintf("dc%d", dc), clients[dc])
	}
	joinIn := []string{"east"}
	if long {
		joinIn = append(joinIn, "west")
	}
	between := 20 // acknowledged appends of the datacenter between two stages joining
	if long {
		between = 300
	}
	ap.await(0, between, 10*time.Second)
	for _, dc := range joinIn {
		d, _ := cfg.Topology.Index(dc)
		for _, stage := range []string{"maintainer", "batcher", "queue", "filter"} {
			joinStart := time.Now()
			out, errOut, code := runMeridian(t, "", "cluster", "add", "--dir", dir, "--stage", stage, "--dc", dc, "--split-ahead", "20")
			if code != 0 || !strings.Contains(out, "joined datacenter "+dc) {
				t.Fatalf("cluster add --stage %s --dc %s: exit %d\n%s%s", stage, dc, code, out, errOut)
			}
			if m := splitLine.FindStringSubmatch(out); m != nil {
				from, _ := strconv.ParseUint(m[2], 10, 64)
				h, _ := cfg.Topology.Index(m[1])
				splits = append(splits, split{dc: d, host: h, from: from})
			}
			t.Logf("%s (%s)", strings.TrimSpace(out), time.Since(joinStart).Round(time.Millisecond))
			if stage == "batcher" {
				ap.start(ctx, d, dc+"-via-new-batcher", dial(d, dc+"-spare-batcher1"))
			}
			ap.await(d, between, 10*time.Second)
		}
	}
	if _, errOut, code := runMeridian(t, "", "cluster", "add", "--dir", dir, "--stage", "maintainer", "--dc", "east"); code != 2 || !strings.Contains(errOut, "no spare maintainer left") {
		t.Fatalf("a second maintainer with one spare deployed: exit %d, stderr %q", code, errOut)
	}
	run := 1500 * time.Millisecond
	if long {
		run = 10 * time.Second
	}
	time.Sleep(run)
	acks, fails := ap.finish()
	t.Logf("%d appends acknowledged, %d not", len(acks), fails)
	added, err := cluster.Added(dir)
	if err != nil || len(added) != 4*len(joinIn) {
		t.Fatalf("joined spares %v (%v), want %d", added, err, 4*len(joinIn))
	}

	logs, heads := awaitAcked(ctx, t, clients, acks, 20*time.Second)
	byBody := map[string]int{}
	for _, a := range acks {
		at := logs[a.dc][a.res.LId-1]
		if string(at.Body) != a.body || at.TOId != a.res.TOId || at.Host != a.dc {
			t.Fatalf("append %q was acknowledged at position %d (TOId %d) of datacenter %d, which holds %q (host %d, TOId %d)",
				a.body, a.res.LId, a.res.TOId, a.dc, at.Body, at.Host, at.TOId)
		}
	}
	for dc, log := range logs {
		for _, r := range log {
			byBody[fmt.Sprintf("%d/%s", dc, r.Body)]++
		}
	}
	for k, n := range byBody {
		if n > 1 {
			t.Fatalf("datacenter/body %s is %d times in the log", k, n)
		}
	}
	for _, dc := range joinIn {
		d, _ := cfg.Topology.Index(dc)
		b, _, err := cfg.Node(dc + "-spare-batcher1")
		if err != nil {
			t.Fatal(err)
		}
		viaNew := 0
		for _, r := range logs[d] {
			if r.Host == d && r.Via == protocol.NodeID(b) {
				viaNew++
			}
		}
		if viaNew == 0 {
			t.Fatalf("datacenter %s logged no append through the new batcher", dc)
		}
		t.Logf("datacenter %s: %d appends through the new batcher", dc, viaNew)
	}
	// The old filter drops the records of the new one's class past the boundary: those logged
	// came through the new filter.
	if len(splits) != len(joinIn) {
		t.Fatalf("splits announced: %+v", splits)
	}
	for _, sp := range splits {
		through := 0
		for _, r := range logs[sp.dc] {
			if r.Host == sp.host && r.TOId >= sp.from && r.TOId%2 == 0 {
				through++
			}
		}
		if through == 0 {
			t.Fatalf("datacenter %d logged no record of datacenter %d through the new filter (even TOIds from %d)", sp.dc, sp.host, sp.from)
		}
		t.Logf("datacenter %d: %d records of datacenter %d through the new filter (even TOIds from %d)", sp.dc, through, sp.host, sp.from)
	}
	for _, dc := range joinIn {
		d, _ := cfg.Topology.Index(dc)
		j := heads[d].Journal
		newM, _, err := cfg.Node(dc + "-spare-maintainer2")
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, a := range acks {
			if a.dc == d && j.Owner(a.res.LId) == protocol.NodeID(newM) {
				held++
			}
		}
		if len(j) < 2 || held == 0 {
			t.Fatalf("datacenter %s: journal %+v, %d acknowledged appends at the new maintainer", dc, j, held)
		}
		t.Logf("datacenter %s: journal of %d epochs, %d acknowledged appends at the new maintainer", dc, len(j), held)
	}
	checkConverged(t, cfg, logs, heads)
	// The indexer's posting lists are on its Disk: after a kill -9 and a restart, a read by tag
	// (from a client that dials now, which knows the joined batcher) still finds the
	// datacenter's last appends.
	const indexer = "east-indexer0"
	if err := cluster.Kill(dir, indexer); err != nil {
		t.Fatal(err)
	}
	if err := cluster.StartNode(ctx, dir, meridianBinary(t), indexer); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range slices.Backward(logs[0]) {
		if r.Host == 0 && len(want) < 5 {
			want = append(want, string(r.Body))
		}
	}
	c := dial(0, "")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		recs, err := c.ReadTag(ctx, "dc", flstore.Eq, []byte("0"), 5, true)
		var got []string
		for _, r := range recs {
			got = append(got, string(r.Body))
		}
		if err == nil && slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read by tag after %s restarted: %q, %v; want %q", indexer, got, err, want)
		}
	}
	t.Logf("logs of %d and %d records, checks passed (%s)", len(logs[0]), len(logs[1]), filepath.Base(dir))
}
