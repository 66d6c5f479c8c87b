package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/meridian-kv/meridian/protocol/txn"
	_ "github.com/meridian-kv/meridian/protocols/all" // the tests name protocols
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

var (
	buildOnce   sync.Once
	meridianBin string
	buildErr    error
)

// meridianBinary builds cmd/meridian once per test run.
func meridianBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meridian-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		meridianBin = filepath.Join(dir, "meridian")
		out, err := exec.Command("go", "build", "-o", meridianBin, "github.com/meridian-kv/meridian/cmd/meridian").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return meridianBin
}

// reserved holds the ports freeBasePort handed out in this process: the tests run in parallel,
// and a range found free is not bound until its cluster starts.
var reserved struct {
	sync.Mutex
	ports map[int]bool
}

// freeBasePort finds a run of 3·nodes free loopback ports that no other test of this process
// was given.
func freeBasePort(t *testing.T, nodes int) int {
	t.Helper()
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.ports == nil {
		reserved.ports = map[int]bool{}
	}
	low := ephemeralLow()
	for range 50 {
		// Below the ephemeral range: a client connection's local port there could take a port of
		// a node that is restarting (bind: address already in use).
		base := 10000 + rand.IntN(max(low-10000-3*nodes, 1))
		ok := true
		for p := base; p < base+3*nodes && ok; p++ {
			if reserved.ports[p] {
				ok = false
				continue
			}
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			for p := base; p < base+3*nodes; p++ {
				reserved.ports[p] = true
			}
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range; 32768, Linux's default, if it cannot be read).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 10000 {
		return 32768
	}
	return low
}

// startCluster brings up a local cluster of protocol on topology preset topoName and stops it
// when the test ends.
func startCluster(t *testing.T, topoName, protocol string) (*cluster.Config, string) {
	t.Helper()
	return startClusterWith(t, topoName, protocol, nil)
}

// bringUp starts the cluster cfg in dir with the meridian binary bin, stops it when the test
// ends, and returns the cluster file as the nodes read it.
func bringUp(t *testing.T, cfg *cluster.Config, dir, bin string) *cluster.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cluster.Up(ctx, cfg, dir, bin, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Down(dir, io.Discard); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	loaded, err := cluster.Load(filepath.Join(dir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// plaintext is the transport security of the test clusters without TLS.
var plaintext = grpc.WithTransportCredentials(insecure.NewCredentials())

// workloadOptions is a short, contended T-YCSB run.
func workloadOptions(duration time.Duration) bench.Options {
	opts := bench.Defaults()
	opts.ClientsPerDC = 3
	opts.Workload = workload.TYCSB{Keys: 500, Distribution: workload.DistZipfian, Theta: 0.99, OpsPerTxn: 4, ReadRatio: 0.5}
	opts.DurationUs, opts.WarmupUs = duration.Microseconds(), 0
	return opts
}

// TestClusterEndToEnd starts a three-datacenter Helios-0 cluster (table4.1, emulated WAN) as
// real processes, runs a contended workload through the client library, and requires commits
// and a clean checker verdict (serializable, replicas converged).
func TestClusterEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	cfg, _ := startCluster(t, "table4.1", "helios-0")
	res, err := runShortWorkload(cfg)
	if err != nil {
		t.Fatal(err)
	}
	committed := 0
	for _, dc := range res.DCs {
		committed += dc.Committed
		t.Logf("%s: %d committed, mean %.1f ms (bound %.0f)", dc.Name, dc.Committed, dc.Latency.Mean, dc.LowerBoundMs)
	}
	if committed == 0 || !res.Checker.OK {
		t.Fatalf("%d committed; checker: %s", committed, res.Checker.Summary())
	}
}

// crashRounds is how often TestClusterCrashRestart kills a node; MERIDIAN_CRASH_ROUNDS raises
// it (the issue asks for at least 20 in the long variant).
func crashRounds(t *testing.T) int {
	if s := os.Getenv("MERIDIAN_CRASH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MERIDIAN_CRASH_ROUNDS=%q is not a positive number", s)
		}
		return n
	}
	return 3
}

// TestClusterCrashRestart kills one node with SIGKILL during load and restarts it, repeatedly.
// Every commit a client saw acknowledged must be installed at every replica afterwards (the
// checker's lost-commit check), the replicas must converge, and the history must be
// serializable. Helios-1 and Ogre on table4.1 keep committing updates while any node is down (a
// majority of the three datacenters is up).
func TestClusterCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	for _, proto := range []string{"helios-1", "ogre"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			crashRestart(t, proto)
		})
	}
}

