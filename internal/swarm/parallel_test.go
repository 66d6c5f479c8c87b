package swarm

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// TestUntilCaught: it returns the first seeds caught in seed order, stops handing out seeds
// once enough were caught, runs every seed when too few are, and reports the lowest seed's error.
func TestUntilCaught(t *testing.T) {
	seeds := SeedRange(100)
	var ran atomic.Int64
	every7 := func(_ int, seed uint64) (bool, error) {
		ran.Add(1)
		return seed%7 == 0, nil
	}
	caught, _, err := UntilCaught(seeds, 2, every7)
	if err != nil || !slices.Equal(caught, []int{6, 13}) || ran.Load() >= 50 {
		t.Fatalf("caught %v, err %v after %d runs; want indexes 6 and 13, soon", caught, err, ran.Load())
	}
	ran.Store(0)
	if caught, _, _ := UntilCaught(seeds, 20, every7); len(caught) != 14 || ran.Load() != 100 {
		t.Fatalf("caught %v after %d runs; want the 14 multiples of 7 after all 100", caught, ran.Load())
	}
	boom := errors.New("boom")
	_, seed, err := UntilCaught(seeds, 1, func(_ int, seed uint64) (bool, error) {
		if seed >= 3 {
			return false, boom
		}
		return false, nil
	})
	if seed != 3 || !errors.Is(err, boom) {
		t.Fatalf("seed %d, err %v; want seed 3's error", seed, err)
	}
}
