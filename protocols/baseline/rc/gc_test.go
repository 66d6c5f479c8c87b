package rc

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
)

// retained counts the per-transaction records a replica holds.
func (r *Replica) retained() int {
	return len(r.decided) + len(r.outcomes) + len(r.parts) + len(r.coords) + len(r.doomed)
}

// TestMemoryStaysBounded: with gc_after = 1s a replica's transaction records stay at what about a
// second decides however long the run, and its watermarks grow only with the clients; with
// gc_after = 1h they grow with the run (swarm.CheckRecordsBounded).
func TestMemoryStaysBounded(t *testing.T) {
	swarm.CheckRecordsBounded(t, three(), New, func(p protocol.Replica) (int, int) {
		r := p.(*Replica)
		return r.retained(), len(r.forgot)
	})
}

// TestPropertySafetyWithEagerGC reruns swarm seeds with gc_after = 50ms, so that late and
// duplicated messages meet forgotten transactions (swarm.RunEagerGC).
func TestPropertySafetyWithEagerGC(t *testing.T) { swarm.RunEagerGC(t, "rc") }
