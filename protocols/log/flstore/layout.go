package flstore

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
)

// Role is what a node of a log deployment does. FLStore has maintainers and indexers; Chariots
// adds the pipeline stages.
type Role uint8

// The roles, in the order Layout places them inside each datacenter.
const (
	Maintainer Role = iota + 1
	Indexer
	Batcher
	Filter
	Queue
	Sender
	Receiver
)

// roleNames are the roles' parameter names: "maintainers=3" deploys three active maintainers per
// datacenter, "spare_maintainers=1" one more, idle until an elasticity event adds it.
var roleNames = map[Role]string{Maintainer: "maintainers", Indexer: "indexers", Batcher: "batchers",
	Filter: "filters", Queue: "queues", Sender: "senders", Receiver: "receivers"}

// String names the role.
func (r Role) String() string { return roleNames[r] }

// Layout places a log deployment's nodes: in every datacenter, for each role in order, its
// active nodes and then its spares. Every node computes the same Layout from the run's
// topology size and parameters.
type Layout struct {
	Nodes []protocol.Node
	Role  []Role
	Spare []bool
	byDC  []map[Role][]protocol.NodeID
}

// NewLayout deploys, in each of dcs datacenters, active[r] nodes of role r (at least 1 of every
// role listed) and spare[r] spares, roles in the order of the Role constants.
func NewLayout(dcs int, roles []Role, active, spare map[Role]int) (*Layout, error) {
	l := &Layout{}
	for dc := range dcs {
		m := map[Role][]protocol.NodeID{}
		for _, r := range roles {
			if active[r] < 1 || spare[r] < 0 {
				return nil, fmt.Errorf("flstore: need at least one active %s and no negative spares", r)
			}
			for i := range active[r] + spare[r] {
				id := protocol.NodeID(len(l.Nodes))
				l.Nodes = append(l.Nodes, protocol.Node{ID: id, DC: dc})
				l.Role = append(l.Role, r)
				l.Spare = append(l.Spare, i >= active[r])
				m[r] = append(m[r], id)
			}
		}
		l.byDC = append(l.byDC, m)
	}
	return l, nil
}

// LayoutFromParams reads the per-datacenter counts of roles from p ("maintainers", ...,
// "spare_maintainers", ...; defaults in def) and builds the layout.
func LayoutFromParams(dcs int, roles []Role, p protocol.Params, def map[Role]int) (*Layout, error) {
	active, spare := map[Role]int{}, map[Role]int{}
	for _, r := range roles {
		var err error
		if active[r], err = p.Int(r.String(), def[r]); err != nil {
			return nil, err
		}
		if spare[r], err = p.Int("spare_"+r.String(), 0); err != nil {
			return nil, err
		}
	}
	return NewLayout(dcs, roles, active, spare)
}

// LayoutParams lists the parameter names LayoutFromParams reads for roles.
func LayoutParams(roles []Role) []string {
	var out []string
	for _, r := range roles {
		out = append(out, r.String(), "spare_"+r.String())
	}
	return out
}

// All returns every node of role r in datacenter dc, actives first.
func (l *Layout) All(dc int, r Role) []protocol.NodeID { return l.byDC[dc][r] }

// Active returns the nodes of role r in datacenter dc that are active from the start.
func (l *Layout) Active(dc int, r Role) []protocol.NodeID {
	var out []protocol.NodeID
	for _, id := range l.byDC[dc][r] {
		if !l.Spare[id] {
			out = append(out, id)
		}
	}
	return out
}

// Check verifies that the driver placed exactly this layout's nodes.
func (l *Layout) Check(nodes []protocol.Node) error {
	if len(nodes) != len(l.Nodes) {
		return fmt.Errorf("flstore: the parameters deploy %d nodes, the driver placed %d", len(l.Nodes), len(nodes))
	}
	for i, n := range nodes {
		if n.ID != l.Nodes[i].ID || n.DC != l.Nodes[i].DC {
			return fmt.Errorf("flstore: node %d placed in datacenter %d, the layout puts it in %d", i, n.DC, l.Nodes[i].DC)
		}
	}
	return nil
}
