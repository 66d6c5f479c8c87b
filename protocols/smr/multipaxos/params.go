package multipaxos

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/topology"
)

// randomParams draws a swarm seed's lease, resend period and batching window
// (registry.Entry.RandomParams): a lease from 1.5 to 5 times the largest RTT, short enough that
// the swarm's outages and partitions make followers elect new leaders, a resend period from 1 to
// 3 times the largest RTT, and a batching window that is 0 (off) for about a quarter of the seeds
// and otherwise up to 1.5 times the spec's default.
func randomParams(r *rand.Rand, topo *topology.Topology, _ int) protocol.Params {
	maxRTTMs := 0.0
	for dc := range topo.N() {
		maxRTTMs = max(maxRTTMs, topo.MaxRTTMs(dc))
	}
	return protocol.Params{
		ParamLease:        fmt.Sprintf("%dms", int(maxRTTMs*(1.5+3.5*r.Float64()))+1),
		ParamResend:       fmt.Sprintf("%dms", int(maxRTTMs*(1+2*r.Float64()))+1),
		batch.ParamWindow: fmt.Sprint(max(0, r.IntN(2*batch.DefaultWindowMs(topo.N()))-batch.DefaultWindowMs(topo.N())/2)),
	}
}
