package fastccs

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// randomParams is FastCCS's registry.Entry.RandomParams, VOPR style: gossip mode (never off:
// oracle C6 needs gossip), fan-out and period, timeouts short enough to fire, the GC period, the
// A11 flag and the retry count. The topology and interval are not used.
func randomParams(r *rand.Rand, _ *topology.Topology, _ int) protocol.Params {
	return protocol.Params{
		ParamGossip:            []string{gossipAll, gossipTree}[r.IntN(2)],
		ParamGossipFanout:      fmt.Sprint(1 + r.IntN(3)),
		ParamStabInterval:      fmt.Sprintf("%dms", 1+r.IntN(20)),
		ParamTxTimeout:         fmt.Sprintf("%dms", 20+r.IntN(300)),
		ParamGCInterval:        fmt.Sprintf("%dms", 10+r.IntN(100)),
		ParamMergeClockOnWrite: fmt.Sprint(r.IntN(2) == 0),
		ParamRetries:           fmt.Sprint(r.IntN(4)),
	}
}

// randomGeoParams is fastccs-geo's: FastCCS's, and a resend period of the commit stream to
// the other datacenters short enough to matter.
func randomGeoParams(r *rand.Rand, topo *topology.Topology, intervalMs int) protocol.Params {
	p := randomParams(r, topo, intervalMs)
	p[ParamGeoResend] = fmt.Sprintf("%dms", 20+r.IntN(300))
	return p
}
