package wren

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// randomParams is Wren's registry.Entry.RandomParams: gossip mode and period, timeouts short
// enough to fire. The topology and interval are not used.
func randomParams(r *rand.Rand, _ *topology.Topology, _ int) protocol.Params {
	return protocol.Params{
		ParamStabInterval:  fmt.Sprintf("%dus", 500+r.IntN(20_000)),
		ParamGossip:        []string{GossipAll, GossipTree}[r.IntN(2)],
		ParamTxTimeout:     fmt.Sprintf("%dms", 50+r.IntN(500)),
		ParamRetryInterval: fmt.Sprintf("%dms", 5+r.IntN(20)),
	}
}
