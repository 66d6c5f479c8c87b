package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// DefaultStartTimeout is how long Up waits for every node to become healthy when its context
// has no deadline.
const DefaultStartTimeout = 30 * time.Second

// stopTimeout is how long Down (and a failed Up) waits after SIGTERM before SIGKILL; tests
// shorten it.
var stopTimeout = 10 * time.Second

// killTimeout is how long a process may take to disappear after SIGKILL.
const killTimeout = 5 * time.Second

// pollInterval paces health checks and waits for processes to exit.
const pollInterval = 50 * time.Millisecond

// logTailLines is how many lines of a failing node's log Up quotes.
const logTailLines = 20

// Files of a cluster directory.
func clusterFile(dir string) string       { return filepath.Join(dir, "cluster.yaml") }
func logFile(dir, node string) string     { return filepath.Join(dir, "logs", node+".log") }
func pidDir(dir string) string            { return filepath.Join(dir, "pids") }
func pidFile(dir, node string) string     { return filepath.Join(pidDir(dir), node+".pid") }
func nodeOfPidFile(path string) string    { return strings.TrimSuffix(filepath.Base(path), ".pid") }
func serveArgs(cfg, node string) []string { return []string{"serve", "--config", cfg, "--node", node} }

// Up starts a local cluster in dir: it writes cfg to dir/cluster.yaml (so cfg.Path is ignored)
// and starts `binary serve --config dir/cluster.yaml --node NAME` for every node, in a new
// session so that the processes outlive the caller, with extraEnv added to the environment,
// stdout and stderr appended to dir/logs/NAME.log and the pid in dir/pids/NAME.pid. It then waits
// until every node's http://metrics_addr/healthz answers 200 OK, until ctx's deadline or for
// DefaultStartTimeout if ctx has none, and prints the nodes' client endpoints to out. If a node
// exits or the wait times out or ctx is cancelled, Up stops every process it started and returns
// an error quoting the end of the failing node's log. Up refuses to start over a running cluster.
// The started processes are reaped by Up's goroutines if they exit while the caller still runs.
func Up(ctx context.Context, cfg *Config, dir, binary string, extraEnv []string, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	path := clusterFile(dir)
	if err := checkNotRunning(dir); err != nil {
		return err
	}
	c := *cfg
	c.Path = path
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	// Check what the servers will read, and use that.
	parsed, err := Parse(path, data)
	if err != nil {
		return fmt.Errorf("invalid cluster configuration: %w", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "logs"), pidDir(dir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(path, data, 0o644); err != nil {
		return err
	}
	timeout := DefaultStartTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var procs []*proc
	fail := func(p *proc, reason string) error {
		stopAll(dir, procs, io.Discard)
		msg := fmt.Sprintf("node %s %s", p.name, reason)
		if tail := logTail(logFile(dir, p.name), logTailLines); tail != "" {
			msg += fmt.Sprintf("; last lines of %s:\n%s", logFile(dir, p.name), tail)
		}
		return errors.New(msg)
	}
	for _, n := range parsed.Nodes {
		p, err := start(dir, binary, path, n.Name, extraEnv)
		if err != nil {
			stopAll(dir, procs, io.Discard)
			return err
		}
		procs = append(procs, p)
	}
	probe, err := NewProber(parsed, nil)
	if err != nil {
		stopAll(dir, procs, io.Discard)
		return err
	}
	for i := range parsed.Nodes {
		if reason := waitHealthy(waitCtx, procs[i], probe, i); reason != "" {
			if ctx.Err() == context.Canceled {
				reason = "was not healthy yet: interrupted"
			} else if waitCtx.Err() != nil {
				reason = fmt.Sprintf("not healthy after %s (%s)", timeout.Round(10*time.Millisecond), reason)
			}
			return fail(procs[i], reason)
		}
	}
	fmt.Fprintf(out, "cluster %s: %s on %s, %d nodes up in %s\n", parsed.Name, parsed.Protocol,
		parsed.Topology.Name, len(parsed.Nodes), dir)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDC\tPID\tCLIENT\tMETRICS\tLOG")
	for i, n := range parsed.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", n.Name, n.DC, procs[i].pid, n.ClientAddr,
			n.MetricsAddr, logFile(dir, n.Name))
	}
	return tw.Flush()
}

// proc is a node process started by Up.
type proc struct {
	name string
	pid  int
	done chan struct{} // closed when the process has exited and been reaped
	err  error         // the exit status, set before done is closed
}

