package main

import (
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// gatePollInterval is how often a paused run looks at the heap again.
const gatePollInterval = 20 * time.Millisecond

// memoryGate bounds the memory of simulations run side by side (bench --parallel): the oldest
// unfinished run always goes on; a younger one pauses before its next virtual second while the
// live heap (as of the last collection) is above pauseBytes, and goes on when it falls below or
// once every older run has finished. Runs with small heaps (the main job's) run side by side as
// before; runs that each hold a large history (the TCC workload's, about 170 MB at the end of
// the simulation and during the check) run mostly one after the other, so that the process stays
// within its heap budget instead of holding two such runs. A paused simulation finishes later, not
// differently: its results are the same. The bench pauses above a quarter of its heap budget
// (--heap-budget-mib): a run paused there holds at most that much while an older one grows to its
// peak under the budget.
type memoryGate struct {
	pauseBytes uint64
	live       func() uint64 // the live heap, in bytes

	mu      sync.Mutex
	running []int // the runs started and not finished, ascending
}

// newMemoryGate returns a gate that pauses younger runs above pauseBytes of live heap.
func newMemoryGate(pauseBytes uint64) *memoryGate {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return &memoryGate{pauseBytes: pauseBytes, live: func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}}
}

// start registers run i as started.
func (g *memoryGate) start(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, _ := slices.BinarySearch(g.running, i)
	g.running = slices.Insert(g.running, at, i)
}

// finish registers run i as finished.
func (g *memoryGate) finish(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if at, ok := slices.BinarySearch(g.running, i); ok {
		g.running = slices.Delete(g.running, at, at+1)
	}
}

// pace returns when run i may simulate its next virtual second (bench.Options.Pace).
func (g *memoryGate) pace(i int) {
	for !g.oldest(i) && g.live() > g.pauseBytes {
		time.Sleep(gatePollInterval)
	}
}

// oldest reports whether i is the oldest run not finished.
func (g *memoryGate) oldest(i int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running) > 0 && g.running[0] == i
}
