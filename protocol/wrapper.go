package protocol

// Wrapper is implemented by replicas that wrap another protocol's replica, such as the network
// batching of package protocols/smr/batch. A wrapper forwards the four Replica methods only;
// drivers and tools look for a replica's optional interfaces (Quiescer, OrderingReporter,
// VersionOrderer, tcc.VisibilityReporter) on Innermost(r), so that no wrapper has to forward
// every combination of them.
type Wrapper interface {
	// Inner returns the wrapped replica.
	Inner() Replica
}

// Innermost unwraps r through every Wrapper and returns the protocol's own replica.
func Innermost(r Replica) Replica {
	for {
		w, ok := r.(Wrapper)
		if !ok {
			return r
		}
		r = w.Inner()
	}
}
