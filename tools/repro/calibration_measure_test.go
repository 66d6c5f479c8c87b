//go:build calibrate

package repro

// The measurement behind Calibrated (calibration.go). It is not part of the normal test run: it
// builds the meridian binary, starts real 3-node clusters on 127.0.0.1 and takes about three
// minutes. Run it with
//
//	go test -tags calibrate -run TestMeasureServiceCosts -v -timeout 20m ./repro/

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/fullrep/helios"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// calWindowS is the length of every measured phase, in seconds.
const calWindowS = 20

// nodeSample is one node's counters at one instant.
type nodeSample struct {
	cpuS       float64            // process_cpu_seconds_total
	commitReqs float64            // meridian_commits_total + meridian_aborts_total
	commits    float64            // meridian_commits_total
	sentMsgs   map[string]float64 // meridian_peer_messages_sent_total by peer
	sentBytes  map[string]float64 // meridian_peer_bytes_sent_total by peer
}

// phase is what each node did between two samples.
type phase struct {
	name                string
	seconds             float64
	cpuS                []float64 // the whole process
	loopShare           []float64 // of the CPU profile's samples, those under the event loop
	recvMsgs, recvKB    []float64
	commitReqs, getReqs []float64
}

type calCluster struct {
	cfg *cluster.Config
	dir string
}

func startCalCluster(t *testing.T, bin, interval string, basePort int) *calCluster {
	return startLocalCluster(t, bin, "table4.1", "helios-0", protocol.Params{"interval": interval}, basePort)
}

