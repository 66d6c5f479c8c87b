package fastccs

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
)

// TestCheckpointRoundTrip restores fastccs and fastccs-geo partitions from checkpoints taken all
// through swarm runs and requires the restored partitions to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, proto := range []string{"fastccs", "fastccs-geo"} {
		t.Run(proto, func(t *testing.T) { checkpointtest.RoundTrip(t, proto, 3) })
	}
}
