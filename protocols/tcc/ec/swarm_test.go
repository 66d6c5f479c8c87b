package ec_test

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestSwarm runs EC over 200 random seeds with crashed partitions and cut links
// (swarm.TCCOptions). EC promises only eventual consistency, so the checker may report
// causality and atomicity anomalies (C2, C3) but nothing else: no dirty read, no value that is
// not its version's, no write lost or invisible at quiescence (C6), every transaction finished.
// And it must report some: concurrent multi-partition WOTs over a small key space fracture
// EC's reads, and a checker that never sees it would be too weak (spec §3.1's negative control).
func TestSwarm(t *testing.T) {
	if n := swarm.RunTCC(t, "ec", "go test ./ec -run TestSwarm", nil); n == 0 {
		t.Fatal("the TCC checker found no causality or atomicity anomaly in 200 EC runs")
	}
}
