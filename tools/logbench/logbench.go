// Package logbench measures a shared log (flstore, chariots) running as real processes: closed-
// loop clients append records of a given size for a while, and the run reports appends per
// second, append latency and, for a local cluster (`meridian cluster up`, whose pid files it
// reads), every node's CPU time over the run divided by the appends: the per-record CPU cost of
// each stage machine as a whole process (event loop, Pebble input log, peer transport, gRPC).
// `meridian log bench` runs it. With Options.Hyksos the clients are Hyksos clients instead
// (puts, gets and GET_TXNs of the key-value store on the log, spec 6.1; hyksos.go), and the
// run checks every read (CH-I9) and every acknowledged put against the logs read back;
// `meridian bench --workload hyksos --cluster FILE` runs that.
package logbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
)

// Options describe one run.
type Options struct {
	Cluster *cluster.Config
	// DCs are the datacenters whose clients append (every datacenter if empty); Clients per
	// datacenter, each with one append in flight.
	DCs     []string
	Clients int
	// Duration of the appends; BodyBytes per record; Tags on each record (named t0, t1, …).
	Duration  time.Duration
	BodyBytes int
	Tags      int
	// Timeout bounds each append (0: 10 s).
	Timeout  time.Duration
	DialOpts []grpc.DialOption
	// Hyksos, if set, makes the clients Hyksos clients (BodyBytes and Tags are then unused).
	Hyksos *Hyksos
}

// NodeCPU is one node's CPU time over the run.
type NodeCPU struct {
	Name string `json:"name"`
	// CPUSeconds is user plus system time; UsPerAppend that divided by the appends acknowledged.
	CPUSeconds  float64 `json:"cpu_s"`
	UsPerAppend float64 `json:"cpu_us_per_append"`
}

// Result is what a run measured.
type Result struct {
	Appends       int       `json:"appends"`
	Errors        int       `json:"errors"`
	Seconds       float64   `json:"seconds"`
	AppendsPerSec float64   `json:"appends_per_s"`
	P50Ms         float64   `json:"latency_p50_ms"`
	P99Ms         float64   `json:"latency_p99_ms"`
	Nodes         []NodeCPU `json:"nodes,omitempty"` // empty unless the cluster's pid files are readable
	// Hyksos is the Hyksos clients' reads and checks (Appends above count their puts).
	Hyksos *HyksosResult `json:"hyksos,omitempty"`
}

// Run runs o.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Clients < 1 || o.Duration <= 0 || o.BodyBytes < 0 || o.Tags < 0 || o.Tags > flstore.MaxTags {
		return Result{}, fmt.Errorf("logbench: want at least one client, a positive duration, a body size of 0 or more and 0 to %d tags", flstore.MaxTags)
	}
	if err := o.Hyksos.check(); err != nil {
		return Result{}, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	dcs := o.DCs
	if len(dcs) == 0 {
		dcs = o.Cluster.Topology.DCs
	}
	var clients []*logclient.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, dc := range dcs {
		for range o.Clients {
			dialCtx, cancel := context.WithTimeout(ctx, o.Timeout)
			c, err := logclient.Dial(dialCtx, o.Cluster, dc, o.DialOpts...)
			cancel()
			if err != nil {
				return Result{}, err
			}
			c.SetCallTimeout(o.Timeout)
			clients = append(clients, c)
		}
	}
	var tags []flstore.Tag
	for i := range o.Tags {
		tags = append(tags, flstore.Tag{Name: "t" + strconv.Itoa(i), Value: []byte("v")})
	}
	body := make([]byte, o.BodyBytes)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	var hk *hyksosRun
	if o.Hyksos != nil {
		hk = newHyksosRun(*o.Hyksos, o.Cluster)
	}
	before := cpuTimes(o.Cluster)
	var mu sync.Mutex
	var latencies, readLatencies []time.Duration
	errs := 0
	start := time.Now()
	end := start.Add(o.Duration)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		op := func(ctx context.Context) (bool, error) { _, err := c.Append(ctx, body, tags, nil); return false, err }
		if hk != nil {
			op = hk.client(c, i, i/o.Clients, dcs[i/o.Clients])
		}
		go func() {
			defer wg.Done()
			var mine, reads []time.Duration
			bad := 0
			for ctx.Err() == nil && time.Now().Before(end) {
				callCtx, cancel := context.WithTimeout(ctx, o.Timeout)
				t0 := time.Now()
				read, err := op(callCtx)
				cancel()
				switch {
				case err != nil:
					bad++
				case read:
					reads = append(reads, time.Since(t0))
				default:
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			latencies, readLatencies, errs = append(latencies, mine...), append(readLatencies, reads...), errs+bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	after := cpuTimes(o.Cluster)
	res := Result{Appends: len(latencies), Errors: errs, Seconds: elapsed, AppendsPerSec: float64(len(latencies)) / elapsed}
	res.P50Ms, res.P99Ms = percentileMs(latencies, 0.50), percentileMs(latencies, 0.99)
	for _, n := range o.Cluster.Nodes {
		b, okB := before[n.Name]
		a, okA := after[n.Name]
		if !okA || !okB {
			continue
		}
		nc := NodeCPU{Name: n.Name, CPUSeconds: a - b}
		if res.Appends > 0 {
			nc.UsPerAppend = nc.CPUSeconds * 1e6 / float64(res.Appends)
		}
		res.Nodes = append(res.Nodes, nc)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if hk != nil {
		hr := &HyksosResult{Reads: len(readLatencies), ReadsPerSec: float64(len(readLatencies)) / elapsed,
			ReadP50Ms: percentileMs(readLatencies, 0.50), ReadP99Ms: percentileMs(readLatencies, 0.99)}
		res.Hyksos = hr
		readers := make([]*logclient.Client, len(dcs)) // one client of each datacenter reads its log back
		for d := range dcs {
			readers[d] = clients[d*o.Clients]
		}
		if err := hk.check(ctx, hr, readers); err != nil {
			return res, err
		}
	}
	return res, nil
}

// percentileMs returns the p-th percentile of ds in milliseconds (sorting ds; 0 if empty).
func percentileMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Microseconds()) / 1000
}

// clockTicksPerSec is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on Linux).
const clockTicksPerSec = 100

// cpuTimes reads every node's CPU seconds (user plus system) from /proc, for the nodes of a
// local cluster whose pid files it can read; the others are left out.
func cpuTimes(cfg *cluster.Config) map[string]float64 {
	out := map[string]float64{}
	dir := filepath.Dir(cfg.Path)
	for _, n := range cfg.Nodes {
		pid, err := cluster.NodePid(dir, n.Name)
		if err != nil {
			continue
		}
		if s, err := processCPUSeconds(pid); err == nil {
			out[n.Name] = s
		}
	}
	return out
}

// processCPUSeconds reads a process's user plus system CPU time from /proc/PID/stat.
func processCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: fields count from the
	// last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, errors.New("logbench: malformed /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("logbench: malformed /proc stat")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, errors.New("logbench: malformed /proc stat")
	}
	return float64(utime+stime) / clockTicksPerSec, nil
}
