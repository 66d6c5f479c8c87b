package alvin

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
)

// TestCheckpointRoundTrip restores ALVIN replicas, with and without fast decisions, from
// checkpoints taken all through swarm runs and requires the restored replicas to behave exactly
// as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, proto := range []string{"alvin", "alvin-nf"} {
		t.Run(proto, func(t *testing.T) { checkpointtest.RoundTrip(t, proto, 3) })
	}
}
