package e2e

import (
	"os"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/server/cluster"
)

// TestInstanceBatchingCrashRestart is crashRestart with instance batching
// (batch_mode=instance, spec alvin.md §5.3): ALVIN as a real three-datacenter cluster that
// checkpoints often, so batches cross the wire codec and open batches the checkpoints, with one
// node killed (SIGKILL) and restarted during load, repeatedly: no acknowledged commit lost, the
// replicas converged, the history serializable, the other datacenters committing meanwhile.
// MERIDIAN_LONG=1 runs EPaxos and Multi-Paxos LO too.
func TestInstanceBatchingCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	protocols := []string{"alvin"}
	if os.Getenv("MERIDIAN_LONG") != "" {
		protocols = append(protocols, "epaxos", "multipaxos-lo")
	}
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			cfg, dir := startClusterWith(t, "table4.1", proto, func(cfg *cluster.Config) {
				cfg.CheckpointBytes = testCheckpointBytes
				cfg.Params = protocol.Params{batch.ParamMode: batch.ModeInstance}
			})
			crashRestartCluster(t, cfg, dir, proto, []string{"C", "B", "A"}, crashRounds(t))
		})
	}
}
