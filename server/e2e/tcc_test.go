package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/tools/nemesis"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/workload"
)

// tccPartitions is the number of partitions of the test clusters.
const tccPartitions = 3

// startPartitioned brings up a one-datacenter cluster of protocol with tccPartitions partitions
// as real processes (node dc0-pP serves partition P) and stops it when the test ends. The nodes
// checkpoint every 16 KiB of input, so that the protocols that prune their stores delete records
// (and a killed node restores a pruned store) within the tests' seconds of load.
func startPartitioned(t *testing.T, protocolName string, params protocol.Params) (*cluster.Config, string) {
	t.Helper()
	bin := meridianBinary(t)
	dir := t.TempDir()
	topo, topoFile := oneDCTopology(t, dir)
	cfg := cluster.GeneratePartitioned(topo, topoFile, protocolName, dir, freeBasePort(t, tccPartitions), tccPartitions)
	cfg.Params = params
	cfg.CheckpointBytes = 16 << 10
	return bringUp(t, cfg, dir, bin), dir
}

// writeTopology writes the one-datacenter topology of the thesis's experiments.
func writeTopology(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "one-dc.json")
	if err := os.WriteFile(path, []byte(`{"name": "one-dc", "datacenters": ["dc0"], "rtt_ms": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// oneDCTopology writes the one-datacenter topology into dir (writeTopology) and returns it and
// its file, which cluster files name.
func oneDCTopology(t *testing.T, dir string) (*topology.Topology, string) {
	t.Helper()
	file := writeTopology(t, dir)
	topo, _, err := topology.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return topo, file
}

// tccLoad is a short, contended run: few keys per partition, many writes.
func tccLoad(duration time.Duration) bench.Options {
	opts := bench.TCCDefaults()
	opts.ClientsPerDC = 4
	w := workload.DefaultTCC()
	w.KeysPerPartition, w.WriteFraction, w.ValueBytes = 20, 0.3, 32
	opts.Workload = w
	opts.DurationUs, opts.WarmupUs, opts.CooldownUs = duration.Microseconds(), 0, 0
	opts.KeepHistory = true
	return opts
}

// TestTCCClusterKillPartition runs each partitioned protocol as a real three-partition cluster:
// a short load checked by the TCC checker, then a load during which one partition is killed
// with SIGKILL and restarted from its input log. No acknowledged write may be lost: every WOT
// reported committed is installed by its partitions, and the final reads at quiescence see the
// last version of every key (oracle C6). EC promises only eventual consistency: its causal
// anomalies are expected, its lost writes are not.
func TestTCCClusterKillPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clusters")
	}
	t.Parallel()
	for _, name := range []string{"ec", "fastccs", "eiger", "wren"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			entry, err := registry.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			// Short timeouts, so that transactions caught by the crash retry within the test.
			params := protocol.Params{"tx_timeout": "500ms"}
			cfg, dir := startPartitioned(t, name, params)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			opts := tccLoad(2 * time.Second)

			res, err := bench.RunCluster(ctx, opts, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkTCCRun(t, "before the crash", res, entry.Promises() == registry.Eventual)
			if m := res.TCC(); !entry.VisibleOnCommit && m.VisibilityMeasured == 0 {
				t.Errorf("no visibility lag measured on the cluster (%d WOTs)", m.WOTs)
			} else {
				t.Logf("visibility lag: %d measured, mean %.2f ms", m.VisibilityMeasured, m.VisibilityLag.Mean)
			}

			victim := cfg.Nodes[1].Name
			bin := meridianBinary(t)
			crash := make(chan error, 1)
			go func() {
				time.Sleep(time.Second)
				if err := cluster.Kill(dir, victim); err != nil {
					crash <- err
					return
				}
				time.Sleep(500 * time.Millisecond)
				crash <- cluster.StartNode(ctx, dir, bin, victim)
			}()
			opts.Seed = 2
			opts.DurationUs = (4 * time.Second).Microseconds()
			res, err = bench.RunCluster(ctx, opts, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-crash; err != nil {
				t.Fatalf("killing and restarting %s: %v", victim, err)
			}
			checkTCCRun(t, "across the crash of "+victim, res, entry.Promises() == registry.Eventual)
			logStoreDeletes(t, dir, cfg)
		})
	}
}

// TestTCCKillDuringCheckpoint kills a fastccs partition in the middle of writing checkpoints
// (killDuringCheckpoints) while garbage collection drops versions (a 500 ms transaction timeout
// on few keys), so that the killed checkpoints' batches hold store records written and deleted:
// no acknowledged write may be lost and the TCC checker must pass. MERIDIAN_LONG=1 only (a
// 20-second load).
func TestTCCKillDuringCheckpoint(t *testing.T) {
	if testing.Short() || os.Getenv("MERIDIAN_LONG") == "" {
		t.Skip("MERIDIAN_LONG=1: kills a real fastccs node during checkpoints")
	}
	t.Parallel()
	cfg, dir := startPartitioned(t, "fastccs", protocol.Params{"tx_timeout": "500ms"})
	res := killDuringCheckpoints(t, cfg, dir, cfg.Nodes[1].Name, tccLoad(20*time.Second))
	checkTCCRun(t, "across the kills", res, false)
	logStoreDeletes(t, dir, cfg)
}

// logStoreDeletes logs how many store records the checkpoints of cfg's nodes deleted
// (store_deleted: fastccs and eiger drop their collected versions, whose records the next
// checkpoint deletes; a loaded machine may not get that far in the test's seconds, so it is not
// required).
func logStoreDeletes(t *testing.T, dir string, cfg *cluster.Config) {
	t.Helper()
	deleted, checkpoints := 0, 0
	for _, nd := range cfg.Nodes {
		b, _ := os.ReadFile(filepath.Join(dir, "logs", nd.Name+".log"))
		for _, line := range strings.Split(string(b), "\n") {
			if _, rest, ok := strings.Cut(line, " store_deleted="); ok {
				n, _ := strconv.Atoi(strings.Fields(rest)[0])
				deleted += n
				checkpoints++
			}
		}
	}
	t.Logf("%d checkpoints deleted %d store records", checkpoints, deleted)
}

// checkTCCRun requires a run that did something, finished, read what it wrote, lost no
// acknowledged write and, unless eventual, passed the TCC checker.
func checkTCCRun(t *testing.T, what string, res *bench.Result, eventual bool) {
	t.Helper()
	m := res.TCC()
	t.Logf("%s: %d ROTs, %d WOTs, checker %s", what, m.ROTs, m.WOTs, res.Checker.Summary())
	if m.ROTs == 0 || m.WOTs == 0 {
		t.Errorf("%s: %d ROTs and %d WOTs finished; want both", what, m.ROTs, m.WOTs)
	}
	if res.Unfinished > 0 || m.ValueMismatches > 0 {
		t.Errorf("%s: %d transactions unfinished, %d reads whose value is not their version's", what, res.Unfinished, m.ValueMismatches)
	}
	for _, lost := range nemesis.LostCommits(res) {
		t.Errorf("%s: acknowledged commit lost: %s", what, lost)
	}
	expected := 0
	for _, a := range res.Checker.Anomalies {
		switch {
		case !eventual, a.Kind == checker.TCCVersionOrder, a.Kind == checker.TCCDirtyRead, a.Kind == checker.TCCMalformed:
			t.Errorf("%s: %v", what, a)
		default:
			expected++
		}
	}
	if expected > 0 {
		t.Logf("%s: %d causal anomalies, as eventual consistency allows", what, expected)
	}
}
