package store

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// TestCheckpointRoundTrip restores random stores (one of them numbering its keys in a table it
// shares with another store) and requires the same reads at every position, the same version
// orders and the same re-encoding.
func TestCheckpointRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		shared := NewKeys()
		NewShared(shared).Apply(txn.NewID(9, 9), w("z", "other store's key"))
		s := NewShared(shared)
		for i := range r.IntN(200) {
			var ws []txn.Write
			for range r.IntN(4) {
				ws = append(ws, txn.Write{Key: string(rune('a' + r.IntN(8))), Value: []byte{byte(i)}})
			}
			s.Apply(txn.NewID(txn.ClientID(r.IntN(3)+1), uint32(i+1)), ws)
		}
		ckpt := s.AppendCheckpoint(nil)
		got := New()
		if err := got.RestoreCheckpoint(ckpt); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if again := got.AppendCheckpoint(nil); !bytes.Equal(again, ckpt) {
			t.Fatalf("seed %d: the restored store re-encodes differently", seed)
		}
		if got.Seq() != s.Seq() || got.Versions() != s.Versions() || !reflect.DeepEqual(got.VersionOrder(), s.VersionOrder()) {
			t.Fatalf("seed %d: restored seq %d versions %d, want %d %d, or version orders differ", seed, got.Seq(), got.Versions(), s.Seq(), s.Versions())
		}
		for k := 'a'; k < 'a'+8; k++ {
			for seq := range s.Seq() + 1 {
				if a, b := got.GetAt(string(k), seq), s.GetAt(string(k), seq); a.Writer != b.Writer || a.Seq != b.Seq || !bytes.Equal(a.Value, b.Value) {
					t.Fatalf("seed %d: GetAt(%c, %d) = %+v, want %+v", seed, k, seq, a, b)
				}
			}
		}
	}
}

// TestCheckpointRejectsMalformed feeds every truncation and some corruptions of a checkpoint:
// each is refused (or, for a corruption that happens to stay well formed, accepted) without a
// panic, and a store that holds versions refuses any checkpoint.
func TestCheckpointRejectsMalformed(t *testing.T) {
	s := New()
	s.Apply(txn.NewID(1, 1), w("a", "1", "b", "2"))
	s.Apply(txn.NewID(1, 2), w("a", "3"))
	ckpt := s.AppendCheckpoint(nil)
	for i := range ckpt {
		if err := New().RestoreCheckpoint(ckpt[:i]); err == nil {
			t.Fatalf("a checkpoint cut to %d of %d bytes was accepted", i, len(ckpt))
		}
		bad := bytes.Clone(ckpt)
		bad[i] ^= 0xff
		New().RestoreCheckpoint(bad)
	}
	if err := New().RestoreCheckpoint(append(bytes.Clone(ckpt), 0)); err == nil {
		t.Fatal("trailing bytes were accepted")
	}
	if err := s.RestoreCheckpoint(ckpt); err == nil {
		t.Fatal("a store holding versions accepted a checkpoint")
	}
}

// TestSegmentsRebuildTheStore writes a store's versions as segments (each since the previous
// one, as a node that checkpoints often does), restores them in order into an empty store, and
// requires the store one full checkpoint restores; a segment out of order is refused.
func TestSegmentsRebuildTheStore(t *testing.T) {
	s := New()
	var segments [][]byte
	done := 0
	for i := range 300 {
		s.Apply(txn.NewID(1, uint32(i+1)), w(string(rune('a'+i%7)), "v", string(rune('a'+i%3)), "w"))
		if i%10 == 0 {
			s.Apply(txn.NewID(2, uint32(i+1)), nil) // a read-only commit moves the position only
		}
		if i%37 == 0 || i == 299 {
			segments = append(segments, s.AppendSegment(nil, done))
			done = s.Versions()
		}
	}
	got := New()
	for i, seg := range segments {
		if err := got.RestoreSegment(seg); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	if !bytes.Equal(got.AppendCheckpoint(nil), s.AppendCheckpoint(nil)) {
		t.Fatal("the store rebuilt from segments differs from the original")
	}
	if err := New().RestoreSegment(segments[1]); err == nil {
		t.Fatal("a segment restored into a store without the versions before it")
	}
	// A later segment corrupted anywhere (its key numbers index the keys written before it) is
	// refused or accepted, never a panic.
	for i := range segments[2] {
		s := New()
		s.RestoreSegment(segments[0])
		s.RestoreSegment(segments[1])
		bad := bytes.Clone(segments[2])
		bad[i] ^= 0x3
		s.RestoreSegment(bad)
	}
}

// BenchmarkRestoreSegments restores a store the size of a node's after 30 minutes of the main
// workload on a local cluster (about 576,000 versions of 50,000 Zipfian keys, in 48 segments),
// the bulk of a restart from a checkpoint.
func BenchmarkRestoreSegments(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.01, 1, 49_999)
	s := New()
	var segments [][]byte
	done := 0
	for i := range 240_000 {
		writes := make([]txn.Write, 2+i%2)
		for j := range writes {
			writes[j] = txn.Write{Key: fmt.Sprintf("user%08d", zipf.Uint64()), Value: fmt.Appendf(nil, "value of %08d", i)}
		}
		s.Apply(txn.NewID(txn.ClientID(1+i%60), uint32(i)), writes)
		if i%5_000 == 4_999 {
			segments = append(segments, s.AppendSegment(nil, done))
			done = s.Versions()
		}
	}
	b.ResetTimer()
	for range b.N {
		got := New()
		for _, seg := range segments {
			if err := got.RestoreSegment(seg); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestLegacySegments restores two segments in the first layout (each numbered its keys itself:
// a writes a=x b=y; then a read-only commit and c writes b=z c=w), as data directories written
// before the current layout hold, and continues in the current layout.
func TestLegacySegments(t *testing.T) {
	want := New()
	want.Apply(txn.NewID(1, 1), w("a", "x", "b", "y"))
	want.Apply(txn.NewID(2, 1), nil)
	want.Apply(txn.NewID(2, 2), w("b", "z", "c", "w"))
	got := New()
	for _, seg := range []string{"0001020161016202008180808010017801018180808010017900", "0203020162016302008280808020017a02018280808020017700"} {
		b, _ := hex.DecodeString(seg)
		if err := got.RestoreLegacySegment(b); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.AppendCheckpoint(nil), want.AppendCheckpoint(nil)) {
		t.Fatal("the store restored from legacy segments differs from the original")
	}
	want.Apply(txn.NewID(3, 1), w("d", "v", "a", "u"))
	got.Apply(txn.NewID(3, 1), w("d", "v", "a", "u"))
	if !bytes.Equal(got.AppendSegment(nil, 4), want.AppendSegment(nil, 4)) {
		t.Fatal("a segment after the legacy ones differs")
	}
}
