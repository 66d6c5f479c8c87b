package swarm

import "testing"

// Seeds returns the seeds a property test runs: the one MERIDIAN_SEED names, or 1 to
// SeedsPerProtocol (1 to 20 with -short). Property tests with drivers of their own (the log
// family's) use it to follow the same convention.
func Seeds(t *testing.T) []uint64 { return seedsToRun(t) }
