package mf

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// randomParams is Message Futures' registry.Entry.RandomParams: the propagation interval, and
// for about a third of the datacenters an interval of their own, up to 200 ms (the asymmetric
// settings of Figures 3.8 and 3.9).
func randomParams(r *rand.Rand, topo *topology.Topology, intervalMs int) protocol.Params {
	p := protocol.Params{ParamInterval: fmt.Sprintf("%dms", intervalMs)}
	for _, dc := range topo.DCs {
		if r.IntN(3) == 0 {
			p[ParamInterval+"."+dc] = fmt.Sprintf("%dms", 1+r.IntN(200))
		}
	}
	return p
}
