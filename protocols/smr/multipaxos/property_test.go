package multipaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestPropertySafety runs both variants over the swarm's random seeds (skew, jitter, contention,
// outages that sometimes take the leader, partitions, slow links, lossy, duplicating and
// reordering networks, random leases short enough to trigger fail-overs) and requires the checker
// to find no anomaly and every transaction to finish once the faults end.
func TestPropertySafety(t *testing.T) {
	for _, proto := range []string{"multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) {
			swarm.Run(t, proto, "go test ./protocols/smr/multipaxos -run 'TestPropertySafety/"+proto+"$'")
		})
	}
}