// start launches one node in its own session and records its pid.
func start(dir, binary, cfgPath, node string, extraEnv []string) (*proc, error) {
	logPath := logFile(dir, node)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	args := serveArgs(cfgPath, node)
	fmt.Fprintf(log, "=== %s meridian cluster up: %s %s\n", time.Now().UTC().Format(time.RFC3339), binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = log, log
	// A new session: no terminal signals (Ctrl-C, hangup) reach the node, which outlives us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	p := &proc{name: node, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := os.WriteFile(pidFile(dir, node), []byte(strconv.Itoa(p.pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return p, nil
}

// waitHealthy polls node i's /healthz until it answers 200 OK. It returns "" then, or why it
// gave up: the process exited, or ctx ended (with the last probe's outcome).
func waitHealthy(ctx context.Context, p *proc, probe *Prober, i int) string {
	last := "no answer yet"
	for {
		select {
		case <-p.done:
			return fmt.Sprintf("exited before becoming healthy (%v)", p.err)
		default:
		}
		code, _, err := probe.probe(ctx, i, "/healthz")
		var identity *IdentityError
		switch {
		case errors.As(err, &identity):
			return "does not prove its identity on its metrics port: " + err.Error()
		case err == nil && code == http.StatusOK:
			return ""
		case err != nil && ctx.Err() == nil:
			last = err.Error()
		case err == nil:
			last = fmt.Sprintf("/healthz answered %d %s", code, http.StatusText(code))
		}
		select {
		case <-p.done:
			return fmt.Sprintf("exited before becoming healthy (%v)", p.err)
		case <-ctx.Done():
			return last
		case <-time.After(pollInterval):
		}
	}
}

// Prober fetches the HTTP endpoints of a cluster's nodes (/healthz, /status, /versions): plain
// HTTP, or on a cluster with mutual TLS, HTTPS whose server must present a certificate from the
// cluster CA naming the node probed, presenting the client certificate it was given (required by
// /versions there). No keep-alives, so that nothing lingers on stopped nodes.
type Prober struct {
	cfg    *Config
	scheme string
	roots  *x509.CertPool   // nil without TLS
	cert   *tls.Certificate // nil: no client certificate
}

// NewProber returns the prober of cfg's nodes, presenting cert (may be nil) on a TLS cluster.
func NewProber(cfg *Config, cert *tls.Certificate) (*Prober, error) {
	if cfg.TLS == nil {
		return &Prober{cfg: cfg, scheme: "http"}, nil
	}
	roots, err := LoadCA(cfg.TLS.CA)
	if err != nil {
		return nil, err
	}
	return &Prober{cfg: cfg, scheme: "https", roots: roots, cert: cert}, nil
}

// Get fetches path from node i's metrics address and returns the status code and up to
// maxBytes of the body. ctx bounds the request.
func (p *Prober) Get(ctx context.Context, i int, path string, maxBytes int64) (int, []byte, error) {
	return p.do(ctx, http.MethodGet, i, path, maxBytes)
}

// Post posts to path (with its query) on node i's metrics address, as the nemesis does to the
// admin endpoints, and fails unless the node answers 200 OK.
func (p *Prober) Post(ctx context.Context, i int, path string) error {
	code, body, err := p.do(ctx, http.MethodPost, i, path, 64<<10)
	switch {
	case err != nil:
		return fmt.Errorf("node %s %s: %w", p.cfg.Nodes[i].Name, path, err)
	case code != http.StatusOK:
		return fmt.Errorf("node %s %s: %d %s", p.cfg.Nodes[i].Name, path, code, bytes.TrimSpace(body))
	}
	return nil
}

func (p *Prober) do(ctx context.Context, method string, i int, path string, maxBytes int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, healthURL(p.scheme, p.cfg.Nodes[i].MetricsAddr, path), nil)
	if err != nil {
		return 0, nil, err
	}
	transport := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	if p.roots != nil {
		conf := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, VerifyConnection: p.cfg.VerifyNode(p.roots, i)}
		if p.cert != nil {
			conf.Certificates = []tls.Certificate{*p.cert}
		}
		transport.TLSClientConfig = conf
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) { // drop the URL and the dial details of "Get ...: dial tcp ...: "
			return 0, nil, op.Err
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes))
	return resp.StatusCode, body, err
}

// probe is a health probe of node i: Get with a 2-second limit and 1 MiB of body.
func (p *Prober) probe(ctx context.Context, i int, path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return p.Get(ctx, i, path, 1<<20)
}

// healthURL returns the URL of path on a metrics address, dialing loopback for a wildcard host.
func healthURL(scheme, addr, path string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr + path
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port) + path
}

// Down stops the cluster in dir: it sends SIGTERM to every process recorded in dir/pids, waits up
// to 10 s for them to exit, sends SIGKILL to the survivors, and removes the pid files. Pid files
// of processes that are gone (or are no longer this cluster's node) are removed silently, so Down
// may be repeated.
func Down(dir string, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(pidDir(dir), "*.pid"))
	if err != nil {
		return err
	}
	var procs []*proc
	for _, f := range files {
		name := nodeOfPidFile(f)
		pid, err := readPid(f)
		if err != nil || !alive(pid) || !isNode(pid, dir, name) {
			os.Remove(f)
			fmt.Fprintf(out, "%s: not running\n", name)
			continue
		}
		procs = append(procs, &proc{name: name, pid: pid})
	}
	if len(files) == 0 {
		fmt.Fprintf(out, "no nodes running in %s\n", dir)
	}
	return stopAll(dir, procs, out)
}

