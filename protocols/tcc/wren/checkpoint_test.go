package wren

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/tccscript"
)

// TestCheckpointRoundTrip restores Wren partitions from checkpoints taken all through swarm runs
// and requires the restored partitions to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) { checkpointtest.RoundTrip(t, "wren", 3) }

// TestCheckpointHoldsNoVersionOrder: rewriting one key leaves the checkpoint's size alone, and
// the version order still lists every write (it is on the Disk).
func TestCheckpointHoldsNoVersionOrder(t *testing.T) {
	tccscript.CheckpointsStayBounded(t, New, NewClient, nil, 0)
}
