package multipaxos

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// randomParams draws a swarm seed's lease and resend period (registry.Entry.RandomParams): a
// lease from 1.5 to 5 times the largest RTT, short enough that the swarm's outages and partitions
// make followers elect new leaders, and a resend period from 1 to 3 times the largest RTT.
func randomParams(r *rand.Rand, topo *topology.Topology, _ int) protocol.Params {
	maxRTTMs := 0.0
	for dc := range topo.N() {
		maxRTTMs = max(maxRTTMs, topo.MaxRTTMs(dc))
	}
	return protocol.Params{
		ParamLease:  fmt.Sprintf("%dms", int(maxRTTMs*(1.5+3.5*r.Float64()))+1),
		ParamResend: fmt.Sprintf("%dms", int(maxRTTMs*(1+2*r.Float64()))+1),
	}
}
