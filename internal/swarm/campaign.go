package swarm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
)

// Overrides change every seed's drawn run: protocol parameters fixed by the user (a
// deliberately broken variant, say), and, to shrink a failure for a reproduction, fewer
// clients per datacenter and a shorter run. A zero field keeps the drawn value.
type Overrides struct {
	Params       protocol.Params
	ClientsPerDC int
	DurationUs   int64
}

// Apply returns opts with o applied. A shorter run keeps only the faults that are over by three
// quarters of it, so that transactions still have time to finish after the last fault and an
// unfinished one still means a liveness failure.
func (o Overrides) Apply(opts bench.Options) bench.Options {
	if o.resize(&opts.Params, &opts.ClientsPerDC, &opts.DurationUs) {
		opts.Faults = o.faultsOver(opts.Faults)
	}
	return opts
}

// resize sets a run's parameters, clients per datacenter and length from o and reports whether
// it shortened the run (the caller then drops what would no longer be over in time).
func (o Overrides) resize(params *protocol.Params, clientsPerDC *int, durationUs *int64) (shortened bool) {
	*params = o.params(*params)
	if o.ClientsPerDC > 0 {
		*clientsPerDC = o.ClientsPerDC
	}
	if o.DurationUs > 0 && o.DurationUs != *durationUs {
		*durationUs = o.DurationUs
		return true
	}
	return false
}

// params returns drawn with o's parameters over it (drawn itself if o has none).
func (o Overrides) params(drawn protocol.Params) protocol.Params {
	if len(o.Params) == 0 {
		return drawn
	}
	out := maps.Clone(drawn)
	if out == nil {
		out = protocol.Params{}
	}
	maps.Copy(out, o.Params)
	return out
}

// faultsOver returns the faults that are over by three quarters of the overridden run.
func (o Overrides) faultsOver(faults []sim.Fault) []sim.Fault {
	kept := faults[:0:0]
	for _, f := range faults {
		if f.EndUs <= o.DurationUs*3/4 {
			kept = append(kept, f)
		}
	}
	return kept
}

// Flags renders o as the flags of `meridian swarm` that reapply it.
func (o Overrides) Flags() string {
	var flags []string
	for _, k := range slices.Sorted(maps.Keys(o.Params)) {
		flags = append(flags, "--set "+k+"="+o.Params[k])
	}
	if o.ClientsPerDC > 0 {
		flags = append(flags, fmt.Sprintf("--clients-per-dc %d", o.ClientsPerDC))
	}
	if o.DurationUs > 0 {
		flags = append(flags, "--duration "+(time.Duration(o.DurationUs)*time.Microsecond).String())
	}
	return strings.Join(flags, " ")
}

// minShrunkDurationUs is the shortest run Shrink tries.
const minShrunkDurationUs = 250_000

// Shrink looks for a smaller run of proto's seed that still fails as it did under base, with
// failure (a liveness failure, ErrUnfinished, or a safety one): it halves the clients per
// datacenter, then the duration, keeping each step that still fails, within budget runs. It
// returns the smallest failing overrides (base's parameters included) and their error, or ok
// false if no smaller run failed.
func Shrink(proto string, seed uint64, base Overrides, failure error, budget int) (best Overrides, bestErr error, ok bool) {
	liveness := errors.Is(failure, ErrUnfinished)
	clients, durationUs := runSize(proto, seed, base)
	current := Overrides{Params: base.Params, ClientsPerDC: clients, DurationUs: durationUs}
	try := func(candidate Overrides) bool {
		if budget == 0 {
			return false
		}
		budget--
		_, err := CheckSeed(proto, seed, candidate)
		if err == nil || errors.Is(err, ErrUnfinished) != liveness {
			return false
		}
		current, best, bestErr, ok = candidate, candidate, err, true
		return true
	}
	for current.ClientsPerDC > 1 {
		next := current
		next.ClientsPerDC /= 2
		if !try(next) {
			break
		}
	}
	for current.DurationUs/2 >= minShrunkDurationUs {
		next := current
		next.DurationUs /= 2
		if !try(next) {
			break
		}
	}
	return best, bestErr, ok
}

// Campaign runs many seeds of one protocol, or of one of the shared log's swarms (IsLog), as
// `meridian swarm` does.
type Campaign struct {
	Protocol string
	// From is the first seed; Seeds how many consecutive seeds to run.
	From, Seeds uint64
	// Parallel is how many seeds run at once (at least 1).
	Parallel int
	// Overrides apply to every seed (replaying a shrunk failure).
	Overrides Overrides
	// KeepGoing runs every seed after a failure; otherwise the campaign stops handing out seeds
	// at the first failure and reports the lowest failing seed among those that ran.
	KeepGoing bool
	// Progress, if not nil, is called after every seed with the seeds done and failed so far,
	// from one goroutine at a time.
	Progress func(done, failed uint64)
}

// Failure is one failing seed.
type Failure struct {
	Seed uint64
	Err  error
}

// Summary is what a campaign found.
type Summary struct {
	Protocol string
	// Seeds is how many seeds ran; Failures lists those that failed, by seed.
	Seeds    uint64
	Failures []Failure
	// Committed counts the committed transactions the checker checked, over every seed (for
	// the shared logs, the appends answered and checked).
	Committed int
	Wall      time.Duration
}

// Run runs the campaign until its seeds are done, it stops at a failure, or ctx ends.
func (c Campaign) Run(ctx context.Context) Summary {
	start := time.Now()
	sum := Summary{Protocol: c.Protocol}
	seeds := make(chan uint64)
	var mu sync.Mutex
	stop := false
	var wg sync.WaitGroup
	for range max(1, c.Parallel) {
		wg.Go(func() {
			for seed := range seeds {
				committed, err := CheckSeed(c.Protocol, seed, c.Overrides)
				mu.Lock()
				sum.Seeds++
				sum.Committed += committed
				if err != nil {
					sum.Failures = append(sum.Failures, Failure{Seed: seed, Err: err})
					stop = stop || !c.KeepGoing
				}
				if c.Progress != nil {
					c.Progress(sum.Seeds, uint64(len(sum.Failures)))
				}
				mu.Unlock()
			}
		})
	}
	for seed := c.From; seed < c.From+c.Seeds; seed++ {
		mu.Lock()
		halt := stop
		mu.Unlock()
		if halt || ctx.Err() != nil {
			break
		}
		select {
		case seeds <- seed:
		case <-ctx.Done():
		}
	}
	close(seeds)
	wg.Wait()
	slices.SortFunc(sum.Failures, func(a, b Failure) int { return cmp.Compare(a.Seed, b.Seed) }) // workers finish out of order
	sum.Wall = time.Since(start)
	return sum
}
