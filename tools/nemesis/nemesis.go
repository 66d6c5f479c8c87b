// Package nemesis injects faults into a running local cluster while a bench runs against it,
// in the style of Jepsen's nemeses: it kills nodes with SIGKILL and restarts them, pauses them
// with SIGSTOP and resumes them, cuts and heals the links between nodes, and skews a node's
// clock. The last two go through the nodes' admin endpoints (cluster file `admin: true`,
// `meridian cluster up --admin`). The run's history goes to the checker as in any bench, and
// every commit a client saw acknowledged must be installed at the end.
//
// A node that is restarted comes back without the cuts and skew the nemesis gave it: they live
// in the process, not in its data.
package nemesis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
)

// Kind is what a fault does.
type Kind string

// The kinds of faults.
const (
	// Kill stops the node with SIGKILL at the start and restarts it at the end.
	Kill Kind = "kill"
	// Pause stops the node with SIGSTOP at the start and continues it with SIGCONT at the end.
	Pause Kind = "pause"
	// Cut drops every message between Node and Peer, both ways, until the end.
	Cut Kind = "cut"
	// Skew offsets Node's clock by SkewUs until the end.
	Skew Kind = "skew"
)

// Fault is one scheduled fault, from StartUs to EndUs after the bench starts.
type Fault struct {
	Kind       Kind
	Node, Peer string
	SkewUs     int64
	StartUs    int64
	EndUs      int64
}

// String renders f in the schedule's syntax.
func (f Fault) String() string {
	span := "@" + us(f.StartUs) + "-" + us(f.EndUs)
	switch f.Kind {
	case Cut:
		return "cut:" + f.Node + "-" + f.Peer + span
	case Skew:
		sign := "+"
		if f.SkewUs < 0 {
			sign = ""
		}
		return "skew:" + f.Node + sign + us(f.SkewUs) + span
	}
	return string(f.Kind) + ":" + f.Node + span
}

func us(v int64) string { return (time.Duration(v) * time.Microsecond).String() }

// ParseSchedule parses a comma-separated schedule of faults on cfg's nodes, each
// KIND:TARGET@START-END with Go durations: kill:A@2s-4s (SIGKILL at 2 s, restart at 4 s),
// pause:B@5s-6s, cut:A-B@1s-3s, skew:C+200ms@2s-5s (or C-50ms). Every fault must end after it
// starts and before durationUs, the bench's length, so that the run ends healed.
func ParseSchedule(s string, cfg *cluster.Config, durationUs int64) ([]Fault, error) {
	var faults []Fault
	for _, item := range strings.Split(s, ",") {
		f, err := parseFault(strings.TrimSpace(item), cfg)
		if err != nil {
			return nil, fmt.Errorf("nemesis: schedule item %q: %w", item, err)
		}
		if f.EndUs >= durationUs {
			return nil, fmt.Errorf("nemesis: schedule item %q ends at or after the run's end (%s)", item, us(durationUs))
		}
		faults = append(faults, f)
	}
	return faults, nil
}