// crashRestart is TestClusterCrashRestart for one protocol.
func crashRestart(t *testing.T, proto string) {
	cfg, dir := startCheckpointingCluster(t, "table4.1", proto)
	crashRestartCluster(t, cfg, dir, proto, []string{"C", "B", "A"}, crashRounds(t))
}

// crashRestartCluster runs the contended workload against the running cluster cfg in dir and
// kills (SIGKILL) and restarts rounds nodes, victims in turn, during it; it then requires the
// run to be clean (no acknowledged commit lost, replicas converged, serializable) and updates to
// commit at the other datacenters while each victim is down.
//
// The protocols tolerate one datacenter down at a time, so a round kills its victim only once
// the previous one is back: restarted (StartNode: recovered and healthy) and linked to every
// peer both ways (awaitRejoined). Without that wait, a survivor's dial backoff (which grew
// while the victim was down) could keep its link to the restarted node down past the next
// kill, leaving one datacenter cut off from both others (fixed in server/transport.go: a peer
// that connects is redialed at once); and the restarts' time, not counted in the workload's
// duration, could end the workload before the last outage (both seen under load, with no
// update committed in the last outage's window).
func crashRestartCluster(t *testing.T, cfg *cluster.Config, dir, proto string, victims []string, rounds int) {
	// While a node is down the others may need time before they commit without it, by the
	// protocols' default timeouts on table4.1 (largest RTT 40 ms): Helios-1 infers the dead
	// datacenter's log only up to the grace time GT (500 ms) before the others' progress, so its
	// commits take about GT plus an RTT; EPaxos recovers the dead leader's instances that block
	// execution after recover_after (2 × RTT + 200 ms = 280 ms) and a Prepare and an Accept
	// round; Multi-Paxos elects a new leader after its lease (3 × RTT + 100 ms = 220 ms) and a
	// phase 1; ALVIN fetches an unstable entry's decision after recover_after (2 × retry =
	// 200 ms) and recovers it as long again later. So an update counts as committed without the
	// victim if it started outageGrace (GT, the longest of these) after the crash and ended
	// before the restart. A survivor's client may also be held that long and more in a
	// transaction begun before: Ogre's coordinator waits for its timeout (2 × RTT + 1 s =
	// 1.08 s) when the other survivor voted no (a conflict with a transaction the dead node
	// coordinated) and only the dead node's vote could still make a majority (measured under
	// load, with the earlier 1.5 s outages: four of the six survivors' clients held 1.09 s from
	// early in the outage, the other two soon after, and no update committed for 0.86 s).
	// downFor covers outageGrace, that hold (heldFor) and one more transaction after it (an
	// RTT for Ogre; a Helios-1 update begun at outageGrace ends about GT + RTT later), 2 s.
	const outageGrace, heldFor = 500 * time.Millisecond, 1080 * time.Millisecond
	const downFor = outageGrace + heldFor + 420*time.Millisecond
	// upFor is how long the whole cluster runs between a node's rejoin and the next crash, for
	// the restarted node to catch up with what it missed.
	const upFor = 400 * time.Millisecond
	// rejoinAllowance is the time a restart and rejoin may take per round, on average, within
	// the workload's duration (measured on 2 cores: 0.25 s on average, at most 1.3 s, at a load
	// average of 30 to 40; 0.9 s on average, at most 2.5 s, over 158 restarts at 50 to 77); a
	// run whose restarts take longer fails saying so.
	const rejoinAllowance = time.Second
	duration := time.Duration(rounds)*(downFor+upFor+rejoinAllowance) + 2*time.Second
	opts := workloadOptions(duration)
	opts.KeepHistory = true
	wait := runInBackground(t, opts, cfg)
	loadEnds := time.Now().Add(duration - time.Second) // runInBackground returns a second in
	ctx := context.Background()
	type outage struct {
		node         string
		fromUs, toUs int64
	}
	var outages []outage
	for i := range rounds {
		time.Sleep(upFor)
		if left := time.Until(loadEnds); left < downFor+time.Second {
			// Still check the outages so far, and say why the rest did not happen.
			t.Errorf("round %d: the workload ends in %v, too soon for an outage: the restarts took more than %v each on average", i, left.Round(time.Millisecond), rejoinAllowance)
			break
		}
		victim := victims[i%len(victims)]
		if err := cluster.Kill(dir, victim); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		killedUs := time.Now().UnixMicro()
		time.Sleep(downFor)
		restart := time.Now()
		outages = append(outages, outage{victim, killedUs, restart.UnixMicro()})
		if err := cluster.StartNode(ctx, dir, meridianBinary(t), victim); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		healthy := time.Since(restart)
		awaitRejoined(t, cfg, victim, 20*time.Second)
		t.Logf("round %d: %s healthy %v and linked %v after its restart", i, victim, healthy.Round(time.Millisecond), time.Since(restart).Round(time.Millisecond))
	}
	res := wait()
	committed := committedClean(t, res)
	t.Logf("%d crash rounds, %d committed", rounds, committed)
	whileDown := 0
	for _, out := range outages {
		during := 0
		for _, tx := range res.History.Txns {
			// An update (read-only ones may commit locally), started after the crash (plus
			// outageGrace) and decided before the restart; the history's times count from the
			// run's origin.
			startUs, endUs := res.OriginUnixUs+tx.StartUs, res.OriginUnixUs+tx.EndUs
			if tx.Status == txn.Committed && len(tx.Writes) > 0 && tx.DC != out.node && startUs > out.fromUs+outageGrace.Microseconds() && endUs < out.toUs {
				during++
			}
		}
		t.Logf("%s outage of %s: %d updates in the window; %s", proto, out.node, during, outageGaps(res, out.node, out.fromUs, out.toUs))
		if during == 0 {
			t.Fatalf("%s committed no update at the surviving datacenters while %s was down:\n%s", proto, out.node, outageTimeline(res, out.node, out.fromUs, out.toUs))
		}
		whileDown += during
	}
	t.Logf("%d updates committed while a node was down", whileDown)
}

