package e2e

import "testing"

// TestEPaxosCrashRestart runs EPaxos as a real three-datacenter cluster (table4.1, emulated
// WAN), so its messages cross the wire codec and the durable input log, and kills one node with
// SIGKILL during load and restarts it, repeatedly (crashRestart): no acknowledged commit may be
// lost, the replicas must converge, the history must be serializable, and the two surviving
// datacenters (a classic and fast quorum of three) keep committing while a node is down.
func TestEPaxosCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	crashRestart(t, "epaxos")
}
