package e2e

import "testing"

// TestMultiPaxosCrashRestart is TestClusterCrashRestart for multipaxos-lo: SIGKILL and restart of
// C, B and then A, the leader (table4.1's minimum mean RTT), under load. No acknowledged commit
// may be lost, and the surviving datacenters must keep committing updates while each is down, so
// the followers must elect a new leader while A is.
func TestMultiPaxosCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	crashRestart(t, "multipaxos-lo")
}
