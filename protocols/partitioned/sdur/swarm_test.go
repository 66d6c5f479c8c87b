package sdur_test

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestSwarm runs every S-DUR variant over many random seeds (swarm: the WAN 1 and WAN 2
// deployments and spread placements, contention, global and snapshot read-only transactions,
// leader and node crashes, cut links, datacenter partitions, slow links, lossy and reordering
// networks) and requires the checker to find no anomaly and every transaction to finish once the
// faults end.
func TestSwarm(t *testing.T) {
	for _, proto := range []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"} {
		t.Run(proto, func(t *testing.T) {
			swarm.Run(t, proto, "go test ./protocols/partitioned/sdur -run 'TestSwarm/"+proto+"$'")
		})
	}
}
