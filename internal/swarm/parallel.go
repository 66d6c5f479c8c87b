package swarm

import (
	"runtime"
	"sync"
)

// ForSeeds calls run for every seed (i is its index in seeds) on GOMAXPROCS goroutines, so that
// a property test uses every core `go test` gives its package (the package running beside it
// is often one that mostly waits, such as the real-cluster tests). On an error it stops handing
// out seeds and returns the error of the lowest seed that failed, so the seed a test reports
// does not depend on the interleaving (each run is deterministic for its seed; every lower seed
// ran). run must be safe to call concurrently: simulated runs are, as they share no state; it
// stores what it measures at index i of slices of the caller's.
func ForSeeds(seeds []uint64, run func(i int, seed uint64) error) (failedSeed uint64, err error) {
	errs := make([]error, len(seeds))
	next := make(chan int)
	var mu sync.Mutex
	stop := false
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(seeds)) {
		wg.Go(func() {
			for i := range next {
				if errs[i] = run(i, seeds[i]); errs[i] != nil {
					mu.Lock()
					stop = true
					mu.Unlock()
				}
			}
		})
	}
	for i := range seeds {
		mu.Lock()
		halt := stop
		mu.Unlock()
		if halt {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for i, e := range errs {
		if e != nil {
			return seeds[i], e
		}
	}
	return 0, nil
}

// seedRange returns the seeds 1 to n.
func seedRange(n int) []uint64 {
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i) + 1
	}
	return seeds
}
