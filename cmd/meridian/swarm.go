package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocols/log/logsim"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// swarmFlags are the flags of `meridian swarm`.
type swarmFlags struct {
	protocols    string
	seeds, from  uint64
	seed         uint64
	parallel     int
	clientsPerDC int
	duration     time.Duration
	shrinkBudget int
	keepGoing    bool
	quiet        bool
	set          []string
}

func newSwarmCmd(stdout, stderr io.Writer) *cobra.Command {
	var f swarmFlags
	cmd := &cobra.Command{
		Use:   "swarm --protocol P[,Q...] [--seeds N] [--from S] [--parallel K]",
		Short: "run many random fault seeds per protocol in the simulator, each checked",
		Long: `swarm runs random simulated runs of each protocol, one per seed, in the style of TigerBeetle's
VOPR: every seed draws its own topology, jitter, clock skew and drift, protocol parameters,
contention, faults (datacenter outages, partitions, slow links, node crashes and cut links for
partitioned protocols) and network chaos (loss, duplication, reordering, extra delay), and every
run's history goes to the checker, as in the property tests (internal/swarm). A seed fails on
an anomaly the protocol's consistency forbids or on a transaction still unfinished after the
faults healed. For a failing seed it prints the finding, the line that replays it byte for byte,
and a smaller reproduction (fewer clients, a shorter run) when one still fails.

The shared logs have swarms of their own, run the same way: chariots (Chariots' pipeline over
FLStore in two or three datacenters: stage crashes, outages, partitions, chaos, elasticity,
stages restarted empty, garbage collection, Hyksos clients in a quarter of the seeds), flstore
(the same draws on one datacenter) and hyksos (Hyksos clients in every seed). Each run is
checked during the run and at its end: every append answered once, every datacenter's log
holding every record once in causal order, Hyksos's reads. "committed checked" counts the
appends answered for them. "--protocol all" runs every transactional protocol, then the logs.`,
		Example: `  meridian swarm --protocol helios-1 --seeds 10000 --parallel 2
  meridian swarm --protocol all --seeds 200
  meridian swarm --protocol mf --seed 4242                       # replay one seed
  meridian swarm --protocol chariots,flstore,hyksos --seeds 1000  # the shared logs' swarms
  meridian swarm --protocol mf --seed 4242 --clients-per-dc 1 --duration 750ms
  meridian swarm --protocol helios-1 --seeds 100 --set unsafe_commit_early=20ms   # must fail`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSwarm(cmd, f, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.protocols, "protocol", "", "protocols to run, comma-separated (the shared logs: chariots, flstore, hyksos), or all (required)")
	fs.Uint64Var(&f.seeds, "seeds", swarm.SeedsPerProtocol, "seeds per protocol")
	fs.Uint64Var(&f.from, "from", 1, "first seed")
	fs.Uint64Var(&f.seed, "seed", 0, "run just this seed (replay)")
	fs.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "seeds simulated at once")
	fs.IntVar(&f.clientsPerDC, "clients-per-dc", 0, "override every seed's clients per datacenter (replaying a shrunk failure)")
	fs.DurationVar(&f.duration, "duration", 0, "override every seed's run length, dropping faults that would not be over by 3/4 of it")
	fs.IntVar(&f.shrinkBudget, "shrink", 12, "runs to spend looking for a smaller reproduction of a failure (0: none)")
	fs.BoolVar(&f.keepGoing, "keep-going", false, "run every seed after a failure")
	fs.StringArrayVar(&f.set, "set", nil, "protocol parameter name=value fixed for every seed, over the drawn ones (repeatable)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress line (there is none unless stderr is a terminal)")
	return cmd
}

