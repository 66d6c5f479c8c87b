package flstore

import (
	"fmt"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
)

func init() {
	registry.Register("flstore", registry.Entry{
		Description: "FLStore: one datacenter's shared log over log maintainers owning round-robin position ranges, with indexers (seed 000 ch. 7)",
		New:         Factory,
		Codec:       Codec,
		Family:      registry.Log,
		// Real nodes log and fsync every timer that fires (see chariots' DeployParams).
		DeployParams: protocol.Params{"gossip": "5ms"},
		Nodes: func(p protocol.Params, dcs int) ([]protocol.Node, error) {
			l, err := StandaloneLayout(p, dcs)
			if err != nil {
				return nil, err
			}
			return l.Placements(), nil
		},
		Roles: func(p protocol.Params, dcs int) ([]string, error) {
			l, err := StandaloneLayout(p, dcs)
			if err != nil {
				return nil, err
			}
			return l.RoleNames(), nil
		},
	})
}

// StandaloneLayout is the layout Factory builds from p, on a topology of dcs datacenters (which
// must be 1).
func StandaloneLayout(p protocol.Params, dcs int) (*Layout, error) {
	if dcs != 1 {
		return nil, fmt.Errorf("flstore: the log of one datacenter runs on a one-datacenter topology, not %d (chariots spans datacenters)", dcs)
	}
	return LayoutFromParams(1, Roles, p, standaloneCounts)
}

// Placements returns the layout's nodes for a driver that places nodes by datacenter and
// partition (a cluster file): each node's Partition is its index within its datacenter.
func (l *Layout) Placements() []protocol.Node {
	out := make([]protocol.Node, len(l.Nodes))
	perDC := map[int]int{}
	for i, n := range l.Nodes {
		n.Partition = perDC[n.DC]
		perDC[n.DC]++
		out[i] = n
	}
	return out
}

// RoleNames names every node by its role and its index among the datacenter's nodes of that
// role ("maintainer0", "indexer0", "spare-queue0", …), in node order.
func (l *Layout) RoleNames() []string {
	out := make([]string, len(l.Nodes))
	seen := map[[2]int]int{} // (datacenter, role) → nodes named
	for i, n := range l.Nodes {
		k := [2]int{n.DC, int(l.Role[i])}
		name := strings.TrimSuffix(l.Role[i].String(), "s")
		if l.Spare[i] {
			name = "spare-" + name
		}
		out[i] = fmt.Sprintf("%s%d", name, seen[k])
		seen[k]++
	}
	return out
}
