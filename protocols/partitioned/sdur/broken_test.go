package sdur_test

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// TestCheckerCatchesUnreconciledSnapshots proves the checker can fail S-DUR: publishing each
// partition's SC as the snapshot without the reconciliation of spec §3.6 (the uncorrected rule,
// unsafe_snapshot_no_reconcile) lets a read-only transaction see a global at one partition and
// miss it at another, and the checker must find such a cycle on some of a few seeds with many
// globals, many read-only transactions, few keys and frequent snapshots; the same runs with the
// correction must pass.
func TestCheckerCatchesUnreconciledSnapshots(t *testing.T) {
	const seeds = 6
	caught := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		opts := bench.MicroDefaults()
		opts.Seed, opts.ClientsPerDC = seed, 4
		opts.DurationUs, opts.WarmupUs, opts.CooldownUs = 3_000_000, 0, 0
		opts.Workload = workload.Micro{ItemsPerPartition: 3, GlobalFraction: 0.5, ReadOnlyFraction: 0.5, ValueBytes: 4}
		for _, unsafe := range []string{"false", "true"} {
			opts.Params = protocol.Params{"snapshot_interval": "10ms", "unsafe_snapshot_no_reconcile": unsafe}
			res, err := bench.Run(opts, "sdur")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case unsafe == "false" && (res.Problem() != nil || res.Unfinished > 0):
				t.Fatalf("seed %d with reconciliation: %v, %d unfinished", seed, res.Problem(), res.Unfinished)
			case unsafe == "true" && !res.Checker.OK:
				caught++
				if caught == 1 {
					t.Logf("seed %d: %s", seed, res.Checker.Summary())
				}
			}
		}
	}
	if caught == 0 {
		t.Fatalf("the checker caught the unreconciled snapshots on none of %d seeds", seeds)
	}
	t.Logf("caught on %d of %d seeds", caught, seeds)
}
