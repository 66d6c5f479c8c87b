package epaxos

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// TestMemoryStaysBounded: with gc_after = 1s a replica's instances stay at what about a second
// decides however long the run; with gc_after = 1h they grow with the run
// (swarm.CheckRecordsBounded). EPaxos keeps no per-client watermark.
func TestMemoryStaysBounded(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	swarm.CheckRecordsBounded(t, topo, New, func(p protocol.Replica) (int, int) {
		return len(p.(*Replica).insts), 0
	})
}

// TestPropertySafetyWithEagerGC reruns swarm seeds with gc_after = 50ms, so that late and
// duplicated messages meet forgotten instances (swarm.RunEagerGC).
func TestPropertySafetyWithEagerGC(t *testing.T) { swarm.RunEagerGC(t, "epaxos") }
