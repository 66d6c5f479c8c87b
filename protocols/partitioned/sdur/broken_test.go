package sdur_test

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
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
	swarm.CatchesBroken(t, "sdur", 6, 1, func(seed uint64) bench.Options {
		opts := bench.MicroDefaults()
		opts.Seed, opts.ClientsPerDC = seed, 4
		opts.DurationUs, opts.WarmupUs, opts.CooldownUs = 3_000_000, 0, 0
		opts.Workload = workload.Micro{ItemsPerPartition: 3, GlobalFraction: 0.5, ReadOnlyFraction: 0.5, ValueBytes: 4}
		opts.Params = protocol.Params{"snapshot_interval": "10ms"}
		return opts
	}, protocol.Params{"unsafe_snapshot_no_reconcile": "true"})
}
