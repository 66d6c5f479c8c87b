package conformance

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestPropertySafety runs every core protocol over many random seeds (package swarm: skew,
// jitter, contention, outages, partitions, slow links, lossy and reordering networks) and
// requires the checker to find no anomaly and every transaction to finish once the faults end.
func TestPropertySafety(t *testing.T) {
	for _, proto := range []string{"helios-0", "helios-1", "helios-2", "helios-b", "mf"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			swarm.Run(t, proto, "go test ./conformance -run 'TestPropertySafety/"+proto+"$'")
		})
	}
}
