package chariots

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/registry"
)

func init() {
	registry.Register("chariots", registry.Entry{
		Description: "Chariots: a geo-replicated, causally ordered shared log; batchers, filters, token queues, FLStore maintainers, senders and receivers per datacenter (seed 000 ch. 7)",
		New:         Factory,
		Codec:       Codec,
		Family:      registry.Log,
		// A maintainer answers the append a batcher took.
		RepliesElsewhere: true,
		// Real nodes log and fsync every timer that fires: the simulator's 1 ms periods would
		// cost an idle two-datacenter deployment of 16 processes about 1.4 cores (measured,
		// docs/BENCHMARKS.md "Chariots on real processes").
		DeployParams: protocol.Params{"gossip": "5ms", "flush": "2ms", "hold": "2ms", "ship": "10ms", "row_every": "10ms"},
		Nodes: func(p protocol.Params, dcs int) ([]protocol.Node, error) {
			l, err := LayoutOf(p, dcs)
			if err != nil {
				return nil, err
			}
			return l.Placements(), nil
		},
		Roles: func(p protocol.Params, dcs int) ([]string, error) {
			l, err := LayoutOf(p, dcs)
			if err != nil {
				return nil, err
			}
			return l.RoleNames(), nil
		},
	})
}

// LayoutOf is the layout of a deployment with parameters p over dcs datacenters (it does not
// depend on the RTTs).
func LayoutOf(p protocol.Params, dcs int) (*flstore.Layout, error) {
	c, err := ParseConfig(dcs, p, 0)
	if err != nil {
		return nil, err
	}
	return c.Layout, nil
}
