package eiger

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/tccscript"
)

// TestCheckpointRoundTrip restores Eiger partitions from checkpoints taken all through swarm
// runs and requires the restored partitions to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) { checkpointtest.RoundTrip(t, "eiger", 3) }

// TestCheckpointHoldsNoVersionOrder: rewriting one key grows the checkpoint by the decision
// Eiger remembers per transaction only (8 bytes), not by the key's collected versions, and the
// version order still lists every write (it is on the Disk).
func TestCheckpointHoldsNoVersionOrder(t *testing.T) {
	tccscript.CheckpointsStayBounded(t, New, NewClient, nil, 8)
}
