package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/topology"
)

// fakeNodeDir holds fakeNodeBinary, testdata/fakenode built by the first test that needs it.
var fakeNodeDir, fakeNodeBinary string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "fakenode")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeNodeDir = tmp
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// buildFakeNode builds testdata/fakenode (once per test binary) and returns its path.
func buildFakeNode(t *testing.T) string {
	t.Helper()
	if fakeNodeBinary != "" {
		return fakeNodeBinary
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build testdata/fakenode")
	}
	bin := filepath.Join(fakeNodeDir, "fakenode")
	if out, err := exec.Command(goTool, "build", "-o", bin, "./testdata/fakenode").CombinedOutput(); err != nil {
		t.Fatalf("building fakenode: %v\n%s", err, out)
	}
	_ = exec.Command(bin).Run() // the first run of a fresh binary can be slow: not in a test's timing
	fakeNodeBinary = bin
	return bin
}

// localCluster returns a table4.1 cluster in a fresh directory with free loopback ports.
func localCluster(t *testing.T) (*Config, string) {
	t.Helper()
	dir := t.TempDir()
	topo, _ := topology.Preset("table4.1")
	c := Generate(topo, "table4.1", "helios-0", dir, 1)
	var ls []net.Listener
	addr := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		return l.Addr().String()
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.PeerAddr, n.ClientAddr, n.MetricsAddr = addr(), addr(), addr()
	}
	for _, l := range ls {
		l.Close()
	}
	return c, dir
}

func readPids(t *testing.T, dir string, c *Config) []int {
	t.Helper()
	var pids []int
	for _, n := range c.Nodes {
		pid, err := readPid(pidFile(dir, n.Name))
		if err != nil {
			t.Fatalf("pid file of %s: %v", n.Name, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func noPidFiles(t *testing.T, dir string) {
	t.Helper()
	if files, _ := filepath.Glob(filepath.Join(dir, "pids", "*")); len(files) > 0 {
		t.Errorf("pid files left: %v", files)
	}
}

func TestUpStatusDown(t *testing.T) {
	bin := buildFakeNode(t)
	c, dir := localCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := Up(ctx, c, dir, bin, nil, &out); err != nil {
		t.Fatalf("Up: %v\n%s", err, out.String())
	}
	t.Cleanup(func() { Down(dir, &bytes.Buffer{}) })
	for _, n := range c.Nodes {
		if !strings.Contains(out.String(), n.ClientAddr) {
			t.Errorf("Up's output lacks %s's client address %s:\n%s", n.Name, n.ClientAddr, out.String())
		}
	}
	pids := readPids(t, dir, c)
	for i, pid := range pids {
		if !alive(pid) || !isNode(pid, dir, c.Nodes[i].Name) {
			t.Errorf("node %s (pid %d) not running", c.Nodes[i].Name, pid)
		}
		// A session and process group of its own: terminal signals to ours do not reach it.
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			t.Errorf("node %s: process group %d (%v), want its own", c.Nodes[i].Name, pgid, err)
		}
	}
	written, err := Load(filepath.Join(dir, "cluster.yaml"))
	if err != nil || written.Nodes[1].MetricsAddr != c.Nodes[1].MetricsAddr {
		t.Errorf("dir/cluster.yaml: %v", err)
	}

	out.Reset()
	if err := Status(ctx, dir, &out); err != nil {
		t.Errorf("Status: %v\n%s", err, out.String())
	}
	for _, want := range []string{"NODE", "running", "200 OK", strconv.Itoa(pids[2]), "B /status:", "peer C lag 0", c.Nodes[0].ClientAddr} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Status output lacks %q:\n%s", want, out.String())
		}
	}

	if err := Up(ctx, c, dir, bin, nil, &out); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Up: %v", err)
	}

	out.Reset()
	if err := Down(dir, &out); err != nil {
		t.Fatalf("Down: %v\n%s", err, out.String())
	}
	for i, pid := range pids {
		if alive(pid) {
			t.Errorf("node %s (pid %d) survived Down", c.Nodes[i].Name, pid)
		}
		if !strings.Contains(out.String(), fmt.Sprintf("%s: stopped (pid %d)", c.Nodes[i].Name, pid)) {
			t.Errorf("Down output lacks node %s:\n%s", c.Nodes[i].Name, out.String())
		}
		log, _ := os.ReadFile(filepath.Join(dir, "logs", c.Nodes[i].Name+".log"))
		if !strings.Contains(string(log), "serving on") || !strings.Contains(string(log), "terminated, exiting") {
			t.Errorf("log of %s:\n%s", c.Nodes[i].Name, log)
		}
	}
	noPidFiles(t, dir)

	out.Reset()
	if err := Down(dir, &out); err != nil || !strings.Contains(out.String(), "no nodes running") {
		t.Errorf("second Down: %v, %q", err, out.String())
	}
	out.Reset()
	if err := Status(ctx, dir, &out); err == nil || !strings.Contains(out.String(), "down: ") ||
		!strings.Contains(out.String(), "no pid file") {
		t.Errorf("Status after Down: %v\n%s", err, out.String())
	}
}