// startLocalCluster starts protocol proto with params on topology preset topo as a local cluster
// of the binary bin without WAN emulation or fsync, and stops it when the test ends.
func startLocalCluster(t *testing.T, bin, topoName, proto string, params protocol.Params, basePort int) *calCluster {
	t.Helper()
	topo, _ := topology.Preset(topoName)
	dir := t.TempDir()
	cfg := cluster.Generate(topo, topoName, proto, dir, basePort)
	cfg.WANEmulation = false
	cfg.Durability = cluster.DurabilityNone
	cfg.Params = params
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.Up(ctx, cfg, dir, bin, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Down(dir, io.Discard) })
	parsed, err := cluster.Load(filepath.Join(dir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // let start-up work (log opening, first connections) finish
	return &calCluster{cfg: parsed, dir: dir}
}

func (c *calCluster) sample(t *testing.T) []nodeSample {
	t.Helper()
	out := make([]nodeSample, len(c.cfg.Nodes))
	for i, nd := range c.cfg.Nodes {
		resp, err := http.Get("http://" + nd.MetricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		s := nodeSample{sentMsgs: map[string]float64{}, sentBytes: map[string]float64{}}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			sp := strings.LastIndexByte(line, ' ')
			if sp < 0 {
				continue
			}
			v, err := strconv.ParseFloat(line[sp+1:], 64)
			if err != nil {
				continue
			}
			name, labels := line[:sp], ""
			if b := strings.IndexByte(name, '{'); b >= 0 {
				name, labels = name[:b], name[b:]
			}
			peer := ""
			if _, rest, ok := strings.Cut(labels, `peer="`); ok {
				peer, _, _ = strings.Cut(rest, `"`)
			}
			switch name {
			case "process_cpu_seconds_total":
				s.cpuS = v
			case "meridian_commits_total", "meridian_aborts_total":
				s.commitReqs += v
				if name == "meridian_commits_total" {
					s.commits += v
				}
			case "meridian_peer_messages_sent_total":
				s.sentMsgs[peer] = v
			case "meridian_peer_bytes_sent_total":
				s.sentBytes[peer] = v
			}
		}
		resp.Body.Close()
		out[i] = s
	}
	return out
}

// profile starts a CPU profile of every node for seconds and returns a function that waits for
// them and gives each node's share of samples under the event loop, server.(*Node).run.
func (c *calCluster) profile(t *testing.T, seconds int) func() []float64 {
	shares := make([]float64, len(c.cfg.Nodes))
	errs := make(chan error, len(c.cfg.Nodes))
	for i, nd := range c.cfg.Nodes {
		go func() {
			share, err := loopShare(t.TempDir(), nd.MetricsAddr, seconds)
			shares[i] = share
			errs <- err
		}()
	}
	return func() []float64 {
		for range c.cfg.Nodes {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		return shares
	}
}

func loopShare(dir, addr string, seconds int) (float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	path := filepath.Join(dir, "cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return 0, err
	}
	f.Close()
	out, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=100000", path).Output()
	if err != nil {
		return 0, fmt.Errorf("go tool pprof: %w", err)
	}
	var total, loop time.Duration
	for _, line := range strings.Split(string(out), "\n") {
		if _, rest, ok := strings.Cut(line, "% of "); ok && strings.HasSuffix(line, " total") {
			total, _ = time.ParseDuration(strings.TrimSuffix(rest, " total"))
		}
		fields := strings.Fields(line)
		if len(fields) == 6 && fields[5] == "github.com/meridian-kv/meridian/server.(*Node).run" {
			loop, _ = time.ParseDuration(fields[3])
		}
	}
	if total == 0 {
		return 0, fmt.Errorf("no samples in the profile of %s:\n%s", addr, out)
	}
	return float64(loop) / float64(total), nil
}

func (c *calCluster) diff(name string, a, b []nodeSample, seconds, getsPerCommit float64, shares []float64) phase {
	n := len(c.cfg.Nodes)
	p := phase{name: name, seconds: seconds, cpuS: make([]float64, n), loopShare: shares, recvMsgs: make([]float64, n),
		recvKB: make([]float64, n), commitReqs: make([]float64, n), getReqs: make([]float64, n)}
	for i, nd := range c.cfg.Nodes {
		p.cpuS[i] = b[i].cpuS - a[i].cpuS
		p.commitReqs[i] = b[i].commitReqs - a[i].commitReqs
		p.getReqs[i] = getsPerCommit * p.commitReqs[i]
		for j := range c.cfg.Nodes {
			if j != i {
				p.recvMsgs[i] += b[j].sentMsgs[nd.Name] - a[j].sentMsgs[nd.Name]
				p.recvKB[i] += (b[j].sentBytes[nd.Name] - a[j].sentBytes[nd.Name]) / 1024
			}
		}
	}
	return p
}

func (c *calCluster) idle(t *testing.T, name string) phase {
	a := c.sample(t)
	start := time.Now()
	wait := c.profile(t, calWindowS-1)
	time.Sleep(calWindowS * time.Second)
	b := c.sample(t)
	return c.diff(name, a, b, time.Since(start).Seconds(), 0, wait())
}

// load runs closed-loop clients against the cluster and measures the window from the second
// second of the run to its end (the bench reads every node's versions before and after the run:
// that work stays outside the window).
func (c *calCluster) load(t *testing.T, name string, readRatio float64, clientsPerDC int, clientDCs []string) phase {
	opts := bench.Defaults()
	opts.ClientsPerDC = clientsPerDC
	opts.ClientDCs = clientDCs
	opts.Workload = workload.TYCSB{Keys: 100_000, Distribution: workload.DistUniform, OpsPerTxn: 5, ReadRatio: readRatio}
	opts.DurationUs = (calWindowS + 2) * 1_000_000
	opts.WarmupUs = 0
	var a, b []nodeSample
	var startAt, endAt time.Time
	var wait func() []float64
	opts.Progress = func(_ string, elapsedUs, totalUs int64) {
		switch elapsedUs {
		case 2_000_000:
			a, startAt = c.sample(t), time.Now()
			wait = c.profile(t, calWindowS-1)
		case totalUs:
			b, endAt = c.sample(t), time.Now()
		}
	}
	res, err := bench.RunCluster(context.Background(), opts, c.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK {
		t.Fatalf("%s: checker: %s", name, res.Checker.Summary())
	}
	if b == nil {
		t.Fatalf("%s: no final sample", name)
	}
	return c.diff(name, a, b, endAt.Sub(startAt).Seconds(), float64(opts.Workload.(workload.TYCSB).OpsPerTxn)*readRatio, wait())
}

// costs are per-input CPU costs in seconds: the service-time model plus a per-node base load.
type costs struct{ base, perMsg, perKB, perReq, perCommit float64 }

func (k costs) predict(p phase, i int) float64 {
	return k.base*p.seconds + k.perMsg*p.recvMsgs[i] + k.perKB*p.recvKB[i] +
		k.perReq*(p.commitReqs[i]+p.getReqs[i]) + k.perCommit*p.commitReqs[i]
}

// fit solves for costs by least squares over every node of every phase, each observation
// weighted by 1/measured so that idle and loaded phases count alike (relative residuals). A cost
// that comes out negative (not distinguishable from zero) is fixed at 0 and the rest refitted.
func fit(phases []phase, measured func(p phase, i int) float64) costs {
	const n = 5
	use := [n]bool{true, true, true, true, true}
	for {
		x := solve(phases, measured, use)
		neg := false
		for j := range n {
			if use[j] && x[j] < 0 {
				use[j], neg = false, true
			}
		}
		if !neg {
			return costs{x[0], x[1], x[2], x[3], x[4]}
		}
	}
}

func solve(phases []phase, measured func(p phase, i int) float64, use [5]bool) [5]float64 {
	var cols []int
	for j, u := range use {
		if u {
			cols = append(cols, j)
		}
	}
	n := len(cols)
	ata := make([][]float64, n)
	for a := range ata {
		ata[a] = make([]float64, n+1)
	}
	for _, p := range phases {
		for i := range p.cpuS {
			y := measured(p, i)
			full := [5]float64{p.seconds, p.recvMsgs[i], p.recvKB[i], p.commitReqs[i] + p.getReqs[i], p.commitReqs[i]}
			for a, ca := range cols {
				for b, cb := range cols {
					ata[a][b] += full[ca] * full[cb] / (y * y)
				}
				ata[a][n] += full[ca] / y
			}
		}
	}
	// Gauss-Jordan elimination with partial pivoting.
	for col := range n {
		pivot := col
		for r := col + 1; r < n; r++ {
			if math.Abs(ata[r][col]) > math.Abs(ata[pivot][col]) {
				pivot = r
			}
		}
		ata[col], ata[pivot] = ata[pivot], ata[col]
		for r := range n {
			if r != col {
				f := ata[r][col] / ata[col][col]
				for k := col; k <= n; k++ {
					ata[r][k] -= f * ata[col][k]
				}
			}
		}
	}
	var x [5]float64
	for r, c := range cols {
		x[c] = ata[r][n] / ata[r][r]
	}
	return x
}

// buildMeridian builds the meridian binary into a temporary directory and returns its path.
func buildMeridian(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "meridian")
	build := exec.Command("go", "build", "-o", bin, "github.com/meridian-kv/meridian/cmd/meridian")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestMeasureServiceCosts(t *testing.T) {
	bin := buildMeridian(t)

	fast := startCalCluster(t, bin, "1ms", 7450)
	idleFast := fast.idle(t, "idle, interval 1ms")
	_ = cluster.Down(fast.dir, io.Discard)

	c := startCalCluster(t, bin, "10ms", 7460)
	phases := []phase{
		idleFast,
		c.idle(t, "idle, interval 10ms"),
		c.load(t, "write-only, 4 clients at A", 0, 4, []string{"A"}),
		c.load(t, "read-only, 4 clients at A", 1, 4, []string{"A"}),
		c.load(t, "50% reads, 2 clients per DC", 0.5, 2, nil),
	}
	holdout := c.load(t, "20% reads, 4 clients per DC", 0.2, 4, nil)

	for _, p := range append(phases, holdout) {
		t.Logf("%-28s %5.1fs", p.name, p.seconds)
		for i, nd := range c.cfg.Nodes {
			t.Logf("    %s: cpu %6.3fs (event loop %4.1f%%)  received %7.0f msgs %8.1f KiB  commit requests %6.0f  gets %6.0f",
				nd.Name, p.cpuS[i], 100*p.loopShare[i], p.recvMsgs[i], p.recvKB[i], p.commitReqs[i], p.getReqs[i])
		}
	}
	process := func(p phase, i int) float64 { return p.cpuS[i] }
	loop := func(p phase, i int) float64 { return p.cpuS[i] * p.loopShare[i] }
	for _, m := range []struct {
		name     string
		measured func(p phase, i int) float64
	}{{"whole process", process}, {"event loop", loop}} {
		k := fit(phases, m.measured)
		t.Logf("%s: base %.0f µs/s per node; per message %.1f µs; per KiB received %.1f µs; per request %.1f µs; extra per commit %.1f µs",
			m.name, k.base*1e6, k.perMsg*1e6, k.perKB*1e6, k.perReq*1e6, k.perCommit*1e6)
		for _, p := range append(phases, holdout) {
			var errs []string
			for i, nd := range c.cfg.Nodes {
				errs = append(errs, fmt.Sprintf("%s %.2fs vs %.2fs (%+.0f%%)", nd.Name, m.measured(p, i), k.predict(p, i),
					100*(k.predict(p, i)/m.measured(p, i)-1)))
			}
			t.Logf("    %-28s measured vs fitted: %s", p.name, strings.Join(errs, ", "))
		}
		ratio := wirePerEstimatedByte(t)
		t.Logf("encoded bytes per SizeBytes byte of Helios records: %.3f", ratio)
		fmt.Printf("%s: sim.Service{PerMessageUs: %.0f, PerKBUs: %.0f, PerRequestUs: %.0f, PerCommitUs: %.0f}\n",
			m.name, k.perMsg*1e6, k.perKB*ratio*1e6, k.perReq*1e6, k.perCommit*1e6)
	}
}

// wirePerEstimatedByte converts the measured cost per KiB on the wire into the simulator's unit,
// a KiB of protocol.Message.SizeBytes (an estimate: fixed-width fields where the codec writes
// varints): the ratio of encoded to estimated bytes for the records of a Helios message full of
// the calibration workload's transactions (5 operations, keys and values as the bench writes
// them), the table left out.
func wirePerEstimatedByte(t *testing.T) float64 {
	entry, err := registry.Lookup("helios-0")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := workload.NewGenerator(workload.TYCSB{Keys: 100_000, Distribution: workload.DistUniform, OpsPerTxn: 5, ReadRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	size := func(m *helios.Message) (wire, estimate int) {
		b, err := entry.Codec.Append(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		return len(b), m.SizeBytes()
	}
	m := &helios.Message{From: 0, SendTS: time.Now().UnixMicro(), Table: make([]int64, 9)}
	emptyWire, emptyEstimate := size(m)
	for i := range 100 {
		id := txn.ID(uint64(time.Now().UnixMicro())<<20 | uint64(i))
		tx := &txn.Txn{ID: id}
		for _, op := range gen.Next(rng).Ops {
			if op.Read {
				tx.Reads = append(tx.Reads, txn.Read{Key: op.Key, Version: id - 1000})
			} else {
				tx.Writes = append(tx.Writes, txn.Write{Key: op.Key, Value: []byte(id.String())})
			}
		}
		ts := time.Now().UnixMicro() + int64(i)
		m.Records = append(m.Records,
			rlog.Record[helios.Entry]{TS: ts, Host: 0, Payload: helios.Entry{Kind: helios.Preparing, Txn: tx}},
			rlog.Record[helios.Entry]{TS: ts + 10, Host: 0, Payload: helios.Entry{Kind: helios.Finished, Of: id, Committed: true, Txn: tx}})
	}
	fullWire, fullEstimate := size(m)
	return float64(fullWire-emptyWire) / float64(fullEstimate-emptyEstimate)
}
