package e2e

import "testing"

// TestALVINEndToEnd starts a three-datacenter cluster (table4.1, emulated WAN) of ALVIN and of
// ALVIN-NF as real processes, so POB's messages cross the wire codec and the durable input log,
// runs three seconds of the contended workload, and requires commits and a clean checker verdict.
func TestALVINEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	for _, proto := range []string{"alvin", "alvin-nf"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			cfg, _ := startCluster(t, "table4.1", proto)
			res, err := runShortWorkload(cfg)
			if err != nil {
				t.Fatal(err)
			}
			committedClean(t, res)
		})
	}
}

// TestALVINCrashRestart kills an ALVIN (and an ALVIN-NF) node with SIGKILL during load and
// restarts it, repeatedly (crashRestart): no acknowledged commit is lost, the replicas converge,
// and the surviving datacenters keep committing while a node is down (a classic quorum of 2 of
// 3).
func TestALVINCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	for _, proto := range []string{"alvin", "alvin-nf"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			crashRestart(t, proto)
		})
	}
}
