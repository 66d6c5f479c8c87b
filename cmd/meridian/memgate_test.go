package main

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestMemoryGatePausesYoungerRuns: the oldest run never waits; a younger one waits while the
// live heap is above the threshold, and goes on once the older run finishes or the heap falls.
func TestMemoryGatePausesYoungerRuns(t *testing.T) {
	var live atomic.Uint64
	live.Store(100)
	g := &memoryGate{pauseBytes: 50, live: live.Load}
	g.start(0)
	g.start(1)
	g.pace(0) // the oldest: returns at once
	resumed := make(chan struct{})
	go func() {
		g.pace(1)
		close(resumed)
	}()
	select {
	case <-resumed:
		t.Fatal("run 1 went on while run 0 ran and the heap was above the threshold")
	case <-time.After(5 * gatePollInterval):
	}
	g.finish(0)
	<-resumed // now the oldest
	g.start(2)
	live.Store(10)
	g.pace(2) // below the threshold: returns at once
}

// TestMemoryLimit: a small heap keeps the full headroom, a heap near the budget is held to it,
// a heap past it gets a quarter.
func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ live, budget, want int64 }{
		{0, 224 * mib, 224 * mib},
		{40 * mib, 768 * mib, 296 * mib},
		{170 * mib, 224 * mib, 224 * mib},
		{600 * mib, 768 * mib, 768 * mib},
		{800 * mib, 768 * mib, 1000 * mib},
		{2000 * mib, 768 * mib, 2256 * mib},
	} {
		if got := memoryLimit(c.live, c.budget); got != c.want {
			t.Errorf("memoryLimit(%d MiB, %d MiB) = %d MiB, want %d MiB", c.live/mib, c.budget/mib, got/mib, c.want/mib)
		}
	}
}