func parseFault(item string, cfg *cluster.Config) (Fault, error) {
	kind, rest, ok := strings.Cut(item, ":")
	target, span, ok2 := strings.Cut(rest, "@")
	from, to, ok3 := strings.Cut(span, "-")
	if !ok || !ok2 || !ok3 {
		return Fault{}, errors.New("want KIND:TARGET@START-END")
	}
	start, err1 := time.ParseDuration(from)
	end, err2 := time.ParseDuration(to)
	if err1 != nil || err2 != nil || start < 0 || end <= start {
		return Fault{}, errors.New("START-END must be durations with END after START (e.g. 2s-4s)")
	}
	f := Fault{Kind: Kind(kind), StartUs: start.Microseconds(), EndUs: end.Microseconds()}
	isNode := func(name string) bool {
		_, _, err := cfg.Node(name)
		return err == nil
	}
	// Node names may contain '-' (dc0-p1): try every place the target can split.
	splits := func(seps string) [][2]string {
		var out [][2]string
		for i, c := range target {
			if i > 0 && strings.ContainsRune(seps, c) && isNode(target[:i]) {
				out = append(out, [2]string{target[:i], target[i:]})
			}
		}
		return out
	}
	switch f.Kind {
	case Kill, Pause:
		f.Node = target
		if !isNode(target) {
			return f, fmt.Errorf("no node %q in %s", target, cfg.Path)
		}
		return f, nil
	case Cut:
		for _, s := range splits("-") {
			if peer := s[1][1:]; isNode(peer) && peer != s[0] {
				f.Node, f.Peer = s[0], peer
				return f, nil
			}
		}
		return f, errors.New("cut wants two different nodes of the cluster: cut:A-B@START-END")
	case Skew:
		for _, s := range splits("+-") {
			if offset, err := time.ParseDuration(s[1]); err == nil {
				f.Node, f.SkewUs = s[0], offset.Microseconds()
				return f, nil
			}
		}
		return f, errors.New("skew wants a node of the cluster and an offset: skew:C+200ms@START-END")
	}
	return f, fmt.Errorf("unknown fault kind %q (want kill, pause, cut or skew)", kind)
}

// Options configure a run.
type Options struct {
	// Cluster is the running cluster; its file's directory is the one `cluster up --dir` made
	// (pid files: the nemesis signals the nodes' processes).
	Cluster *cluster.Config
	// Binary is the meridian binary that restarts killed nodes.
	Binary string
	// Bench is the load; its history is kept for the lost-commit check.
	Bench  bench.Options
	Faults []Fault
	// ClientCert is the bench's client certificate on a TLS cluster (nil otherwise); the admin
	// endpoints require it there too.
	ClientCert *tls.Certificate
	// Log receives one line per injected fault, as it happens.
	Log io.Writer
}

// Report is a run's outcome.
type Report struct {
	Result *bench.Result
	// Injected lists every action taken, with its time since the start.
	Injected []string
	// Failed lists the actions that could not be taken (a node that did not restart, say).
	Failed []string
	// LostCommits lists the acknowledged commits whose writes no node installed.
	LostCommits []string
}

// Problem is the run's verdict: the bench's (anomalies, workload invariants), a fault that
// could not be injected or healed, or a lost acknowledged commit.
func (r *Report) Problem() error {
	var errs []error
	if err := r.Result.Problem(); err != nil {
		errs = append(errs, err)
	}
	if len(r.Failed) > 0 {
		errs = append(errs, fmt.Errorf("nemesis: %d actions failed: %s", len(r.Failed), strings.Join(r.Failed, "; ")))
	}
	if len(r.LostCommits) > 0 {
		errs = append(errs, fmt.Errorf("nemesis: %d acknowledged commits lost: %s", len(r.LostCommits), strings.Join(r.LostCommits[:min(5, len(r.LostCommits))], "; ")))
	}
	return errors.Join(errs...)
}

