package sim

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Conn is a simulated client's connection to one replica in its datacenter, its home node. It
// implements client.Transport, so the client library runs in the simulator unchanged, and
// tcc.Transport (CallNode), so a partitioned protocol's client library can reach any node.
type Conn struct {
	sim     *Sim
	id      txn.ClientID
	dc      int
	node    protocol.NodeID
	nextSeq uint64
	pending []pendingCall // outstanding calls; usually few, so a slice beats a map
	// LAN model: the client's network interface, and its links to the nodes it has messages in
	// flight with (the others need no state: a new message on an idle link cannot overtake).
	nic   nic
	links []clientLink
}

// clientLink is the LAN model's FIFO state of the two directed links between a client and a node.
type clientLink struct {
	node          protocol.NodeID
	requestLastUs int64 // last delivery of a request to the node
	replyLastUs   int64 // last delivery of a reply from the node
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

// Call sends req to the home node and calls done with the reply.
func (c *Conn) Call(req protocol.Request, done func(protocol.Reply)) { c.CallNode(c.node, req, done) }

// CallNode sends req to node to and calls done with the reply. The request is stamped with this
// client's id and a sequence number of the connection's own (replacing req.Seq), so that calls
// to several nodes at once never share one.
func (c *Conn) CallNode(to protocol.NodeID, req protocol.Request, done func(protocol.Reply)) {
	s := c.sim
	if int(to) < 0 || int(to) >= len(s.nodes) {
		done(protocol.Reply{Client: c.id, Err: fmt.Sprintf("sim: no node %d", to)})
		return
	}
	c.nextSeq++
	req.Client, req.Seq = c.id, c.nextSeq
	c.pending = append(c.pending, pendingCall{seq: req.Seq, done: done})
	e := s.newEvent()
	e.at, e.kind, e.dc, e.node = s.nowUs+s.cfg.ClientHopUs, evRequest, c.dc, to
	s.setRequest(e, &req)
	if s.cfg.LAN != (LAN{}) {
		if s.cfg.LAN.BandwidthBitsPerSec > 0 {
			e.txNs = s.txNs(requestBytes(e.req))
		}
		e.at = s.lanClientHop(&c.nic, s.nowUs, e.txNs, &c.link(to, s.nowUs).requestLastUs)
	}
	s.pushHop(e)
}

// link returns the FIFO state of the client's links with node to, first forgetting the links
// whose last deliveries are past (at nowUs): a client talks to many nodes over time but has
// messages in flight with few at once, so the slice stays short.
func (c *Conn) link(to protocol.NodeID, nowUs int64) *clientLink {
	live := c.links[:0]
	for _, l := range c.links {
		if l.node == to || l.requestLastUs > nowUs || l.replyLastUs > nowUs {
			live = append(live, l)
		}
	}
	c.links = live
	for i := range c.links {
		if c.links[i].node == to {
			return &c.links[i]
		}
	}
	c.links = append(c.links, clientLink{node: to})
	return &c.links[len(c.links)-1]
}

// NowUs is the client's clock: virtual time.
func (c *Conn) NowUs() int64 { return c.sim.nowUs }

// After runs fn after delayUs; it waits out the client's datacenter's outages.
func (c *Conn) After(delayUs int64, fn func()) { c.sim.After(c.dc, delayUs, fn) }

// MoveTo places the client in datacenter dc (a client that travels, workload.Relocatable):
// its timers and outages are dc's from now on. Calls in flight are unaffected.
func (c *Conn) MoveTo(dc int) { c.dc = dc }

// DC returns the index of the client's datacenter.
func (c *Conn) DC() int { return c.dc }

func (c *Conn) deliver(r protocol.Reply) {
	for i, p := range c.pending {
		if p.seq == r.Seq {
			switch {
			case len(c.pending) == 1: // a closed-loop client's one call: keep the array for the next
				c.pending[0] = pendingCall{}
				c.pending = c.pending[:0]
			case i == 0: // replies mostly come in order: an open-loop client may have thousands pending
				c.pending = c.pending[1:]
			default:
				c.pending = append(c.pending[:i], c.pending[i+1:]...)
			}
			p.done(r)
			return
		}
	}
}
