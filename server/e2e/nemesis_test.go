package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/nemesis"
	"github.com/meridian-kv/meridian/topology"
)

// TestNemesis runs a load against a real cluster while the nemesis kills and restarts a node,
// pauses another, cuts a link and skews a clock, then requires a clean checker verdict, commits
// throughout, every action taken, and no acknowledged commit lost. Helios-1 by default;
// MERIDIAN_LONG=1 adds mf, rc, 2pc-paxos and fastccs.
func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	protocols := []string{"helios-1"}
	if os.Getenv("MERIDIAN_LONG") != "" {
		protocols = append(protocols, "mf", "rc", "2pc-paxos", "fastccs")
	}
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) { runNemesis(t, proto) })
	}
}

func runNemesis(t *testing.T, proto string) {
	bin := meridianBinary(t)
	dir := t.TempDir()
	var cfg *cluster.Config
	if proto == "fastccs" {
		topo, topoFile := oneDCTopology(t, dir)
		cfg = cluster.GeneratePartitioned(topo, topoFile, proto, dir, freeBasePort(t, tccPartitions), tccPartitions)
	} else {
		topo, _ := topology.Preset("table4.1")
		cfg = cluster.Generate(topo, "table4.1", proto, dir, freeBasePort(t, topo.N()))
	}
	cfg.Admin = true
	cfg = bringUp(t, cfg, dir, bin)
	n := cfg.Nodes
	schedule := fmt.Sprintf("kill:%s@1s-2500ms,pause:%s@3s-3800ms,cut:%s-%s@4s-5s,skew:%s+150ms@1s-5500ms",
		n[2].Name, n[1].Name, n[0].Name, n[1].Name, n[0].Name)
	opts := workloadOptions(7 * time.Second)
	if proto == "fastccs" {
		opts = tccLoad(7 * time.Second)
	}
	faults, err := nemesis.ParseSchedule(schedule, cfg, opts.DurationUs)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	report, err := nemesis.Run(context.Background(), nemesis.Options{Cluster: cfg, Binary: bin, Bench: opts, Faults: faults, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\nchecker: %s", log.String(), report.Result.Checker.Summary())
	if err := report.Problem(); err != nil {
		t.Fatalf("%v\nlogs in %s", err, filepath.Join(dir, "logs"))
	}
	if len(report.Injected) != 2*len(faults) || report.Result.Checker.Committed == 0 {
		t.Fatalf("%d of %d actions taken, %d committed", len(report.Injected), 2*len(faults), report.Result.Checker.Committed)
	}
}

// TestNemesisRefusesAdminlessCuts: without the admin endpoints, a schedule with a cut is
// refused before the run, and a schedule that outlasts the run is refused when parsed.
func TestNemesisRefusesAdminlessCuts(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	cfg := cluster.Generate(topo, "table4.1", "helios-1", t.TempDir(), 7100)
	faults, err := nemesis.ParseSchedule("cut:A-B@1s-2s", cfg, 5_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nemesis.Run(context.Background(), nemesis.Options{Cluster: cfg, Faults: faults}); err == nil || !strings.Contains(err.Error(), "--admin") {
		t.Errorf("cut without admin endpoints: %v", err)
	}
	for _, bad := range []string{"kill:A@1s-6s", "kill:Z@1s-2s", "cut:A-A@1s-2s", "skew:A@1s-2s", "boom:A@1s-2s", "kill:A@2s-1s", "kill:A"} {
		if _, err := nemesis.ParseSchedule(bad, cfg, 5_000_000); err == nil {
			t.Errorf("schedule %q accepted", bad)
		}
	}
}
