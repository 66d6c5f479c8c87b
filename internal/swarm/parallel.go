package swarm

import (
	"runtime"
	"sync"

	"github.com/meridian-kv/meridian/tools/bench"
)

// checkSeeds runs check for every seed on GOMAXPROCS goroutines, so that a property test uses
// every core `go test` gives its package (the other package running beside it is often one that
// waits, such as the real-cluster tests), and returns the results in seed order. On a failure it
// stops handing out seeds and returns the failure of the lowest seed that failed among those
// that ran, so the seed a test reports does not depend on the interleaving (each run is
// deterministic for its seed). Each seed's run is independent: the simulator keeps no state
// between runs.
func checkSeeds(seeds []uint64, check func(seed uint64) (*bench.Result, error)) (results []*bench.Result, failedSeed uint64, err error) {
	results = make([]*bench.Result, len(seeds))
	errs := make([]error, len(seeds))
	next := make(chan int)
	var mu sync.Mutex
	stop := false
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(seeds)) {
		wg.Go(func() {
			for i := range next {
				results[i], errs[i] = check(seeds[i])
				if errs[i] != nil {
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
			return results, seeds[i], e
		}
	}
	return results, 0, nil
}