// runInBackground starts a run of opts against cfg and returns once it is past its first second
// (every client connected); the function it returns waits for the run's result and fails the
// test on an error.
func runInBackground(t *testing.T, opts bench.Options, cfg *cluster.Config) (wait func() *bench.Result) {
	t.Helper()
	type outcome struct {
		res *bench.Result
		err error
	}
	done := make(chan outcome, 1)
	running := make(chan struct{})
	var once sync.Once
	opts.Progress = func(string, int64, int64) { once.Do(func() { close(running) }) }
	go func() {
		res, err := bench.RunCluster(context.Background(), opts, cfg, nil)
		done <- outcome{res, err}
	}()
	select {
	case <-running:
	case o := <-done:
		t.Fatalf("the run ended before its first second: %v", o.err)
	}
	return func() *bench.Result {
		o := <-done
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.res
	}
}

// committedClean returns how many transactions res committed, and fails the test unless some
// did and the checker is clean.
func committedClean(t *testing.T, res *bench.Result) int {
	t.Helper()
	committed := 0
	for _, dc := range res.DCs {
		committed += dc.Committed
	}
	t.Logf("%d committed; checker: %s", committed, res.Checker.Summary())
	if committed == 0 || !res.Checker.OK {
		t.Fatalf("%d committed; checker: %s", committed, res.Checker.Summary())
	}
	return committed
}

// runShortWorkload runs three seconds of the contended workload against cfg.
func runShortWorkload(cfg *cluster.Config) (*bench.Result, error) {
	return bench.RunCluster(context.Background(), workloadOptions(3*time.Second), cfg, nil)
}

