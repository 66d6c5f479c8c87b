package e2e

import (
	"testing"
)

// TestBaselinesEndToEnd starts a three-datacenter cluster (table4.1, emulated WAN) of each
// baseline, of Ogre and Basic-Ogre, and of Multi-Paxos (both placements), in turn as real processes, so its messages cross the wire codec and the durable
// input log, runs three seconds of the contended workload through the client library, and
// requires commits and a clean checker verdict (serializable, replicas converged).
func TestBaselinesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	for _, proto := range []string{"rc", "2pc-paxos", "paxos-commit", "paxos-cp", "ogre", "ogre-basic", "multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			cfg, _ := startCluster(t, "table4.1", proto)
			res, err := runShortWorkload(cfg)
			if err != nil {
				t.Fatal(err)
			}
			committed, aborted := 0, 0
			for _, dc := range res.DCs {
				committed += dc.Committed
				aborted += dc.Aborted
			}
			t.Logf("%d committed, %d aborted; checker: %s", committed, aborted, res.Checker.Summary())
			if committed == 0 || !res.Checker.OK {
				t.Fatalf("%d committed; checker: %s", committed, res.Checker.Summary())
			}
		})
	}
}
