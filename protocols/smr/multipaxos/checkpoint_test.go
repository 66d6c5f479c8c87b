package multipaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestCheckpointRoundTrip restores Multi-Paxos replicas (behind the network batching, whose
// buffers are checkpointed too, and with instance batching, the leader's open batch included)
// from checkpoints taken all through swarm runs, with leader fail-overs, and requires the
// restored replicas to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, proto := range []string{"multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) { checkpointtest.RoundTrip(t, proto, 3) })
		t.Run(proto+"/instance", func(t *testing.T) { checkpointtest.RoundTripWith(t, proto, 3, swarm.InstanceBatching) })
	}
}
