package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapHeadroomBytes bounds how far the heap may grow above its live data between two
// collections of a simulation (see tuneSimulationGC).
const heapHeadroomBytes = 256 << 20

// tuneSimulationGC sets the garbage collector up for a simulation, a batch job whose heap is
// mostly short-lived: GOGC=400 (unless GOGC is set), which lets the heap grow to five times its
// live data between collections and makes a run about 15% faster (docs/BENCHMARKS.md), and
// (unless GOMEMLIMIT is set) a soft memory limit, moved after every collection to the live heap
// plus heapHeadroomBytes, so that a run with a large live heap (a long run's history, two TCC
// runs side by side) collects more often instead of growing to five times that heap. A small
// heap never reaches the limit, so the main job runs as before.
func tuneSimulationGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	boundHeapGrowth.Do(func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		onEveryGC(func() {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				debug.SetMemoryLimit(int64(sample[0].Value.Uint64()) + heapHeadroomBytes)
			}
		})
		debug.SetMemoryLimit(heapHeadroomBytes)
	})
}

// boundHeapGrowth starts the memory limit's updates once per process (tests run many benches).
var boundHeapGrowth sync.Once

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
