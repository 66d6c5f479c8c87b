package ogre

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
)

// TestCheckpointRoundTrip restores Ogre and Basic-Ogre replicas from checkpoints taken all
// through swarm runs and requires the restored replicas to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, proto := range []string{"ogre", "ogre-basic"} {
		t.Run(proto, func(t *testing.T) { checkpointtest.RoundTrip(t, proto, 3) })
	}
}

// TestCheckpointRoundTripRoTUnits does the same with RoT units (unitOptions: one or two per
// datacenter, a unit crash or a replica–unit cut): the units' checkpoints too.
func TestCheckpointRoundTripRoTUnits(t *testing.T) {
	checkpointtest.RoundTripWith(t, "ogre", 2, unitOptions)
}