// stopAll stops procs (SIGTERM, then SIGKILL after stopTimeout) and removes their pid files,
// reporting each to out.
func stopAll(dir string, procs []*proc, out io.Writer) error {
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
	pending := waitExit(procs, stopTimeout)
	for _, p := range procs {
		if !slices.Contains(pending, p) {
			fmt.Fprintf(out, "%s: stopped (pid %d)\n", p.name, p.pid)
			os.Remove(pidFile(dir, p.name))
		}
	}
	if len(pending) == 0 {
		return nil
	}
	for _, p := range pending {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	stuck := waitExit(pending, killTimeout)
	var names []string
	for _, p := range pending {
		if slices.Contains(stuck, p) {
			names = append(names, fmt.Sprintf("%s (pid %d)", p.name, p.pid))
			continue
		}
		fmt.Fprintf(out, "%s: killed (pid %d) after %s\n", p.name, p.pid, stopTimeout)
		os.Remove(pidFile(dir, p.name))
	}
	if len(names) > 0 {
		return fmt.Errorf("still running after SIGKILL: %s", strings.Join(names, ", "))
	}
	return nil
}

// waitExit waits up to timeout for procs to exit and returns those still alive.
func waitExit(procs []*proc, timeout time.Duration) []*proc {
	deadline := time.Now().Add(timeout)
	for {
		var pending []*proc
		for _, p := range procs {
			if alive(p.pid) {
				pending = append(pending, p)
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			return pending
		}
		procs = pending
		time.Sleep(pollInterval / 5)
	}
}

// checkNotRunning returns an error if a node of the cluster in dir is running.
func checkNotRunning(dir string) error {
	if running := runningNodes(dir); len(running) > 0 {
		return fmt.Errorf("a cluster is already running in %s (%s); stop it with meridian cluster down --dir %s",
			dir, strings.Join(running, ", "), dir)
	}
	return nil
}

// runningNodes lists the nodes of dir whose recorded process still runs, as "A (pid 123)".
func runningNodes(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(pidDir(dir), "*.pid"))
	var running []string
	for _, f := range files {
		name := nodeOfPidFile(f)
		if pid, err := readPid(f); err == nil && alive(pid) && isNode(pid, dir, name) {
			running = append(running, fmt.Sprintf("%s (pid %d)", name, pid))
		}
	}
	return running
}

func readPid(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s: malformed pid %q", path, data)
	}
	return pid, nil
}

// alive reports whether process pid exists, is ours to signal and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust kill
	}
	// pid (comm) state ...; comm may contain spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		// The main thread is gone, but the process lives (and holds its files, such as its data
		// directory's lock) until its last thread has exited: a stopped process that was killed
		// takes a moment to wake every thread.
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		return err == nil && len(tasks) > 1
	}
	return true
}

// isNode reports whether process pid is node's server of the cluster in dir, so that a pid file
// left over from a crash or a reboot never makes Down signal an unrelated process that reused
// the pid. Without procfs it cannot tell and says yes.
func isNode(pid int, dir, node string) bool {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	var cfg, name string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--config":
			cfg = args[i+1]
		case "--node":
			name = args[i+1]
		}
	}
	if name != node || cfg == "" {
		return false
	}
	if !filepath.IsAbs(cfg) {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil {
			return false
		}
		cfg = filepath.Join(cwd, cfg)
	}
	a, err1 := os.Stat(cfg)
	b, err2 := os.Stat(clusterFile(dir))
	if err1 != nil || err2 != nil { // the file was removed: compare names
		return filepath.Clean(cfg) == clusterFile(dir)
	}
	return os.SameFile(a, b)
}

