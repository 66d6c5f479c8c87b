package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/tools/bench"
)

// TestCheckpointRoundTrip restores EPaxos replicas (behind the network batching, and with
// instance batching, open batches included) from checkpoints taken all through swarm runs, with
// recoveries, and requires the restored replicas to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	t.Run("network", func(t *testing.T) { checkpointtest.RoundTrip(t, "epaxos", 3) })
	t.Run("instance", func(t *testing.T) { checkpointtest.RoundTripWith(t, "epaxos", 3, swarm.InstanceBatching) })
}

// TestCheckpointRoundTripTryPreAccept is TestCheckpointRoundTrip on the spec's 7 sites with
// TestPropertyTryPreAccept's crashes, so that checkpoints catch recoveries sending TryPreAccept
// and replicas holding tried values.
func TestCheckpointRoundTripTryPreAccept(t *testing.T) {
	checkpointtest.RoundTripWith(t, "epaxos", 10, func(seed uint64, opts *bench.Options) {
		moveTo(seed, paper7(), crashTwoTogether, opts)
	})
}
