package protocol

// OrderingReporter is implemented by replicas of ordering protocols that count how their
// decisions were reached (EPaxos; spec alvin.md §7.2 asks for the fast-path hit rate and EPaxos's
// strongly connected component statistics). The simulator driver sums the figures of every
// replica at the end of a run into the result (bench.Result.Ordering).
type OrderingReporter interface {
	OrderingStats() OrderingStats
}

// OrderingStats are one replica's (or, summed, a run's) ordering figures.
type OrderingStats struct {
	// FastDecisions and SlowDecisions count the commands this replica led from the start and
	// decided on the fast path (one round trip) or the slow path (an extra accept round).
	FastDecisions int
	SlowDecisions int
	// ComponentSizes counts the strongly connected components of the dependency graph this
	// replica executed, by their number of commands (EPaxos); nil for protocols without.
	ComponentSizes map[int]int
}

// Add adds o's figures to s.
func (s *OrderingStats) Add(o OrderingStats) {
	s.FastDecisions += o.FastDecisions
	s.SlowDecisions += o.SlowDecisions
	for size, n := range o.ComponentSizes {
		if s.ComponentSizes == nil {
			s.ComponentSizes = map[int]int{}
		}
		s.ComponentSizes[size] += n
	}
}

// FastShare is the share of decisions taken on the fast path (0 without decisions).
func (s *OrderingStats) FastShare() float64 {
	if total := s.FastDecisions + s.SlowDecisions; total > 0 {
		return float64(s.FastDecisions) / float64(total)
	}
	return 0
}

// Components returns the number of components executed, the share with more than one command,
// and the largest size (zeros without components).
func (s *OrderingStats) Components() (count int, multiShare float64, largest int) {
	multi := 0
	for size, n := range s.ComponentSizes {
		count += n
		if size > 1 {
			multi += n
		}
		largest = max(largest, size)
	}
	if count > 0 {
		multiShare = float64(multi) / float64(count)
	}
	return count, multiShare, largest
}
