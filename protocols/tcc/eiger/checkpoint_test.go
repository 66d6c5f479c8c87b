package eiger

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol/txn"
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

// TestCompactAnswersReadsAlike merges runs of collected versions below a floor and requires
// every read by time to find what it found before: the same version where it is live, a
// collected one (Retry) where it was collected, the initial version before the first.
func TestCompactAnswersReadsAlike(t *testing.T) {
	// Commit times 10..90; collected: 20, 30, 40 (a run), 60, 80, 90 (a run above the floor).
	collected := map[int64]bool{20: true, 30: true, 40: true, 60: true, 80: true, 90: true}
	before := keyState{}
	for ct := int64(10); ct <= 90; ct += 10 {
		before.versions = append(before.versions, version{writer: txn.ID(ct), ct: ct, collected: collected[ct]})
	}
	before.versions = append(before.versions, version{writer: 100, ct: 100})
	after := keyState{versions: slices.Clone(before.versions)}
	after.compact(85)
	if got := len(after.versions); got != 8 {
		t.Fatalf("%d versions after compacting, want 8 (20..40 merged into 20; 80 and 90 straddle the floor)", got)
	}
	read := func(k *keyState, t int64) (writer txn.ID, retry bool) {
		i := k.at(t)
		if i < 0 {
			return txn.None, false
		}
		if k.versions[i].collected {
			return txn.None, true
		}
		return k.versions[i].writer, false
	}
	for ts := int64(0); ts <= 110; ts++ {
		w1, r1 := read(&before, ts)
		w2, r2 := read(&after, ts)
		if w1 != w2 || r1 != r2 {
			t.Fatalf("read at %d: %v (retry %v) after compacting, %v (retry %v) before", ts, w2, r2, w1, r1)
		}
	}
}
