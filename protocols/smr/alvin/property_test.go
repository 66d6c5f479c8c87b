package alvin

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestPropertySafety runs ALVIN and ALVIN-NF over the swarm's random seeds (skew, jitter,
// contention, datacenter outages (crashes that freeze a node, its leader role included),
// partitions, slow links, lossy, duplicating and reordering networks; reads=sr or eus) and
// requires the checker to find no anomaly and every transaction to finish once faults end.
func TestPropertySafety(t *testing.T) {
	for _, proto := range []string{"alvin", "alvin-nf"} {
		t.Run(proto, func(t *testing.T) {
			swarm.Run(t, proto, "go test ./protocols/smr/alvin -run 'TestPropertySafety/"+proto+"$'")
		})
	}
}
