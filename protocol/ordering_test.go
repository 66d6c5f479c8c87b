package protocol

import "testing"

// TestOrderingStatsSum: Add sums decisions and component counts by size, FastShare and
// Components derive the shares, and an empty sum has zeros rather than a division by zero.
func TestOrderingStatsSum(t *testing.T) {
	var s OrderingStats
	if s.FastShare() != 0 {
		t.Fatal("empty stats have a fast share")
	}
	if n, multi, largest := s.Components(); n != 0 || multi != 0 || largest != 0 {
		t.Fatalf("empty stats: %d components, share %v, largest %d", n, multi, largest)
	}
	s.Add(OrderingStats{FastDecisions: 3, SlowDecisions: 1, ComponentSizes: map[int]int{1: 6, 2: 1}})
	s.Add(OrderingStats{FastDecisions: 1, ComponentSizes: map[int]int{1: 2, 5: 1}})
	if s.FastDecisions != 4 || s.SlowDecisions != 1 || s.FastShare() != 0.8 {
		t.Fatalf("%+v, fast share %v; want 4 fast, 1 slow, 0.8", s, s.FastShare())
	}
	if n, multi, largest := s.Components(); n != 10 || multi != 0.2 || largest != 5 {
		t.Fatalf("%d components, share %v with more than one, largest %d; want 10, 0.2, 5", n, multi, largest)
	}
}
