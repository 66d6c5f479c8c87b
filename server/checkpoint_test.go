package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	_ "github.com/meridian-kv/meridian/protocols/all" // the tests name protocols
	"github.com/meridian-kv/meridian/server"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// nodeLog is a node's log file; slog's handlers serialize their writes.
type nodeLog struct{ path string }

func (l nodeLog) String() string {
	b, _ := os.ReadFile(l.path)
	return string(b)
}

// runLoggedNode runs node name of cfg in this process, logging to a file of the test's, until
// the returned function stops it.
func runLoggedNode(t *testing.T, cfg *cluster.Config, name string) (stop func(), log nodeLog) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	log = nodeLog{path: f.Name()}
	n, err := server.New(cfg, name, slog.New(slog.NewTextHandler(f, nil)), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("node %s: %v", name, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop, log
}

// checkpointLoad runs a short contended T-YCSB load against cfg and requires commits and a clean
// checker verdict (serializable, converged replicas, no acknowledged commit lost).
func checkpointLoad(t *testing.T, cfg *cluster.Config) {
	t.Helper()
	opts := bench.Defaults()
	opts.ClientsPerDC = 3
	opts.Workload = workload.TYCSB{Keys: 200, Distribution: workload.DistZipfian, Theta: 0.99, OpsPerTxn: 3, ReadRatio: 0.5}
	opts.DurationUs, opts.WarmupUs = 1_500_000, 0
	res, err := bench.RunCluster(context.Background(), opts, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checker.Committed == 0 || !res.Checker.OK {
		t.Fatalf("%d committed; checker: %s", res.Checker.Committed, res.Checker.Summary())
	}
}

// TestCheckpointRestart: with a tiny checkpoint_bytes a Helios node writes checkpoints all
// through a load and truncates its input log behind them; restarted, it loads the newest
// checkpoint, replays only the inputs after it, and serves a second load that the checker
// passes together with the first (the replicas converge: the restored one holds every version).
func TestCheckpointRestart(t *testing.T) {
	cfg := checkpointConfig(t)
	stop, logA := runLoggedNode(t, cfg, "A")
	for _, nd := range cfg.Nodes[1:] {
		runLoggedNode(t, cfg, nd.Name)
	}
	waitHealthy(t, cfg)
	checkpointLoad(t, cfg)
	stop()
	written := strings.Count(logA.String(), `msg="checkpoint written"`)
	if written == 0 {
		t.Fatalf("node A wrote no checkpoint during the load; its log:\n%s", logA.String())
	}
	first, kept := inputsKept(t, cfg.NodeDataDir(0))
	if first == 0 {
		t.Fatalf("the input log still starts at input 0 after %d checkpoints: nothing was truncated", written)
	}
	t.Logf("%d checkpoints; the log keeps %d inputs, from input %d on", written, kept, first)

	_, logA = runLoggedNode(t, cfg, "A")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logA.String(), `msg=recovered node=A checkpoint=true`) {
		if time.Now().After(deadline) {
			t.Fatalf("node A did not recover from its checkpoint; its log:\n%s", logA.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitHealthy(t, cfg)
	checkpointLoad(t, cfg)
}

// checkpointConfig is a three-datacenter Helios-0 cluster (table4.1, no WAN emulation) on free
// loopback ports, writing a checkpoint after every 16 KiB of input.
func checkpointConfig(t *testing.T) *cluster.Config {
	t.Helper()
	topo, _ := topology.Preset("table4.1")
	dir := t.TempDir()
	cfg := cluster.Generate(topo, "table4.1", "helios-0", dir, 1)
	cfg.WANEmulation = false
	cfg.CheckpointBytes = 16 << 10
	for i := range cfg.Nodes {
		nd := &cfg.Nodes[i]
		nd.PeerAddr, nd.ClientAddr, nd.MetricsAddr = freeAddr(t), freeAddr(t), freeAddr(t)
	}
	data, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = cluster.Parse(cfg.Path, data); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// inputsKept opens a stopped node's data directory and returns the sequence number of the first
// input its log keeps and how many it keeps (keys in/<8-byte big-endian sequence number>).
func inputsKept(t *testing.T, dir string) (first uint64, kept int) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	iter, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte("in/"), UpperBound: []byte("in0")})
	if err != nil {
		t.Fatal(err)
	}
	defer iter.Close()
	for iter.First(); iter.Valid(); iter.Next() {
		if kept == 0 {
			first = binary.BigEndian.Uint64(iter.Key()[len("in/"):])
		}
		kept++
	}
	return first, kept
}

// waitHealthy waits until every node of cfg answers /healthz with 200 OK.
func waitHealthy(t *testing.T, cfg *cluster.Config) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, nd := range cfg.Nodes {
		for {
			resp, err := http.Get("http://" + nd.MetricsAddr + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s is not healthy after 10 s: %v", nd.Name, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// quietPebble drops Pebble's informational lines (pebble.Logger).
type quietPebble struct{}

func (quietPebble) Infof(string, ...any) {}

func (quietPebble) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (quietPebble) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
