package chariots

import (
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Sender ships its datacenter's own records to the other datacenters (spec 5.7): it fetches
// them from its maintainers up to the head of the log, and sends every record a destination's
// ATable row does not show, again after a resend timeout, with the whole ATable (spec 5.8).
type Sender struct {
	env    protocol.Env
	cfg    Config
	dc     int
	maints []protocol.NodeID
	// fetched is, per maintainer, the highest TOId fetched from it.
	fetched map[protocol.NodeID]uint64
	cache   map[uint64]*Record // own records by TOId, not yet known everywhere
	table   [][]uint64         // the ATable: table[j][k] = what this DC knows DC j has of host k
	dests   []*shipDest        // per datacenter; nil for this one
	n       uint64             // records shipped (copies included)
}

// Handled counts the records the sender shipped, copies included.
func (s *Sender) Handled() uint64 { return s.n }

// shipDest is a sender's state for one destination datacenter.
type shipDest struct {
	receiver   protocol.NodeID
	shipped    map[uint64]bool // TOIds shipped since the last resend, above the known row
	known      uint64          // the destination's row entry for this datacenter, last seen
	lastMoveUs int64           // when known last moved, or the shipping or resend began
}

func newSender(c Config, self protocol.NodeID, dc int, env protocol.Env) *Sender {
	s := &Sender{env: env, cfg: c, dc: dc, fetched: map[protocol.NodeID]uint64{}, cache: map[uint64]*Record{}}
	active := c.Layout.Active(dc, flstore.Sender)
	idx := -1
	for i, n := range active {
		if n == self {
			idx = i
		}
	}
	if idx >= 0 { // a spare sender idles: nothing is assigned to it
		for i, m := range c.Layout.All(dc, flstore.Maintainer) {
			if i%len(active) == idx {
				s.maints = append(s.maints, m)
			}
		}
	}
	for range c.DCs {
		s.table = append(s.table, make([]uint64, c.DCs))
	}
	for d := range c.DCs {
		if d == dc || idx < 0 {
			s.dests = append(s.dests, nil)
			continue
		}
		rs := c.Layout.Active(d, flstore.Receiver)
		s.dests = append(s.dests, &shipDest{receiver: rs[idx%len(rs)], shipped: map[uint64]bool{}})
	}
	return s
}

// Table returns the sender's ATable (shared: do not modify).
func (s *Sender) Table() [][]uint64 { return s.table }

// Start arms the ship timer.
func (s *Sender) Start() { s.env.SetTimer(s.cfg.ShipUs, shipTimer) }

// HandleTimer fetches from the maintainers and ships to every other datacenter.
func (s *Sender) HandleTimer(id protocol.TimerID) {
	if id != shipTimer || len(s.maints) == 0 {
		return
	}
	s.env.SetTimer(s.cfg.ShipUs, shipTimer)
	if s.cfg.DCs == 1 {
		return // one datacenter: nothing to ship, so nothing to fetch
	}
	low := s.lowWater()
	for t := range s.cache {
		if t <= low {
			delete(s.cache, t)
		}
	}
	var horizon []uint64
	if s.cfg.GC {
		for h := range s.cfg.DCs {
			horizon = append(horizon, Collectable(s.table, h))
		}
	}
	for _, m := range s.maints {
		s.env.Send(m, &flstore.FetchReq{FromTOId: max(low, s.fetched[m]) + 1, Limit: s.cfg.FetchMax, Horizon: horizon})
	}
	toids := make([]uint64, 0, len(s.cache))
	for t := range s.cache {
		toids = append(toids, t)
	}
	sort.Slice(toids, func(i, j int) bool { return toids[i] < toids[j] })
	now := s.env.NowUs()
	for d, dst := range s.dests {
		if dst == nil {
			continue
		}
		known := s.table[d][s.dc]
		if known > dst.known {
			dst.known, dst.lastMoveUs = known, now
			for t := range dst.shipped {
				if t <= known {
					delete(dst.shipped, t)
				}
			}
		}
		if len(dst.shipped) > 0 && now-dst.lastMoveUs >= s.cfg.ResendUs {
			dst.shipped, dst.lastMoveUs = map[uint64]bool{}, now // nothing moved: ship again
		}
		b := &ShipBatch{FromDC: s.dc, Table: s.tableCopy()}
		for _, t := range toids {
			if t > known && !dst.shipped[t] && len(b.Records) < s.cfg.FetchMax {
				if len(dst.shipped) == 0 {
					dst.lastMoveUs = now
				}
				dst.shipped[t] = true
				b.Records = append(b.Records, s.cache[t])
			}
		}
		s.n += uint64(len(b.Records))
		s.env.Send(dst.receiver, b)
	}
}

// Collectable returns the highest TOId of host h that every datacenter is known to hold by
// ATable t: host h's records up to it may be garbage-collected (spec 4: r may go iff
// T[j][r.Host] ≥ r.TOId for every j).
func Collectable(t [][]uint64, h int) uint64 {
	c := uint64(flstore.None)
	for j := range t {
		c = min(c, t[j][h])
	}
	return c
}

// lowWater is the highest own TOId every other datacenter is known to have.
func (s *Sender) lowWater() uint64 {
	low := uint64(flstore.None)
	for d := range s.table {
		if d != s.dc {
			low = min(low, s.table[d][s.dc])
		}
	}
	if low == flstore.None { // one datacenter: nothing to ship
		return 0
	}
	return low
}

func (s *Sender) tableCopy() [][]uint64 {
	t := make([][]uint64, len(s.table))
	for i := range t {
		t[i] = append([]uint64(nil), s.table[i]...)
	}
	return t
}

// HandleMessage takes fetched records, the own row from the token, and tables from receivers.
func (s *Sender) HandleMessage(from protocol.NodeID, m protocol.Message) {
	switch m := m.(type) {
	case *flstore.FetchResp:
		low := s.lowWater()
		if m.FromTOId > max(low, s.fetched[from])+1 {
			return // it answers a request of the sender that ran before this one (restarted empty)
		}
		for _, r := range m.Records {
			if r == nil || r.Host != s.dc || r.TOId == 0 {
				continue
			}
			s.fetched[from] = max(s.fetched[from], r.TOId)
			if r.TOId > low {
				s.cache[r.TOId] = r
			}
		}
	case *RowUpdate:
		if len(m.Row) == s.cfg.DCs && s.from(from, s.dc, flstore.Queue) {
			s.table[s.dc] = flstore.MaxVec(s.table[s.dc], m.Row)
		}
	case *TableUpdate:
		if s.from(from, s.dc, flstore.Receiver) {
			s.merge(m.Table)
		}
	}
}

// from reports whether node n has role r in datacenter dc.
func (s *Sender) from(n protocol.NodeID, dc int, r flstore.Role) bool {
	return containsNode(s.cfg.Layout.All(dc, r), n)
}

// merge takes the element-wise maximum of every row but this datacenter's own (spec A4).
func (s *Sender) merge(t [][]uint64) {
	if len(t) != s.cfg.DCs {
		return
	}
	for l, row := range t {
		if l != s.dc && len(row) == s.cfg.DCs {
			s.table[l] = flstore.MaxVec(s.table[l], row)
		}
	}
}

// HandleRequest refuses requests: a sender takes none.
func (s *Sender) HandleRequest(req protocol.Request) {
	s.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "chariots: a sender takes no requests"})
}

