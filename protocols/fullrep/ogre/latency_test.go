package ogre

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/sim"
)

// TestUncontendedLatency is scenario S9 (spec §7.6): on aws-helios with exact delays and no
// client hop, one client per datacenter over a huge key space commits after the RTT to its
// nearest majority (V 78, O 66, C 78, I 175, S 194 ms), within 1 ms; with C down for the whole
// run the others commit after the RTT to their nearest majority without C (V 84, O 175, I 175,
// S 210 ms).
func TestUncontendedLatency(t *testing.T) {
	opts := swarm.Uncontended(t, "aws-helios")
	swarm.CheckLatencies(t, opts, "ogre", map[string]float64{"V": 78, "O": 66, "C": 78, "I": 175, "S": 194})
	opts.Faults = []sim.Fault{{Kind: sim.Outage, DC: "C", StartUs: 0, EndUs: opts.DurationUs}}
	opts.ClientDCs = []string{"V", "O", "I", "S"}
	swarm.CheckLatencies(t, opts, "ogre", map[string]float64{"V": 84, "O": 175, "I": 175, "S": 210})
}