// Run runs o.Bench against o.Cluster while injecting o.Faults, then checks the outcome.
func Run(ctx context.Context, o Options) (*Report, error) {
	if !o.Cluster.Admin && slices.ContainsFunc(o.Faults, func(f Fault) bool { return f.Kind == Cut || f.Kind == Skew }) {
		return nil, fmt.Errorf("nemesis: cuts and clock skew need the nodes' admin endpoints: start the cluster with `meridian cluster up --admin` (admin: true in %s)", o.Cluster.Path)
	}
	probe, err := cluster.NewProber(o.Cluster, o.ClientCert)
	if err != nil {
		return nil, err
	}
	opts := o.Bench
	opts.KeepHistory = true
	report := &Report{}
	var mu sync.Mutex
	start := time.Now()
	note := func(failed bool, format string, args ...any) {
		line := fmt.Sprintf("%7.3fs ", time.Since(start).Seconds()) + fmt.Sprintf(format, args...)
		mu.Lock()
		defer mu.Unlock()
		if failed {
			report.Failed = append(report.Failed, line)
		} else {
			report.Injected = append(report.Injected, line)
		}
		if o.Log != nil {
			fmt.Fprintln(o.Log, "nemesis:", line)
		}
	}
	inj := injector{dir: filepath.Dir(o.Cluster.Path), binary: o.Binary, cfg: o.Cluster, probe: probe}
	var wg sync.WaitGroup
	for _, f := range o.Faults {
		wg.Go(func() {
			if !sleepUntil(ctx, start, f.StartUs) {
				return
			}
			if err := inj.begin(ctx, f); err != nil {
				note(true, "%s: begin: %v", f, err)
				return
			}
			note(false, "%s: begun", f)
			sleepUntil(ctx, start, f.EndUs)
			if err := inj.end(context.WithoutCancel(ctx), f); err != nil {
				note(true, "%s: end: %v", f, err)
				return
			}
			note(false, "%s: ended", f)
		})
	}
	res, err := bench.RunCluster(ctx, opts, o.Cluster, o.ClientCert)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	report.Result = res
	report.LostCommits = LostCommits(res)
	return report, nil
}

// sleepUntil waits until atUs after start, or ctx ends (false).
func sleepUntil(ctx context.Context, start time.Time, atUs int64) bool {
	select {
	case <-time.After(time.Until(start.Add(time.Duration(atUs) * time.Microsecond))):
		return true
	case <-ctx.Done():
		return false
	}
}

// injector takes the actions of faults.
type injector struct {
	dir, binary string
	cfg         *cluster.Config
	probe       *cluster.Prober
}

func (in injector) begin(ctx context.Context, f Fault) error {
	switch f.Kind {
	case Kill:
		return cluster.Kill(in.dir, f.Node)
	case Pause:
		return cluster.Pause(in.dir, f.Node)
	case Cut:
		return in.cut(ctx, f, "cut")
	default: // Skew
		return in.admin(ctx, f.Node, "/admin/skew?offset="+url.QueryEscape(us(f.SkewUs)))
	}
}

func (in injector) end(ctx context.Context, f Fault) error {
	switch f.Kind {
	case Kill:
		return cluster.StartNode(ctx, in.dir, in.binary, f.Node)
	case Pause:
		return cluster.Resume(in.dir, f.Node)
	case Cut:
		return in.cut(ctx, f, "heal")
	default: // Skew
		return in.admin(ctx, f.Node, "/admin/skew?offset=0s")
	}
}

// cut cuts or heals the link between f.Node and f.Peer at both ends.
func (in injector) cut(ctx context.Context, f Fault, action string) error {
	return errors.Join(
		in.admin(ctx, f.Node, "/admin/"+action+"?peer="+url.QueryEscape(f.Peer)),
		in.admin(ctx, f.Peer, "/admin/"+action+"?peer="+url.QueryEscape(f.Node)))
}

func (in injector) admin(ctx context.Context, node, path string) error {
	i, _, err := in.cfg.Node(node)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return in.probe.Post(ctx, i, path)
}

// LostCommits lists the committed transactions of res's history (kept: bench.Options.KeepHistory)
// with a write that no node installed: an acknowledged commit the cluster lost. The
// serializability checker finds these too (per replica); this check holds for every family.
func LostCommits(res *bench.Result) []string {
	installed := map[string]map[txn.ID]bool{}
	for _, r := range res.History.Replicas {
		for k, ids := range r.VersionOrder {
			if installed[k] == nil {
				installed[k] = map[txn.ID]bool{}
			}
			for _, id := range ids {
				installed[k][id] = true
			}
		}
	}
	var lost []string
	for _, t := range res.History.Txns {
		if t.Status != txn.Committed {
			continue
		}
		for _, k := range t.Writes {
			if !installed[k][t.ID] {
				lost = append(lost, fmt.Sprintf("%s wrote %q", t.ID, k))
			}
		}
	}
	return lost
}
