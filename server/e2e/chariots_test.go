package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
	"github.com/meridian-kv/meridian/topology"
)

// chariotsParams is the small deployment of the real-process tests: the default stage counts
// (two maintainers, one of every other stage per datacenter), ranges of 10 positions so both
// maintainers fill positions early, and stage periods long enough that 16 processes on two
// cores spend their time on appends rather than on idle timers (each fired timer is an input,
// logged and fsynced).
var chariotsParams = protocol.Params{"b": "10", "gossip": "5ms", "flush": "2ms", "hold": "2ms", "ship": "10ms", "row_every": "10ms"}

// startChariots brings up a two-datacenter Chariots cluster (20 ms apart), one process per
// stage machine, and stops it when the test ends.
func startChariots(t *testing.T) (*cluster.Config, string) {
	t.Helper()
	return startChariotsWith(t, chariotsParams)
}

// startChariotsWith is startChariots with the parameters params.
func startChariotsWith(t *testing.T, params protocol.Params) (*cluster.Config, string) {
	t.Helper()
	bin := meridianBinary(t)
	dir := t.TempDir()
	topoFile := filepath.Join(dir, "two-dc.json")
	if err := os.WriteFile(topoFile, []byte(`{"name": "two-dc", "datacenters": ["east", "west"], "rtt_ms": {"east": {"west": 20}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	topo, _, err := topology.Load(topoFile)
	if err != nil {
		t.Fatal(err)
	}
	e, err := registry.Lookup("chariots")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := e.Nodes(params, topo.N())
	if err != nil {
		t.Fatal(err)
	}
	roles, err := e.Roles(params, topo.N())
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.GenerateNamed(topo, topoFile, "chariots", dir, freeBasePort(t, len(nodes)), nodes, roles)
	cfg.Params = params
	cfg.CheckpointBytes = 2 << 10 // maintainers checkpoint (several times) before the kill
	return bringUp(t, cfg, dir, bin), dir
}

// acked is an acknowledged append.
type acked struct {
	dc       int
	body     string
	res      flstore.AppendResult
	beforeUs int64 // when it was acknowledged
}

// TestChariotsKillMaintainer runs Chariots as real processes over two datacenters: clients in
// both append while a maintainer of the first is killed with SIGKILL and restarted. Afterwards
// every acknowledged append must be in both datacenters' logs exactly once, at the position its
// acknowledgement named in its own datacenter's log, and the read-back logs must pass the
// Chariots checker (CH-I1 to CH-I3 and convergence: chariots.SnapshotOfLogs).
func TestChariotsKillMaintainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	start := time.Now()
	cfg, dir := startChariots(t)
	t.Logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := make([]*logclient.Client, len(cfg.Topology.DCs))
	for dc, name := range cfg.Topology.DCs {
		c, err := logclient.Dial(ctx, cfg, name, plaintext)
		if err != nil {
			t.Fatal(err)
		}
		c.SetCallTimeout(4 * time.Second)
		defer c.Close()
		clients[dc] = c
	}
	const victim = "east-maintainer1"
	const minAcksBeforeKill = 60
	ap := &appenders{}
	for dc, c := range clients {
		ap.start(ctx, dc, fmt.Sprintf("dc%d", dc), c)
	}
	// Kill once datacenter 0 has some acknowledged appends, enough that some fall in the
	// victim's ranges (a fixed second was too few appends on a loaded machine), or after 10 s.
	ap.await(0, minAcksBeforeKill, 10*time.Second)
	if err := cluster.Kill(dir, victim); err != nil {
		t.Fatal(err)
	}
	killedUs := time.Now().UnixMicro()
	time.Sleep(time.Second)
	if err := cluster.StartNode(ctx, dir, meridianBinary(t), victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	acks, fails := ap.finish()
	t.Logf("%d appends acknowledged, %d not (killed maintainer %s)", len(acks), fails, victim)
	perDC := make([]int, len(clients))
	for _, a := range acks {
		perDC[a.dc]++
	}
	for dc, n := range perDC {
		if n == 0 {
			t.Fatalf("no append of datacenter %d was acknowledged", dc)
		}
	}

	// Wait until every datacenter's log holds every acknowledged append, then check.
	logs, heads := awaitAcked(ctx, t, clients, acks, 15*time.Second)
	victimID, _, err := cfg.Node(victim)
	if err != nil {
		t.Fatal(err)
	}
	survived := 0 // acknowledged before the kill, held by the victim
	for _, a := range acks {
		if a.dc == 0 && a.beforeUs < killedUs && heads[0].Journal.Owner(a.res.LId) == protocol.NodeID(victimID) {
			survived++
		}
		at := logs[a.dc][a.res.LId-1]
		if string(at.Body) != a.body || at.TOId != a.res.TOId || at.Host != a.dc {
			t.Fatalf("append %q was acknowledged at position %d (TOId %d) of datacenter %d, which holds %q (host %d, TOId %d)",
				a.body, a.res.LId, a.res.TOId, a.dc, at.Body, at.Host, at.TOId)
		}
	}
	if survived == 0 {
		t.Fatalf("no append acknowledged before the kill was held by %s: the kill tested nothing", victim)
	}
	t.Logf("%d appends acknowledged by %s before its kill are in the logs", survived, victim)
	victimLog := &nodeLog{path: filepath.Join(dir, "logs", victim+".log")}
	if m := recoveredLine.FindAllString(victimLog.poll(t), -1); len(m) > 0 {
		t.Logf("%s: %s", victim, m[len(m)-1])
	}
	// Both logs up to the head hold the same records once the pipeline is idle: compare at
	// equal lengths (appends that were never acknowledged are there too, or nowhere).
	checkConverged(t, cfg, logs, heads)
	tagged, err := clients[1].ReadTag(ctx, "dc", flstore.Eq, []byte("0"), 5, true)
	if err != nil || len(tagged) == 0 {
		t.Fatalf("read by tag: %d records, %v", len(tagged), err)
	}
	t.Logf("logs of %d and %d records, checks passed", len(logs[0]), len(logs[1]))
	logCommands(t, cfg)
	typedLogRPCs(t, cfg)
}

// logCommands runs `meridian log append`, `read` and `tail` against the cluster cfg.
func logCommands(t *testing.T, cfg *cluster.Config) {
	out, errOut, code := runMeridian(t, "", "log", "append", "--cluster", cfg.Path, "--dc", "west", "--tag", "cli=yes", "hello from the CLI")
	if code != 0 || !strings.Contains(out, "appended at position") {
		t.Fatalf("log append: exit %d\n%s%s", code, out, errOut)
	}
	for try := 0; ; try++ { // indexers learn tags asynchronously
		out, errOut, code = runMeridian(t, "", "log", "read", "--cluster", cfg.Path, "--dc", "west", "--tag", "cli=yes")
		if code == 0 && strings.Contains(out, "west/") && strings.Contains(out, "hello from the CLI") {
			break
		}
		if try == 20 {
			t.Fatalf("log read --tag: exit %d\n%s%s", code, out, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errOut, code = runMeridian(t, "", "log", "tail", "--cluster", cfg.Path, "-n", "2")
	if code != 0 || !strings.Contains(out, "head of log of datacenter east") || strings.Count(out, "\n") != 3 {
		t.Fatalf("log tail: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = runMeridian(t, "", "log", "read", "--cluster", cfg.Path, "0-3"); code != 2 || !strings.Contains(errOut, "positions from 1") {
		t.Fatalf("log read 0-3: exit %d, stderr %q", code, errOut)
	}
}

// readLog reads a datacenter's whole log up to its head.
func readLog(ctx context.Context, c *logclient.Client) (flstore.HLResult, []*flstore.Record, error) {
	h, err := c.Head(ctx)
	if err != nil {
		return h, nil, err
	}
	recs, err := c.Read(ctx, 1, h.HL)
	if err != nil {
		return h, nil, err
	}
	if uint64(len(recs)) != h.HL {
		return h, nil, fmt.Errorf("read %d records up to head of log %d", len(recs), h.HL)
	}
	return h, recs, nil
}

// missingAcks names an acknowledged append not in recs, or returns "".
func missingAcks(acks []acked, recs []*flstore.Record) string {
	have := map[string]bool{}
	for _, r := range recs {
		have[string(r.Body)] = true
	}
	for _, a := range acks {
		if !have[a.body] {
			return fmt.Sprintf("acknowledged append %q missing", a.body)
		}
	}
	return ""
}

// awaitAcked reads the whole log of each datacenter through its client (clients[dc]) until every
// log holds every acknowledged append of acks, and returns the logs and heads of log; it fails t
// if they do not within timeout.
func awaitAcked(ctx context.Context, t *testing.T, clients []*logclient.Client, acks []acked, timeout time.Duration) ([][]*flstore.Record, []flstore.HLResult) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var logs [][]*flstore.Record
		var heads []flstore.HLResult
		missing := ""
		for dc, c := range clients {
			h, recs, err := readLog(ctx, c)
			if err != nil {
				missing = fmt.Sprintf("datacenter %d: %v", dc, err)
				break
			}
			logs, heads = append(logs, recs), append(heads, h)
			if m := missingAcks(acks, recs); m != "" {
				missing = fmt.Sprintf("datacenter %d (head of log %d): %s", dc, h.HL, m)
				break
			}
		}
		if missing == "" {
			return logs, heads
		}
		if time.Now().After(deadline) {
			t.Fatalf("the logs did not converge: %s", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkConverged runs checkLogs and, when both logs hold as many records, checks that they
// converged (appends never acknowledged may be in one datacenter's tail only otherwise).
func checkConverged(t *testing.T, cfg *cluster.Config, logs [][]*flstore.Record, heads []flstore.HLResult) {
	t.Helper()
	s := checkLogs(t, cfg, logs, heads)
	if len(logs[0]) != len(logs[1]) {
		t.Logf("logs of %d and %d records: convergence of the unacknowledged tail not checked", len(logs[0]), len(logs[1]))
		return
	}
	if err := chariots.CheckConverged(s); err != nil {
		t.Fatalf("convergence: %v", err)
	}
}

// checkLogs runs the Chariots checker (CH-I1..I3) on the read-back logs of the cluster cfg and
// returns the snapshot it checked.
func checkLogs(t *testing.T, cfg *cluster.Config, logs [][]*flstore.Record, heads []flstore.HLResult) chariots.Snapshot {
	t.Helper()
	layout, err := chariots.LayoutOf(cfg.Params, cfg.Topology.N())
	if err != nil {
		t.Fatal(err)
	}
	s, err := chariots.SnapshotOfLogs(layout, logs, heads)
	if err != nil {
		t.Fatal(err)
	}
	if err := chariots.NewChecker().Check(s); err != nil {
		t.Fatalf("checker: %v", err)
	}
	return s
}

// appenders runs closed-loop appending clients, each in its own goroutine, and records what
// they got acknowledged.
type appenders struct {
	mu    sync.Mutex
	acks  []acked
	fails int
	stop  chan struct{}
	wg    sync.WaitGroup
}

// start runs client c of datacenter dc until finish, appending bodies "NAME-i" tagged dc=DC.
func (a *appenders) start(ctx context.Context, dc int, name string, c *logclient.Client) {
	if a.stop == nil {
		a.stop = make(chan struct{})
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-a.stop:
				return
			default:
			}
			body := fmt.Sprintf("%s-%d", name, i)
			callCtx, done := context.WithTimeout(ctx, 5*time.Second)
			res, err := c.Append(callCtx, []byte(body), []flstore.Tag{{Name: "dc", Value: []byte(fmt.Sprint(dc))}}, nil)
			done()
			a.mu.Lock()
			if err != nil {
				a.fails++ // unacknowledged: it may or may not be in the log
			} else {
				a.acks = append(a.acks, acked{dc, body, res, time.Now().UnixMicro()})
			}
			a.mu.Unlock()
		}
	}()
}

// acked counts the acknowledged appends of datacenter dc so far.
func (a *appenders) acked(dc int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, ack := range a.acks {
		if ack.dc == dc {
			n++
		}
	}
	return n
}

// await waits until datacenter dc has n more acknowledged appends, or for within.
func (a *appenders) await(dc, n int, within time.Duration) {
	want := a.acked(dc) + n
	for deadline := time.Now().Add(within); time.Now().Before(deadline) && a.acked(dc) < want; {
		time.Sleep(50 * time.Millisecond)
	}
}

// finish stops the clients and returns the acknowledged appends and the count of the others.
func (a *appenders) finish() ([]acked, int) {
	close(a.stop)
	a.wg.Wait()
	return a.acks, a.fails
}
