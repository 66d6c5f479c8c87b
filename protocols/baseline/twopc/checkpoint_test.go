package twopc

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
)

// TestCheckpointRoundTrip restores 2PC-over-Paxos replicas from checkpoints taken all through
// swarm runs (with coordinator fail-overs) and requires the restored replicas to behave exactly
// as the originals.
func TestCheckpointRoundTrip(t *testing.T) { checkpointtest.RoundTrip(t, "2pc-paxos", 4) }
