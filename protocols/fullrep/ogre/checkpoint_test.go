package ogre

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/scripted"
	"github.com/meridian-kv/meridian/protocol"
)

// TestCheckpointRoundTrip restores Ogre and Basic-Ogre replicas from checkpoints taken all
// through swarm runs and requires the restored replicas to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, proto := range []string{"ogre", "ogre-basic"} {
		t.Run(proto, func(t *testing.T) { checkpointtest.RoundTrip(t, proto, 3) })
	}
}

// TestCheckpointRoundTripRoTUnits does the same with RoT units (unitOptions: one or two per
// datacenter, a unit crash or a replica–unit cut): the units' checkpoints too.
func TestCheckpointRoundTripRoTUnits(t *testing.T) {
	checkpointtest.RoundTripWith(t, "ogre", 2, unitOptions)
}

// TestCheckpointMalformed damages the checkpoints of the replicas of a three-datacenter world
// (t1's decision held from C, so that t2 waits in C's RoT buffer; t3 in flight) and requires
// every damaged copy to be refused or accepted without a panic.
func TestCheckpointMalformed(t *testing.T) {
	w := abc(t)
	holdDecisions(w, 1000, map[string][]int{"t1": {dcC}})
	w.Request(dcA, "t1", nil, []string{"x", "y"})
	w.RunTo(100)
	w.Request(dcB, "t2", []string{"y"}, []string{"y", "z"})
	w.RunTo(200)
	w.Request(dcC, "t3", nil, []string{"x", "z"})
	w.RunTo(205)
	if c := w.Replicas[dcC].(*Replica); len(c.rot.buffered) == 0 || len(c.coords) == 0 {
		t.Fatalf("C buffers %d transactions and coordinates %d: the scenario no longer reaches the state it damages", len(c.rot.buffered), len(c.coords))
	}
	for dc, r := range w.Replicas {
		ckpt, err := r.(*Replica).AppendCheckpoint(nil, Codec)
		if err != nil {
			t.Fatal(err)
		}
		checkpointtest.Malformed(t, ckpt, Codec, func() protocol.Checkpointer {
			fresh, err := scripted.New(w.Topo, New(true), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return fresh.Replicas[dc].(*Replica)
		})
	}
}
