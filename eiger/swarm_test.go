package eiger

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
)

// TestSwarm runs Eiger over 200 random seeds in the simulator (internal/swarm.TCCOptions: 2–8
// partitions, contention, write-heavy mixes, crashed partitions and cut links; random
// transaction timeouts and either EVT reading) and requires the TCC checker (C1–C6, at most 3
// rounds per ROT) to pass, every read to return its version's value and every transaction to
// finish once the faults are over.
func TestSwarm(t *testing.T) {
	swarm.RunTCC(t, "eiger", "go test ./eiger -run TestSwarm", func(r *rand.Rand) protocol.Params {
		return protocol.Params{
			ParamTxTimeout:          fmt.Sprintf("%dms", 50+r.IntN(500)),
			ParamRetransmitInterval: fmt.Sprintf("%dms", 5+r.IntN(50)),
			ParamPartitionEVT:       fmt.Sprint(r.IntN(2) == 0),
		}
	})
}
