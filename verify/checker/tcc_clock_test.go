package checker

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestClockMatchesDenseVectors builds random clocks by joins and raises, several operations per
// edit as checkCausal does, and compares them with dense vectors, the old ones too: persistence
// means a clock never changes when a newer one is built from it.
func TestClockMatchesDenseVectors(t *testing.T) {
	for _, sessions := range []int{1, 5, 32, 33, 1000, 40000} {
		rng := rand.New(rand.NewPCG(uint64(sessions), 7))
		sh := newClockShape(sessions)
		clocks := []*clockNode{nil}
		dense := [][]uint32{make([]uint32, sessions)}
		var edit uint32
		for range 300 {
			edit++
			a := rng.IntN(len(clocks))
			clk, want := clocks[a], slices.Clone(dense[a])
			for range 1 + rng.IntN(4) {
				if rng.IntN(2) == 0 {
					b := rng.IntN(len(clocks))
					clk = sh.join(clk, clocks[b], edit)
					for i, x := range dense[b] {
						want[i] = max(want[i], x)
					}
				} else {
					s, r := int32(rng.IntN(sessions)), uint32(rng.IntN(50))
					clk = sh.raise(clk, s, r, edit)
					want[s] = max(want[s], r)
				}
			}
			clocks, dense = append(clocks, clk), append(dense, want)
			// The new clock, and an older one that must not have changed.
			for _, i := range []int{len(clocks) - 1, rng.IntN(len(clocks))} {
				for s := range sessions {
					if got := sh.get(clocks[i], int32(s)); got != dense[i][s] {
						t.Fatalf("%d sessions: clock %d entry %d = %d, want %d", sessions, i, s, got, dense[i][s])
					}
				}
			}
		}
		for i, c := range clocks {
			for s := range sessions {
				if got := sh.get(c, int32(s)); got != dense[i][s] {
					t.Fatalf("%d sessions, at the end: clock %d entry %d = %d, want %d", sessions, i, s, got, dense[i][s])
				}
			}
		}
	}
}

// TestClockJoinSharesDominatedSubtrees: joining a clock with one it dominates allocates nothing
// and returns it unchanged.
func TestClockJoinSharesDominatedSubtrees(t *testing.T) {
	sh := newClockShape(5000)
	old := sh.raise(nil, 17, 3, 1)
	newer := sh.raise(sh.raise(old, 4000, 9, 2), 17, 5, 2)
	if got := sh.join(newer, old, 3); got != newer {
		t.Error("join with a dominated clock copied")
	}
	if got := sh.join(old, newer, 3); got != newer {
		t.Error("join of a dominated clock did not return the dominating one")
	}
	if allocs := testing.AllocsPerRun(100, func() { sh.join(newer, old, 4) }); allocs != 0 {
		t.Errorf("join with a dominated clock made %v allocations", allocs)
	}
}
