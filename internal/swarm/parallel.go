package swarm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// ForSeeds calls run for every seed (i is its index in seeds) on GOMAXPROCS goroutines, so that
// a property test uses every core `go test` gives its package (the package running beside it
// is often one that mostly waits, such as the real-cluster tests). On an error it stops handing
// out seeds and returns the error of the lowest seed that failed, so the seed a test reports
// does not depend on the interleaving (each run is deterministic for its seed; every lower seed
// ran). run must be safe to call concurrently: simulated runs are, as they share no state; it
// stores what it measures at index i of slices of the caller's.
func ForSeeds(seeds []uint64, run func(i int, seed uint64) error) (failedSeed uint64, err error) {
	return forSeeds(seeds, run, func() bool { return false })
}

// UntilCaught is a negative control's loop: it calls find for seeds in order, on every core as
// ForSeeds does, until want of them caught something (find reports caught), and returns the
// indexes of the first want seeds that did, in seed order (fewer if the seeds ran out). Every
// seed below the last one returned ran, so the result does not depend on the interleaving. A
// control only has to show that the checker can fail: the seeds after its catches would decide
// nothing. An error of find stops it as in ForSeeds.
func UntilCaught(seeds []uint64, want int, find func(i int, seed uint64) (caught bool, err error)) (caughtAt []int, failedSeed uint64, err error) {
	found := make([]bool, len(seeds))
	var count atomic.Int64
	failedSeed, err = forSeeds(seeds, func(i int, seed uint64) error {
		c, err := find(i, seed)
		if c {
			found[i] = true
			count.Add(1)
		}
		return err
	}, func() bool { return count.Load() >= int64(want) })
	for i, c := range found {
		if c && len(caughtAt) < want {
			caughtAt = append(caughtAt, i)
		}
	}
	return caughtAt, failedSeed, err
}

// forSeeds is ForSeeds that also stops handing out seeds once enough reports true.
func forSeeds(seeds []uint64, run func(i int, seed uint64) error, enough func() bool) (failedSeed uint64, err error) {
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
		if halt || enough() {
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

// SeedRange returns the seeds 1 to n, as the swarms number them.
func SeedRange(n int) []uint64 {
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i) + 1
	}
	return seeds
}
