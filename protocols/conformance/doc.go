// Package conformance holds the tests that run whole protocols in the simulator and check them
// against the papers: latencies against the lower bound and the spec's models, liveness under
// datacenter outages, and safety (serializability and replica convergence, by the checker) over
// hundreds of random seeds with contention, jitter, clock skew and faults. It has no non-test
// code beyond this comment.
package conformance