// Receiver takes other datacenters' shipments (spec 5.7): the records go to a batcher (round
// robin), the table to every sender of its datacenter.
type Receiver struct {
	env      protocol.Env
	cfg      Config
	dc       int
	batchers []protocol.NodeID
	senders  []protocol.NodeID
	rr       int
	n        uint64 // records received
}

// Handled counts the records the receiver received.
func (r *Receiver) Handled() uint64 { return r.n }

func newReceiver(c Config, dc int, env protocol.Env) *Receiver {
	return &Receiver{env: env, cfg: c, dc: dc, batchers: c.Layout.Active(dc, flstore.Batcher), senders: c.Layout.Active(dc, flstore.Sender)}
}

// Start does nothing: a receiver reacts to shipments.
func (r *Receiver) Start() {}

// HandleTimer ignores timers: a receiver sets none.
func (r *Receiver) HandleTimer(protocol.TimerID) {}

// HandleMessage forwards a shipment.
func (r *Receiver) HandleMessage(from protocol.NodeID, m protocol.Message) {
	b, ok := m.(*ShipBatch)
	if !ok || b.FromDC == r.dc || b.FromDC < 0 || b.FromDC >= r.cfg.DCs || !containsNode(r.cfg.Layout.All(b.FromDC, flstore.Sender), from) {
		return
	}
	if len(b.Records) > 0 {
		r.n += uint64(len(b.Records))
		r.env.Send(r.batchers[r.rr%len(r.batchers)], &RecordBatch{Records: b.Records})
		r.rr++
	}
	for _, s := range r.senders {
		r.env.Send(s, &TableUpdate{Table: b.Table})
	}
}

// HandleRequest takes a new batcher.
func (r *Receiver) HandleRequest(req protocol.Request) {
	reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
	if op, ok := req.Op.(*AddBatcher); ok {
		if !containsNode(r.cfg.Layout.All(r.dc, flstore.Batcher), op.Node) {
			reply.Err = "chariots: not a batcher of this datacenter"
		} else if !containsNode(r.batchers, op.Node) {
			r.batchers = append(r.batchers, op.Node)
		}
	} else {
		reply.Err = "chariots: a receiver takes new batchers only"
	}
	r.env.Reply(acknowledge(reply, req))
}
