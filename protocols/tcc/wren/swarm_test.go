package wren_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/tcc/wren"
)

// TestSwarm runs Wren over 200 random seeds with crashed partitions and cut links
// (swarm.TCCOptions) and random parameters (gossip mode and period, timeouts short enough to
// fire), and requires the TCC checker (C1–C6) to pass, every read's value to be its version's,
// and every transaction to finish once the faults heal.
func TestSwarm(t *testing.T) {
	swarm.RunTCC(t, "wren", "go test ./wren -run TestSwarm", func(r *rand.Rand) protocol.Params {
		return protocol.Params{
			wren.ParamStabInterval:  fmt.Sprintf("%dus", 500+r.IntN(20_000)),
			wren.ParamGossip:        []string{wren.GossipAll, wren.GossipTree}[r.IntN(2)],
			wren.ParamTxTimeout:     fmt.Sprintf("%dms", 50+r.IntN(500)),
			wren.ParamRetryInterval: fmt.Sprintf("%dms", 5+r.IntN(20)),
		}
	})
}
