package fastccs

import (
	"bytes"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/tccscript"
)

// TestCheckpointRoundTrip restores fastccs and fastccs-geo partitions from checkpoints taken all
// through swarm runs and requires the restored partitions to behave exactly as the originals.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, proto := range []string{"fastccs", "fastccs-geo"} {
		t.Run(proto, func(t *testing.T) { checkpointtest.RoundTrip(t, proto, 3) })
	}
}

// TestCheckpointStaysBounded: rewriting one key grows neither the checkpoint (beyond the
// varints of its growing sequence numbers and vectors) nor the store once compacted, and the
// version order on the Disk still lists every write.
func TestCheckpointStaysBounded(t *testing.T) {
	tccscript.CheckpointsStayBounded(t, New, NewClient, nil, 1)
}

// TestCheckpointVisibilityWaits restores partition A of scenario S1 with visibility tracking on,
// T1 committed at A and waiting for B's entry: the restored partition re-encodes alike and,
// once B's entry arrives, reports T1 visible as the original would.
func TestCheckpointVisibilityWaits(t *testing.T) {
	s := newScenario(t, nil)
	s.startTracking()
	c1 := s.client(pA)
	s.w.Advance(1_000)
	h := s.s1(c1)
	ckpt := checkpointOf(t, s.rep(pA))
	fresh := s.freshWithStore(pA)
	if err := fresh.RestoreCheckpoint(ckpt, Codec); err != nil {
		t.Fatal(err)
	}
	if again := checkpointOf(t, fresh); !bytes.Equal(again, ckpt) {
		t.Fatalf("restored partition re-encodes to %x, want %x", again, ckpt)
	}
	if fresh.visWaiting != 1 {
		t.Fatalf("restored partition has %d WOTs waiting to be visible, want 1", fresh.visWaiting)
	}
	fresh.onGossip(pB, &Gossip{Values: VC{0, 1}})
	if evs, _ := fresh.DrainVisibility(nil); len(evs) != 1 || evs[0].Tx != h.ID() || evs[0].CommitUs != 1_000 {
		t.Fatalf("restored partition reports %+v, want T1 committed at 1 ms", evs)
	}
}

// TestCheckpointMalformed feeds partition A's checkpoint of scenario S1, cut short at every
// length and with every byte altered, to fresh partitions: a cut checkpoint is an error, an
// altered one an error or a valid state, never a panic.
func TestCheckpointMalformed(t *testing.T) {
	s := newScenario(t, nil)
	s.startTracking()
	s.s1(s.client(pA))
	ckpt := checkpointOf(t, s.rep(pA))
	for n := range len(ckpt) {
		if err := newScenario(t, nil).rep(pA).RestoreCheckpoint(ckpt[:n], Codec); err == nil {
			t.Fatalf("checkpoint cut to %d of %d bytes restored", n, len(ckpt))
		}
	}
	for i := range ckpt {
		bad := slices.Clone(ckpt)
		bad[i] ^= 0xff
		_ = s.freshWithStore(pA).RestoreCheckpoint(bad, Codec)
	}
}

// freshWithStore returns partition p of a new scenario whose store holds what p's store holds
// here: a checkpoint names the committed versions the store keeps.
func (s *scenario) freshWithStore(p int) *Replica {
	s.t.Helper()
	fresh := newScenario(s.t, nil)
	if err := fresh.w.Store(p).RestoreCheckpoint(s.w.Store(p).AppendCheckpoint(nil)); err != nil {
		s.t.Fatal(err)
	}
	return fresh.rep(p)
}

func checkpointOf(t *testing.T, r *Replica) []byte {
	t.Helper()
	b, err := r.AppendCheckpoint(nil, Codec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
