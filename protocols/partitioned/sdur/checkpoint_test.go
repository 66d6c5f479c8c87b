package sdur

import (
	"bytes"
	"slices"
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

// TestCheckpointMalformed takes partition 0's checkpoint with a local committed and a global
// pending for partition 1's vote (scenario SD1's pair, the second made global), checks a fresh
// replica restores it and re-encodes alike, and feeds it to fresh replicas cut short at every
// length and with every byte altered: a cut checkpoint is an error, an altered one an error or
// a valid state, never a panic.
func TestCheckpointMalformed(t *testing.T) {
	w := newWorld(t, 2, 1, nil)
	t1, t2 := w.tx("t1", 0, "x1", "x1"), w.tx("t2", 0, "x2 y1", "x2")
	w.deliver(0, payloads(t1[0], t2[0]))
	ckpt, err := w.replicas[0].AppendCheckpoint(nil, Codec)
	if err != nil {
		t.Fatal(err)
	}
	fresh := newWorld(t, 2, 1, nil).replicas[0]
	if err := fresh.RestoreCheckpoint(ckpt, Codec); err != nil {
		t.Fatal(err)
	}
	if len(fresh.pending) != 1 {
		t.Fatalf("restored replica has %d pending transactions, want the global", len(fresh.pending))
	}
	if again, err := fresh.AppendCheckpoint(nil, Codec); err != nil || !bytes.Equal(again, ckpt) {
		t.Fatalf("restored replica re-encodes to %x (%v), want %x", again, err, ckpt)
	}
	for n := range len(ckpt) {
		if err := newWorld(t, 2, 1, nil).replicas[0].RestoreCheckpoint(ckpt[:n], Codec); err == nil {
			t.Fatalf("checkpoint cut to %d of %d bytes restored", n, len(ckpt))
		}
	}
	for i := range ckpt {
		bad := slices.Clone(ckpt)
		bad[i] ^= 0xff
		_ = newWorld(t, 2, 1, nil).replicas[0].RestoreCheckpoint(bad, Codec)
	}
}