func runSwarm(cmd *cobra.Command, f swarmFlags, stdout, stderr io.Writer) error {
	protocols, err := swarmProtocols(f.protocols)
	if err != nil {
		return err
	}
	switch {
	case f.parallel < 1:
		return usagef("swarm: --parallel must be at least 1")
	case f.clientsPerDC < 0:
		return usagef("swarm: --clients-per-dc must be positive")
	case f.duration < 0 || f.duration > 0 && f.duration < time.Millisecond:
		return usagef("swarm: --duration must be at least 1ms")
	case f.seeds == 0 && !cmd.Flags().Changed("seed"):
		return usagef("swarm: --seeds must be at least 1")
	}
	from, count := f.from, f.seeds
	if cmd.Flags().Changed("seed") {
		if cmd.Flags().Changed("seeds") || cmd.Flags().Changed("from") {
			return usagef("swarm: --seed replays one seed; it excludes --seeds and --from")
		}
		from, count = f.seed, 1
	}
	params, err := parseParams(f.set)
	if err != nil {
		return usagef("swarm: %v", err)
	}
	overrides := swarm.Overrides{Params: params, ClientsPerDC: f.clientsPerDC, DurationUs: f.duration.Microseconds()}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var summaries []swarm.Summary
	failed := false
	for _, p := range protocols {
		c := swarm.Campaign{Protocol: p, From: from, Seeds: count, Parallel: f.parallel, Overrides: overrides, KeepGoing: f.keepGoing}
		if !f.quiet && isTerminal(stderr) {
			c.Progress = swarmProgress(stderr, p, count)
		}
		sum := c.Run(ctx)
		if c.Progress != nil {
			fmt.Fprint(stderr, "\r\033[K")
		}
		summaries = append(summaries, sum)
		for _, fail := range sum.Failures {
			failed = true
			reportSwarmFailure(stdout, p, fail, overrides, f.shrinkBudget)
			if !f.keepGoing {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	printSwarmSummary(stdout, summaries)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("swarm: interrupted")
	case failed:
		return fmt.Errorf("swarm: a seed failed (replay lines above)")
	}
	return nil
}

// swarmProtocols parses --protocol: a comma-separated list of registered transactional
// protocols and shared logs (chariots, flstore, hyksos: the log simulator's swarm), or all of them.
func swarmProtocols(list string) ([]string, error) {
	if list == "" {
		return nil, usagef("swarm: --protocol is required (one or more of %s, or all)", strings.Join(registry.Names(), ", "))
	}
	var out []string
	if list == "all" {
		for _, p := range registry.Names() {
			if e, _ := registry.Lookup(p); e.Family.Transactional() {
				out = append(out, p)
			}
		}
		return append(out, logsim.SwarmNames...), nil
	}
	for _, p := range strings.Split(list, ",") {
		if swarm.IsLog(p) {
			out = append(out, p)
			continue
		}
		e, err := registry.Lookup(p)
		if err != nil {
			return nil, usagef("swarm: %v (or a shared log's swarm: %s)", err, strings.Join(logsim.SwarmNames, ", "))
		}
		if e.Family == registry.Pipeline {
			return nil, usagef("swarm: %s is a pipeline, not a transactional protocol: its tests are `go test ./ml/geo` (the simulator) and ./server/e2e", p)
		}
		if !e.Family.Transactional() {
			return nil, usagef("swarm: %s has no swarm (the shared logs': %s)", p, strings.Join(logsim.SwarmNames, ", "))
		}
		out = append(out, p)
	}
	return out, nil
}

// swarmProgress rewrites one status line on a terminal.
func swarmProgress(w io.Writer, proto string, total uint64) func(done, failed uint64) {
	var mu sync.Mutex
	start := time.Now()
	return func(done, failed uint64) {
		mu.Lock()
		defer mu.Unlock()
		rate := float64(done) / time.Since(start).Seconds()
		fmt.Fprintf(w, "\r\033[Kswarm %s: %d/%d seeds, %d failed, %.1f seeds/s", proto, done, total, failed, rate)
	}
}

// reportSwarmFailure prints a failing seed: its finding, its replay line, and a smaller
// reproduction if Shrink finds one.
func reportSwarmFailure(w io.Writer, proto string, fail swarm.Failure, overrides swarm.Overrides, budget int) {
	replay := fmt.Sprintf("meridian swarm --protocol %s --seed %d", proto, fail.Seed)
	if flags := overrides.Flags(); flags != "" {
		replay += " " + flags
	}
	fmt.Fprintf(w, "FAILED %s seed %d: %v\nreplay: %s\n", proto, fail.Seed, fail.Err, replay)
	if budget == 0 {
		return
	}
	if smaller, err, ok := swarm.Shrink(proto, fail.Seed, overrides, fail.Err, budget); ok {
		fmt.Fprintf(w, "smaller reproduction: meridian swarm --protocol %s --seed %d %s\n  %v\n", proto, fail.Seed, smaller.Flags(), firstLine(err))
	} else {
		fmt.Fprintf(w, "no smaller reproduction in %d runs\n", budget)
	}
}

// firstLine returns err's first line (the finding, without the parameters).
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// printSwarmSummary prints one row per protocol.
func printSwarmSummary(w io.Writer, sums []swarm.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tseeds\tfailed\tcommitted checked\twall s\tseeds/s\t")
	for _, s := range sums {
		wallS := s.Wall.Seconds()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t\n", s.Protocol, s.Seeds, len(s.Failures), s.Committed, wallS, float64(s.Seeds)/wallS)
	}
	tw.Flush()
}
