package sim

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/txn"
)

// Conn is a simulated client's connection to one replica in its datacenter. It implements
// client.Transport, so the client library runs in the simulator unchanged.
type Conn struct {
	sim     *Sim
	id      txn.ClientID
	dc      int
	node    protocol.NodeID
	pending []pendingCall // outstanding calls; usually one, so a slice beats a map
}

type pendingCall struct {
	seq  uint64
	done func(protocol.Reply)
}

// Connect places client id in the datacenter of replica to and connects it there.
func (s *Sim) Connect(id txn.ClientID, to protocol.NodeID) (*Conn, error) {
	if int(to) < 0 || int(to) >= len(s.nodes) {
		return nil, fmt.Errorf("sim: no replica %d", to)
	}
	if _, dup := s.clients[id]; dup || id == 0 {
		return nil, fmt.Errorf("sim: client id %d is zero or already connected", id)
	}
	if s.clients == nil {
		s.clients = map[txn.ClientID]*Conn{}
	}
	c := &Conn{sim: s, id: id, dc: s.cfg.Nodes[to].DC, node: to}
	s.clients[id] = c
	return c, nil
}

// Call sends req (stamped with this client's id) and calls done with the reply.
func (c *Conn) Call(req protocol.Request, done func(protocol.Reply)) {
	req.Client = c.id
	c.pending = append(c.pending, pendingCall{seq: req.Seq, done: done})
	s := c.sim
	e := s.newEvent()
	e.at, e.kind, e.dc, e.node, e.req = s.nowUs+s.cfg.ClientHopUs, evRequest, c.dc, c.node, req
	s.push(e)
}

// NowUs is the client's clock: virtual time.
func (c *Conn) NowUs() int64 { return c.sim.nowUs }

// After runs fn after delayUs; it waits out the client's datacenter's outages.
func (c *Conn) After(delayUs int64, fn func()) { c.sim.After(c.dc, delayUs, fn) }

// DC returns the index of the client's datacenter.
func (c *Conn) DC() int { return c.dc }

func (c *Conn) deliver(r protocol.Reply) {
	for i, p := range c.pending {
		if p.seq == r.Seq {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			p.done(r)
			return
		}
	}
}
