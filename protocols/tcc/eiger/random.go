package eiger

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// randomParams is Eiger's registry.Entry.RandomParams: the transaction timeout and
// housekeeping period short enough to fire, either EVT reading and either read rule (reads with
// or without the client's clock). The topology and interval are not used.
func randomParams(r *rand.Rand, _ *topology.Topology, _ int) protocol.Params {
	return protocol.Params{
		ParamTxTimeout:          fmt.Sprintf("%dms", 50+r.IntN(500)),
		ParamRetransmitInterval: fmt.Sprintf("%dms", 5+r.IntN(50)),
		ParamPartitionEVT:       fmt.Sprint(r.IntN(2) == 0),
		ParamReadClock:          fmt.Sprint(r.IntN(2) == 0),
	}
}
