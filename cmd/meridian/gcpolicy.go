package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// heapHeadroomBytes bounds how far the heap may grow above its live data between two
// collections of a simulation (see tuneSimulationGC).
const heapHeadroomBytes = 256 << 20

// Heap budgets of `meridian bench` (--heap-budget-mib), in MiB.
const (
	// defaultHeapBudgetMiB is the budget of every workload but TCC: no run of the main job comes
	// near it (its live heap stays below 150 MB), a 10-minute helios-0 run (600 MB live) gets a
	// quarter of headroom instead of 256 MiB.
	defaultHeapBudgetMiB = 768
	// tccHeapBudgetMiB is the TCC workload's budget: each of its runs holds about 170 MB at its
	// peak (a history of about 440,000 transactions and the simulation), so that its runs go
	// mostly one after the other and the process stays under 300 MB (docs/BENCHMARKS.md).
	tccHeapBudgetMiB = 224
)

// memoryLimit is the soft memory limit for a live heap of liveBytes under a heap budget of
// budgetBytes: the live heap plus heapHeadroomBytes, but no more than the budget or the live
// heap plus a quarter, whichever is larger. A heap well below the budget collects at GOGC (a
// heap of 40 MB grows fivefold between collections); as it nears the budget, its headroom
// shrinks, to a quarter of the live heap once it is past the budget.
func memoryLimit(liveBytes, budgetBytes int64) int64 {
	return min(liveBytes+heapHeadroomBytes, max(budgetBytes, liveBytes+liveBytes/4))
}

// tuneSimulationGC sets the garbage collector up for a simulation, a batch job whose heap is
// mostly short-lived: GOGC=400 (unless GOGC is set), which lets the heap grow to five times its
// live data between collections and makes a run about 15% faster (docs/BENCHMARKS.md), and
// (unless GOMEMLIMIT is set) a soft memory limit, moved after every collection to memoryLimit of
// the live heap and budgetBytes, so that a run with a large live heap (a long run's history, a
// TCC run) collects more often instead of growing to five times that heap. The last call's
// budget holds (tests run many benches in one process).
func tuneSimulationGC(budgetBytes int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	heapBudgetBytes.Store(budgetBytes)
	boundHeapGrowth.Do(func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		onEveryGC(func() {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				debug.SetMemoryLimit(memoryLimit(int64(sample[0].Value.Uint64()), heapBudgetBytes.Load()))
			}
		})
	})
	debug.SetMemoryLimit(memoryLimit(0, budgetBytes))
}

// boundHeapGrowth starts the memory limit's updates once per process (tests run many benches).
var boundHeapGrowth sync.Once

// heapBudgetBytes is the budget of the last tuneSimulationGC.
var heapBudgetBytes atomic.Int64

// gcSentinel is an object nothing refers to, whose finalizer runs after the collection that
// finds it.
type gcSentinel struct{ _ *int } // a pointer keeps it out of the tiny allocator, whose finalizers may never run

// onEveryGC runs f on the finalizer goroutine after every garbage collection, for the life of
// the process.
func onEveryGC(f func()) {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		f()
		onEveryGC(f)
	})
}
