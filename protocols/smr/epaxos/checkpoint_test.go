package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
)

// TestCheckpointRoundTrip restores EPaxos replicas (behind the network batching) from
// checkpoints taken all through swarm runs, with recoveries, and requires the restored replicas
// to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) { checkpointtest.RoundTrip(t, "epaxos", 3) }
