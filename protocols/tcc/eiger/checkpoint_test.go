package eiger

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
)

// TestCheckpointRoundTrip restores Eiger partitions from checkpoints taken all through swarm
// runs and requires the restored partitions to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) { checkpointtest.RoundTrip(t, "eiger", 3) }
