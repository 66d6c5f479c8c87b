package logsim_test

import (
	"os"
	"testing"

	"github.com/meridian-kv/meridian/internal/checkpointtest"
	"github.com/meridian-kv/meridian/protocols/log/logsim"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// TestCheckpointRoundTrip runs swarm seeds (faults, chaos, elasticity, garbage collection on
// some) with every stage machine shadowed by one restored from its checkpoint every few inputs
// (internal/checkpointtest): each restored stage must re-encode to the same checkpoint and
// answer every later input exactly as the original, and the runs must pass their checks (4
// seeds; checkpointtest.LongSeeds with MERIDIAN_LONG=1).
func TestCheckpointRoundTrip(t *testing.T) {
	e, err := registry.Lookup("chariots")
	if err != nil {
		t.Fatal(err)
	}
	seeds := uint64(4)
	switch {
	case os.Getenv("MERIDIAN_LONG") != "":
		seeds = checkpointtest.LongSeeds
	case testing.Short():
		seeds = 2
	}
	restored := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		factory, result := checkpointtest.Shadow(e)
		o := logsim.Draw(seed)
		o.Factory = factory
		if _, err := logsim.Run(o); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, o)
		}
		n, err := result()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		restored += n
	}
	if restored < 100 {
		t.Fatalf("only %d checkpoints restored", restored)
	}
	t.Logf("%d checkpoints restored and followed", restored)
}