// outageTimeline describes what the surviving datacenters' clients did around an outage of
// node from fromUs to toUs (Unix µs): every transaction that ended after the crash or started
// before the restart, with its times in ms relative to the crash.
func outageTimeline(res *bench.Result, node string, fromUs, toUs int64) string {
	var b strings.Builder
	for _, tx := range res.History.Txns {
		startUs, endUs := res.OriginUnixUs+tx.StartUs, res.OriginUnixUs+tx.EndUs
		if tx.DC == node || endUs < fromUs-300_000 || startUs > toUs {
			continue
		}
		fmt.Fprintf(&b, "  %s %s start %+.0f end %+.0f writes %d %v %s\n", tx.DC, tx.Client,
			float64(startUs-fromUs)/1000, float64(endUs-fromUs)/1000, len(tx.Writes), tx.Status, tx.Reason)
	}
	fmt.Fprintf(&b, "  restart at %+.0f ms", float64(toUs-fromUs)/1000)
	return b.String()
}

// outageGaps summarizes the surviving datacenters' committed updates around an outage: when the
// first one after the crash ended, and the longest time without one between the crash and the
// restart (ms relative to the crash).
func outageGaps(res *bench.Result, node string, fromUs, toUs int64) string {
	var ends []int64
	for _, tx := range res.History.Txns {
		endUs := res.OriginUnixUs + tx.EndUs
		if tx.DC != node && tx.Status == txn.Committed && len(tx.Writes) > 0 && endUs > fromUs && endUs < toUs {
			ends = append(ends, endUs-fromUs)
		}
	}
	slices.Sort(ends)
	prev, gap, gapFrom := int64(0), int64(0), int64(0)
	for _, e := range append(ends, toUs-fromUs) {
		if e-prev > gap {
			gap, gapFrom = e-prev, prev
		}
		prev = e
	}
	first := "none"
	if len(ends) > 0 {
		first = fmt.Sprintf("%+.0f ms", float64(ends[0])/1000)
	}
	return fmt.Sprintf("first update committed after the crash at %s, longest gap %.0f ms from %+.0f ms, restart at %+.0f ms",
		first, float64(gap)/1000, float64(gapFrom)/1000, float64(toUs-fromUs)/1000)
}

// awaitRejoined waits until the restarted node has links to every peer both ways: its own dials
// connected (its /status), and every peer's dial to it connected (theirs). A received message
// is not required: in Multi-Paxos two followers never send each other anything. It fails the
// test after within.
func awaitRejoined(t *testing.T, cfg *cluster.Config, node string, within time.Duration) {
	t.Helper()
	probe, err := cluster.NewProber(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		linked := true
		for i, nd := range cfg.Nodes {
			ok, why := linkedTo(probe, i, nd.Name, node, len(cfg.Nodes))
			if !ok {
				linked, last = false, why
				break
			}
		}
		if linked {
			return
		}
	}
	t.Fatalf("node %s not linked to every peer both ways %v after its restart; last: %s", node, within, last)
}

// linkedTo reports whether node i (named name) has its dials connected: to every peer if it is
// the restarted node, else to the restarted node; why says what is missing.
func linkedTo(probe *cluster.Prober, i int, name, restarted string, nodes int) (ok bool, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	code, body, err := probe.Get(ctx, i, "/status", 1<<20)
	cancel()
	if err != nil || code != http.StatusOK {
		return false, fmt.Sprintf("node %s /status: %d %v", name, code, err)
	}
	var st struct {
		Peers []peerLink `json:"peers"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return false, fmt.Sprintf("node %s /status: %v", name, err)
	}
	if name == restarted && len(st.Peers) != nodes-1 {
		return false, fmt.Sprintf("node %s /status: %s", name, body)
	}
	for _, p := range st.Peers {
		if (name == restarted || p.Peer == restarted) && !p.Connected {
			return false, fmt.Sprintf("node %s /status: %s", name, body)
		}
	}
	return true, ""
}