// TestUpNodeExits checks that Up notices a node that dies at once, without waiting for the
// timeout, stops the others, and quotes the log.
func TestUpNodeExits(t *testing.T) {
	bin := buildFakeNode(t)
	c, dir := localCluster(t)
	start := time.Now()
	err := Up(context.Background(), c, dir, bin, []string{"FAKENODE_FAIL=B"}, &bytes.Buffer{})
	if err == nil {
		Down(dir, &bytes.Buffer{})
		t.Fatal("Up succeeded")
	}
	if !strings.Contains(err.Error(), "node B exited before becoming healthy (exit status 1)") ||
		!strings.Contains(err.Error(), "node B failing on purpose") {
		t.Errorf("error: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Up took %s to notice", d)
	}
	noPidFiles(t, dir)
	log, _ := os.ReadFile(filepath.Join(dir, "logs", "A.log"))
	if !strings.Contains(string(log), "terminated, exiting") {
		t.Errorf("node A was not stopped:\n%s", log)
	}
}

func TestUpTimeout(t *testing.T) {
	bin := buildFakeNode(t)
	c, dir := localCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := Up(ctx, c, dir, bin, []string{"FAKENODE_UNHEALTHY=A"}, &bytes.Buffer{})
	if err == nil {
		Down(dir, &bytes.Buffer{})
		t.Fatal("Up succeeded")
	}
	if !strings.Contains(err.Error(), "node A not healthy after 1s (/healthz answered 503 Service Unavailable)") ||
		!strings.Contains(err.Error(), "fakenode A serving on") {
		t.Errorf("error: %v", err)
	}
	noPidFiles(t, dir)
}

// TestDownKills checks the SIGKILL fallback for a node that ignores SIGTERM.
func TestDownKills(t *testing.T) {
	bin := buildFakeNode(t)
	defer func(d time.Duration) { stopTimeout = d }(stopTimeout)
	stopTimeout = 300 * time.Millisecond
	c, dir := localCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Up(ctx, c, dir, bin, []string{"FAKENODE_IGNORE_TERM=1"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	pids := readPids(t, dir, c)
	var out bytes.Buffer
	if err := Down(dir, &out); err != nil {
		t.Fatal(err)
	}
	for i, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d survived", pid)
		}
		if want := fmt.Sprintf("%s: killed (pid %d)", c.Nodes[i].Name, pid); !strings.Contains(out.String(), want) {
			t.Errorf("Down output lacks %q:\n%s", want, out.String())
		}
	}
	noPidFiles(t, dir)
}

// TestDownStalePids checks that Down removes pid files of dead processes and never signals a
// live process that is not the cluster's node (a reused pid).
func TestDownStalePids(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	writeFile(t, dir, "cluster.yaml", header+threeNodes)
	writeFile(t, dir, "pids/A.pid", strconv.Itoa(cmd.Process.Pid)) // exited and reaped
	writeFile(t, dir, "pids/B.pid", strconv.Itoa(os.Getpid()))     // this test: alive, not a node
	writeFile(t, dir, "pids/C.pid", "garbage")
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		os.Remove(filepath.Join(dir, "pids/B.pid")) // without procfs Down cannot tell
	}
	var out bytes.Buffer
	if err := Down(dir, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "A: not running") || !strings.Contains(out.String(), "C: not running") {
		t.Errorf("Down output:\n%s", out.String())
	}
	noPidFiles(t, dir)
}

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7301": "http://127.0.0.1:7301/healthz",
		":7301":          "http://127.0.0.1:7301/healthz",
		"0.0.0.0:7301":   "http://127.0.0.1:7301/healthz",
		"[::]:7301":      "http://[::1]:7301/healthz",
		"node-a:7301":    "http://node-a:7301/healthz",
	} {
		if got := healthURL("http", addr, "/healthz"); got != want {
			t.Errorf("healthURL(%s) = %s, want %s", addr, got, want)
		}
	}
}
