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
