package chariots

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Control is one elasticity request (spec 5.12): the operation Op for stage machine To, sent as
// a protocol.Operation request by whoever drives the change (the simulator's control client,
// `meridian cluster add` on real nodes). A stage answers it with the operation itself, or an
// error naming what it refused.
type Control struct {
	To protocol.NodeID
	Op protocol.Message
}

// Elastic lists the roles a spare of which can join a running deployment (AddSpare).
var Elastic = []flstore.Role{flstore.Queue, flstore.Maintainer, flstore.Batcher, flstore.Filter}

// AddSpare returns the requests that make spare node n of layout l join its datacenter's
// pipeline, in the order to send them: a queue is announced to the active queues (the token
// holder inserts it after itself in the ring), to itself (so that a token rebuild keeps it in
// the ring even if no surviving token took the event: TokenCopy.Added) and to the filters; a maintainer to the first
// active queue (the token holder starts a new epoch of the journal with it); a batcher to the
// receivers (clients must also be told, which is the driver's part); a filter takes host's
// records with TOId ≥ fromTOId of the class the filter map gives it (the even ones: spec
// CH-S10), a boundary the caller picks ahead of what the datacenter logged of host, announced
// to the batchers and the filters. Every request is idempotent: sending them again does no
// harm. host and fromTOId matter for a filter only.
func AddSpare(l *flstore.Layout, n protocol.NodeID, host int, fromTOId uint64) ([]Control, error) {
	if int(n) < 0 || int(n) >= len(l.Nodes) {
		return nil, fmt.Errorf("chariots: no node %d in the layout (%d nodes)", n, len(l.Nodes))
	}
	dc, role := l.Nodes[n].DC, l.Role[n]
	if !l.Spare[n] {
		return nil, fmt.Errorf("chariots: node %d (%s of datacenter %d) is not a spare", n, role, dc)
	}
	var out []Control
	to := func(op protocol.Message, nodes ...[]protocol.NodeID) {
		for _, ns := range nodes {
			for _, m := range ns {
				out = append(out, Control{To: m, Op: op})
			}
		}
	}
	switch role {
	case flstore.Queue:
		to(&AddQueue{Node: n}, l.Active(dc, flstore.Queue), []protocol.NodeID{n}, l.All(dc, flstore.Filter))
	case flstore.Maintainer:
		to(&AddMaintainer{Node: n}, l.Active(dc, flstore.Queue)[:1])
	case flstore.Batcher:
		to(&AddBatcher{Node: n}, l.All(dc, flstore.Receiver))
	case flstore.Filter:
		if host == dc || !hasDC(l, host) {
			return nil, fmt.Errorf("chariots: a filter splits the records of another datacenter; %d is not one (the filter is in datacenter %d)", host, dc)
		}
		champ := l.Active(dc, flstore.Filter)[0]
		to(&FilterMapUpdate{Host: host, FromTOId: fromTOId, Filters: []protocol.NodeID{n, champ}},
			l.All(dc, flstore.Batcher), l.All(dc, flstore.Filter))
	default:
		return nil, fmt.Errorf("chariots: a spare %s cannot join a running deployment (only queues, maintainers, batchers and filters)", role)
	}
	return out, nil
}

// hasDC reports whether some node of l is in datacenter dc.
func hasDC(l *flstore.Layout, dc int) bool {
	for _, nd := range l.Nodes {
		if nd.DC == dc {
			return true
		}
	}
	return false
}

// acknowledge answers an elasticity request that reply does not refuse with the request's
// operation (the network server answers an operation with a message, never with nothing).
func acknowledge(reply protocol.Reply, req protocol.Request) protocol.Reply {
	if reply.Err == "" {
		reply.Op = req.Op
	}
	return reply
}
