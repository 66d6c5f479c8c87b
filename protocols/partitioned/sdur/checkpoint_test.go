package sdur

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
)

// TestCheckpointRoundTrip restores S-DUR replicas of every variant from checkpoints taken all
// through swarm runs and requires the restored replicas to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, name := range []string{"sdur", "sdur-delay", "sdur-threshold", "sdur-votebcast"} {
		t.Run(name, func(t *testing.T) { checkpointtest.RoundTrip(t, name, 2) })
	}
}
