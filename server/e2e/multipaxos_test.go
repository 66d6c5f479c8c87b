package e2e

import "testing"

// TestMultiPaxosEndToEnd starts a three-datacenter cluster (table4.1, emulated WAN) of each
// Multi-Paxos placement as real processes, so its messages cross the batching and Multi-Paxos
// codecs and the durable input log, runs three seconds of the contended workload, and requires
// commits and a clean checker verdict.
func TestMultiPaxosEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	for _, proto := range []string{"multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) {
			cfg, _ := startCluster(t, "table4.1", proto)
			res, err := runShortWorkload(cfg)
			if err != nil {
				t.Fatal(err)
			}
			committed := 0
			for _, dc := range res.DCs {
				committed += dc.Committed
			}
			t.Logf("%d committed; checker: %s", committed, res.Checker.Summary())
			if committed == 0 || !res.Checker.OK {
				t.Fatalf("%d committed; checker: %s", committed, res.Checker.Summary())
			}
		})
	}
}

// TestMultiPaxosCrashRestart is TestClusterCrashRestart for multipaxos-lo: SIGKILL and restart of
// C, B and then A, the leader (table4.1's minimum mean RTT), under load. No acknowledged commit
// may be lost, and the surviving datacenters must keep committing while each is down, so the
// followers must elect a new leader while A is.
func TestMultiPaxosCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	crashRestart(t, "multipaxos-lo")
}