// Status prints a table of the cluster in dir: for every node its pid and whether that process
// runs, its /healthz status, its client address and what its /status endpoint answers (the
// server's per-peer replication report; JSON is compacted, a multi-line text report is printed
// below the table). It returns an error if a node is not healthy.
func Status(ctx context.Context, dir string, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	cfg, err := Load(clusterFile(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no cluster in %s (no cluster.yaml)", dir)
		}
		return err
	}
	type row struct {
		pid, process, health, status string
		report                       []string // a multi-line /status body
		healthy                      bool
	}
	probe, err := NewProber(cfg, nil)
	if err != nil {
		return err
	}
	rows := make([]row, len(cfg.Nodes))
	var wg sync.WaitGroup
	for i, n := range cfg.Nodes {
		wg.Go(func() {
			r := &rows[i]
			r.pid, r.process = "-", "no pid file"
			if pid, err := readPid(pidFile(dir, n.Name)); err == nil {
				r.pid, r.process = strconv.Itoa(pid), "dead"
				if alive(pid) && isNode(pid, dir, n.Name) {
					r.process = "running"
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				r.process = "bad pid file"
			}
			code, body, err := probe.probe(ctx, i, "/healthz")
			switch {
			case err != nil:
				r.health = "down: " + err.Error()
			default:
				r.health = fmt.Sprintf("%d %s", code, http.StatusText(code))
				if msg := oneLine(body); code != http.StatusOK && msg != "" {
					r.health += ": " + msg
				}
				r.healthy = code == http.StatusOK
			}
			code, body, err = probe.probe(ctx, i, "/status")
			if err != nil || code != http.StatusOK {
				r.status = "-"
				return
			}
			r.status = oneLine(body)
			if lines := trimmedLines(body); len(lines) > 1 && !json.Valid(body) {
				r.status, r.report = "(below)", lines
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(out, "cluster %s: %s on %s (%s)\n", cfg.Name, cfg.Protocol, cfg.Topology.Name, dir)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDC\tPID\tPROCESS\tHEALTHZ\tCLIENT\tSTATUS")
	unhealthy := 0
	for i, n := range cfg.Nodes {
		r := rows[i]
		if !r.healthy {
			unhealthy++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.DC, r.pid, r.process, r.health, n.ClientAddr, r.status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, n := range cfg.Nodes {
		if rows[i].report != nil {
			fmt.Fprintf(out, "\n%s /status:\n  %s\n", n.Name, strings.Join(rows[i].report, "\n  "))
		}
	}
	if unhealthy > 0 {
		return fmt.Errorf("%d of %d nodes not healthy", unhealthy, len(cfg.Nodes))
	}
	return nil
}

// oneLine renders a response body on one line: JSON compacted, text lines joined with " | ".
func oneLine(body []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, bytes.TrimSpace(body)) == nil {
		return buf.String()
	}
	return strings.Join(trimmedLines(body), " | ")
}

// trimmedLines returns the non-blank lines of body, without trailing space.
func trimmedLines(body []byte) []string {
	var lines []string
	for l := range strings.Lines(string(body)) {
		if l = strings.TrimRight(l, " \t\r\n"); strings.TrimSpace(l) != "" {
			lines = append(lines, strings.ReplaceAll(l, "\t", "    "))
		}
	}
	return lines
}

// logTail returns the last n lines of the file at path, indented, or "" if it cannot be read.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxTail = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxTail {
		_, _ = f.Seek(st.Size()-maxTail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// writeFileAtomic replaces path with data, with permissions perm, so that a reader never sees a
// partial file (nor, for a key, one readable by others).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*") // mode 0600
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), perm)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Kill stops node abruptly with SIGKILL, as a crash would (kill -9), and waits until it is gone.
// Its pid file stays; StartNode replaces it.
func Kill(dir, node string) error {
	pid, err := signalNode(dir, node, syscall.SIGKILL)
	if err != nil {
		return err
	}
	for alive(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Pause stops node with SIGSTOP, as a long garbage-collection pause or a frozen virtual machine
// would: its connections stay open and nothing it holds is lost. Resume continues it.
func Pause(dir, node string) error {
	_, err := signalNode(dir, node, syscall.SIGSTOP)
	return err
}

// Resume continues a node that Pause stopped (SIGCONT).
func Resume(dir, node string) error {
	_, err := signalNode(dir, node, syscall.SIGCONT)
	return err
}

// signalNode sends sig to the running process of node, checked to be the cluster's node, and
// returns its pid.
func signalNode(dir, node string, sig syscall.Signal) (int, error) {
	pid, err := readPid(pidFile(dir, node))
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", node, err)
	}
	if !alive(pid) || !isNode(pid, dir, node) {
		return 0, fmt.Errorf("node %s (pid %d) is not running", node, pid)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return 0, fmt.Errorf("node %s: %w", node, err)
	}
	return pid, nil
}

// StartNode starts one node of the cluster in dir (after a crash, say) and waits until it is
// healthy again.
func StartNode(ctx context.Context, dir, binary, node string) error {
	cfg, err := Load(clusterFile(dir))
	if err != nil {
		return err
	}
	i, _, err := cfg.Node(node)
	if err != nil {
		return err
	}
	p, err := start(dir, binary, clusterFile(dir), node, nil)
	if err != nil {
		return err
	}
	probe, err := NewProber(cfg, nil)
	if err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	if reason := waitHealthy(waitCtx, p, probe, i); reason != "" {
		return fmt.Errorf("node %s %s; log %s ends with:\n%s", node, reason, logFile(dir, node), logTail(logFile(dir, node), 10))
	}
	return nil
}
