package wren_test

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	_ "github.com/meridian-kv/meridian/protocols/tcc/wren" // registers wren
)

// TestSwarm runs Wren over 200 random seeds with crashed partitions and cut links
// (swarm.TCCOptions) and random parameters (gossip mode and period, timeouts short enough to
// fire), and requires the TCC checker (C1–C6) to pass, every read's value to be its version's,
// and every transaction to finish once the faults heal.
func TestSwarm(t *testing.T) {
	swarm.RunTCC(t, "wren", "go test ./wren -run TestSwarm", nil)
}
