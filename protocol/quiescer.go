package protocol

// Quiescer is implemented by replicas that can tell whether they still have protocol work in
// flight: a decision to announce to a replica that has not acknowledged it, a retransmission, an
// instance to recover or to execute. At the end of a simulated run the driver waits, besides
// equal version counts, for every replica that implements it to be quiescent: under a
// partial-order protocol (EPaxos, ALVIN) two replicas may have executed different
// non-conflicting transactions and hold the same number of versions, so counting alone could
// end a run while a decision is still travelling.
type Quiescer interface {
	// Quiescent reports whether the replica has nothing left to do without new input.
	Quiescent() bool
}
