package ogre

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestPropertySafety runs Ogre and Basic-Ogre over the swarm's random seeds (clock skew and
// drift, jitter, contention, datacenter outages, partitions, slow links, lossy, duplicating and
// reordering networks) and requires the checker to find no anomaly — over the current storage's
// decisions and the RoT-Storage's version orders — and every transaction to be decided once the
// faults end.
func TestPropertySafety(t *testing.T) {
	for _, proto := range []string{"ogre", "ogre-basic"} {
		t.Run(proto, func(t *testing.T) {
			swarm.Run(t, proto, "go test ./protocols/fullrep/ogre -run 'TestPropertySafety/"+proto+"$'")
		})
	}
}

// TestSwarmSeed3578 is the seed a 10,000-seed campaign found (`meridian swarm --protocol ogre
// --seed 3578`): a decision S lost was still being retransmitted when the run ended, and the
// replicas' version counts matched by chance. The run must now wait until the replicas hold the
// same version orders, not only as many versions (tools/bench converged), and pass.
func TestSwarmSeed3578(t *testing.T) {
	if _, err := swarm.Check("ogre", swarm.Draw("ogre", 3578)); err != nil {
		t.Fatal(err)
	}
}
