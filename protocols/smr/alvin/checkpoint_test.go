package alvin

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/scripted"
	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
)

// TestCheckpointRoundTrip restores ALVIN replicas, with and without fast decisions, behind
// network batching and with instance batching (open batches included), from checkpoints taken
// all through swarm runs and requires the restored replicas to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, proto := range []string{"alvin", "alvin-nf"} {
		t.Run(proto, func(t *testing.T) { checkpointtest.RoundTrip(t, proto, 3) })
		t.Run(proto+"/instance", func(t *testing.T) { checkpointtest.RoundTripWith(t, proto, 3, swarm.InstanceBatching) })
	}
}

// TestCheckpointMalformed damages the checkpoints of the replicas of scenario S2 (a fast and a
// classic decision) and requires every damaged copy to be refused or accepted without a panic.
func TestCheckpointMalformed(t *testing.T) {
	s := newScript(t, 3, true, nil)
	s.w.Request(0, "T1", rw("x"), rw("x"))
	s.w.Request(1, "T2", rw("x"), rw("x"))
	s.w.RunTo(15)
	if len(s.reps[0].leads) == 0 || len(s.reps[1].leads) == 0 {
		t.Fatal("nodes 0 and 1 lead nothing: the scenario no longer reaches the state it damages")
	}
	for node, r := range s.reps {
		ckpt, err := r.AppendCheckpoint(nil, Codec)
		if err != nil {
			t.Fatal(err)
		}
		checkpointtest.Malformed(t, ckpt, Codec, func() protocol.Checkpointer {
			w, err := scripted.New(equalTopology(3, 20), newFactory(true), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return w.Replicas[node].(*Replica)
		})
	}
}
