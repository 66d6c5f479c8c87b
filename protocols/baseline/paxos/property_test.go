package paxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestPropertySafety runs both baselines over swarm.SeedsPerProtocol random seeds (topologies,
// jitter, clock errors, outages, partitions, slow links, lossy/duplicating/reordering networks):
// the checker must find no anomaly, the replicas must converge, and every transaction must be
// decided once the faults are over.
func TestPropertySafety(t *testing.T) {
	for _, proto := range []string{"paxos-commit", "paxos-cp"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			swarm.Run(t, proto, "go test ./paxos -run 'TestPropertySafety/"+proto+"$'")
		})
	}
}
