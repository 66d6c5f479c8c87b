package e2e

import (
	"os"
	"testing"

	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

// TestPerSiteCrashRestart runs ALVIN as a real cluster of three sites (table4.1) with three full
// replicas each (cluster.GeneratePerSite, `cluster up --nodes-per-dc 3`: nine processes, the
// nodes of a site 0.5 ms apart), kills one replica (B_1) with SIGKILL under load and restarts it:
// no acknowledged commit may be lost, the nine replicas must converge, the history must be
// serializable, and the other eight keep committing updates while B_1 is down. MERIDIAN_LONG=1
// adds EPaxos and Multi-Paxos with the leader at the lowest and the highest mean RTT.
func TestPerSiteCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	protocols := []string{"alvin"}
	if os.Getenv("MERIDIAN_LONG") != "" {
		protocols = append(protocols, "epaxos", "multipaxos-lo", "multipaxos-hi")
	}
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			bin := meridianBinary(t)
			topo, _ := topology.Preset("table4.1")
			dir := t.TempDir()
			cfg, err := cluster.GeneratePerSite(topo, "table4.1", proto, dir, freeBasePort(t, 3*topo.N()), 3)
			if err != nil {
				t.Fatal(err)
			}
			cfg.CheckpointBytes = testCheckpointBytes
			crashRestartCluster(t, bringUp(t, cfg, dir, bin), dir, proto, []string{"B_1"}, 1)
		})
	}
}
