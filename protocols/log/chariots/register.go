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
