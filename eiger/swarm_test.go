package eiger

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestSwarm runs Eiger over 200 random seeds in the simulator (internal/swarm.TCCOptions: 2–8
// partitions, contention, write-heavy mixes, random transaction timeouts, either EVT reading, crashed
// partitions and cut links) and requires the TCC checker (C1–C6, at most 3 rounds per ROT) to pass, every read
// to return its version's value and every transaction to finish once the faults are over.
func TestSwarm(t *testing.T) {
	swarm.RunTCC(t, "eiger", "go test ./eiger -run TestSwarm")
}
