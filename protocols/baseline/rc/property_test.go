package rc

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestPropertySafety runs Replicated Commit over the swarm's random seeds (skew, jitter,
// contention, outages, partitions, slow links, lossy, duplicating and reordering networks) and
// requires the checker to find no anomaly and every transaction to be decided once faults end.
func TestPropertySafety(t *testing.T) {
	swarm.Run(t, "rc", "go test ./rc -run TestPropertySafety")
}

// TestSwarmSeed2918 is the seed a 10,000-seed campaign found (`meridian swarm --protocol rc
// --seed 2918`): a decision O lost was still being retransmitted when the run ended, and the
// replicas' version counts matched by chance. The run must now wait until the replicas hold the
// same version orders, not only as many versions (tools/bench converged), and pass.
func TestSwarmSeed2918(t *testing.T) {
	if _, err := swarm.Check("rc", swarm.Draw("rc", 2918)); err != nil {
		t.Fatal(err)
	}
}
