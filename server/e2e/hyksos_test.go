package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
	"github.com/meridian-kv/meridian/tools/logbench"
)

// TestHyksosKillMaintainer runs Hyksos (spec 6.1) on a real two-datacenter Chariots cluster:
// clients in both datacenters put, get and GET_TXN while a maintainer of the first is killed
// with SIGKILL and restarted. Every read must be the latest put up to its head of log in its
// datacenter's read-back log (CH-I9), every acknowledged put must be in every datacenter's log
// at the position and with the value acknowledged (logbench's Hyksos check), and the logs must
// pass the Chariots checker (CH-I1 to CH-I3; CH-I2 is the causal half of CH-I9). Then `meridian
// client` and `meridian bench --workload hyksos --cluster` run against the same cluster.
func TestHyksosKillMaintainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	cfg, dir := startChariots(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const victim = "east-maintainer1"
	type outcome struct {
		res logbench.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := logbench.Run(ctx, logbench.Options{Cluster: cfg, Clients: 2, Duration: 4 * time.Second, Timeout: 3 * time.Second,
			DialOpts: []grpc.DialOption{plaintext}, Hyksos: &logbench.Hyksos{Keys: 10, ReadRatio: 0.5, TxnKeys: 3}})
		done <- outcome{res, err}
	}()
	time.Sleep(time.Second)
	if err := cluster.Kill(dir, victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cluster.StartNode(ctx, dir, meridianBinary(t), victim); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.err != nil {
		t.Fatalf("hyksos run (killed %s): %v", victim, out.err)
	}
	hr := out.res.Hyksos
	t.Logf("%d puts, %d reads (%d failed during the kill); %d reads and %d puts checked", out.res.Appends, hr.Reads, out.res.Errors,
		hr.CheckedReads, hr.CheckedPuts)
	if hr.CheckedPuts == 0 || hr.CheckedReads == 0 {
		t.Fatalf("%d puts and %d reads checked: nothing tested", hr.CheckedPuts, hr.CheckedReads)
	}

	clients := make([]*logclient.Client, len(cfg.Topology.DCs))
	for dc, name := range cfg.Topology.DCs {
		c, err := logclient.Dial(ctx, cfg, name, plaintext)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[dc] = c
	}
	logs, heads := readLogs(ctx, t, clients)
	checkLogs(t, cfg, logs, heads)
	hyksosCommands(t, cfg)
}

// readLogs reads every datacenter's whole log through clients.
func readLogs(ctx context.Context, t *testing.T, clients []*logclient.Client) ([][]*chariots.Record, []flstore.HLResult) {
	t.Helper()
	var logs [][]*chariots.Record
	var heads []flstore.HLResult
	for dc, c := range clients {
		h, recs, err := readLog(ctx, c)
		if err != nil {
			t.Fatalf("datacenter %d: %v", dc, err)
		}
		logs, heads = append(logs, recs), append(heads, h)
	}
	return logs, heads
}

// hyksosCommands runs `meridian client` put, get and get-txn and a short `meridian bench
// --workload hyksos --cluster` against the Chariots cluster cfg.
func hyksosCommands(t *testing.T, cfg *cluster.Config) {
	out, errOut, code := runMeridian(t, "", "client", "--cluster", cfg.Path, "--dc", "west", "put", "colour", "blue")
	if code != 0 || !regexp.MustCompile(`^put colour at position \d+ of datacenter west \(TOId \d+\)\n$`).MatchString(out) {
		t.Fatalf("client put: exit %d\n%s%s", code, out, errOut)
	}
	for try := 0; ; try++ { // the put reaches east's log asynchronously
		out, errOut, code = runMeridian(t, "", "client", "--cluster", cfg.Path, "get-txn", "colour", "nothing")
		if code == 0 && strings.Contains(out, "colour = blue (position ") && strings.Contains(out, "nothing: no put") &&
			strings.HasPrefix(out, "snapshot: head of log ") {
			break
		}
		if try == 50 {
			t.Fatalf("client get-txn: exit %d\n%s%s", code, out, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errOut, code = runMeridian(t, "", "client", "--cluster", cfg.Path, "--dc", "west", "get", "colour")
	if code != 0 || !strings.HasPrefix(out, "colour = blue (position ") {
		t.Fatalf("client get: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = runMeridian(t, "", "client", "--cluster", cfg.Path, "put", "k"); code != 2 || !strings.Contains(errOut, "put takes a key and a value") {
		t.Fatalf("client put k: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code = runMeridian(t, "", "bench", "--workload", "hyksos", "--cluster", cfg.Path, "--clients-per-dc", "1", "--duration", "1s", "--keys", "5")
	if code != 0 || !strings.Contains(out, "reads checked (CH-I9)") {
		t.Fatalf("bench --workload hyksos --cluster: exit %d\n%s%s", code, out, errOut)
	}
	t.Log(strings.TrimSpace(out))
}
