package ogre

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
)

// RoT-Storage units as nodes of their own (spec §1.3, §4.8, A10). With the parameter rot_units
// = U ≥ 1 every datacenter runs, besides its replica, U RoT units: nodes that hold a full
// RoT-Storage each (on separate machines in a real deployment, with their own CPU in the
// simulator's service model) and serve the datacenter's read-only transactions, so analytics
// never queue behind the replica's read-modify work. The replica keeps the current storage and
// records the version order (its own RoT-Storage shrinks to the ww order, serving nothing).
//
// The replica feeds its units one ingestion stream (spec M6): the committed transactions in the
// order it processed their decisions, numbered 1, 2, 3, … (Ingest). A unit ingests them strictly
// in stream order — it keeps up to maxEarly that arrive ahead of a gap — and acknowledges the
// prefix it holds (IngestAck) once per housekeeping tick, so that acknowledgements cost the
// replica one message per unit per tick, not one per transaction; the replica retransmits what a
// unit has not acknowledged for unitRetryUs and forgets what all its units hold. So every unit
// of a datacenter ingests the same sequence and applies it in the same order (ingestion is
// deterministic): its snapshots are snapshots of one history per datacenter, the one the checker
// checks them against. A unit that was down (or lost messages) catches up from the replica's
// retransmissions; a unit that restarts rebuilds its state from its input log like any node.

// ParamRoTUnits is the number of RoT unit nodes per datacenter (default 0: the replica serves
// read-only transactions from its own RoT-Storage).
const ParamRoTUnits = "rot_units"

const (
	unitRetryUs = 50_000 // how long a replica waits for a unit's acknowledgement before resending
	resendMax   = 512    // stream entries a replica resends to a unit at a time
	maxEarly    = 4096   // stream entries a unit keeps that arrived ahead of a gap
	maxRoTUnits = 16     // bound on rot_units
)

// Ingest carries the Seq-th committed transaction of a replica's ingestion stream to a RoT unit
// of its datacenter (spec M6, ForwardCommitted).
type Ingest struct {
	Seq      uint64
	Decision *Decision
}

// IngestAck tells a replica that its unit holds the ingestion stream up to Seq.
type IngestAck struct {
	Seq uint64
}

// SizeBytes estimates the encoded size.
func (m *Ingest) SizeBytes() int {
	if m.Decision == nil {
		return 9
	}
	return 9 + m.Decision.SizeBytes()
}

// SizeBytes estimates the encoded size.
func (m *IngestAck) SizeBytes() int { return 9 }

// UnitNodes places Ogre with units RoT units per datacenter on dcs datacenters: node dc is
// datacenter dc's replica (partition 0), and node dcs·(1+u)+dc its unit u (partition u+1).
// Read-only clients connect to the nodes of a partition above 0 (registry.Entry.Nodes).
func UnitNodes(dcs, units int) []protocol.Node {
	nodes := make([]protocol.Node, 0, dcs*(1+units))
	for p := range 1 + units {
		for dc := range dcs {
			nodes = append(nodes, protocol.Node{ID: protocol.NodeID(len(nodes)), DC: dc, Partition: p})
		}
	}
	return nodes
}

// nodesFor is Ogre's registry.Entry.Nodes: UnitNodes for rot_units ≥ 1, nil (one replica per
// datacenter) otherwise.
func nodesFor(p protocol.Params, dcs int) ([]protocol.Node, error) {
	units, err := rotUnits(p)
	if err != nil || units == 0 {
		return nil, err
	}
	return UnitNodes(dcs, units), nil
}

func rotUnits(p protocol.Params) (int, error) {
	units, err := p.Int(ParamRoTUnits, 0)
	if err != nil || units < 0 || units > maxRoTUnits {
		return 0, fmt.Errorf("ogre: parameter %s must be 0 to %d (%v)", ParamRoTUnits, maxRoTUnits, err)
	}
	return units, nil
}

// placement checks that pc places Ogre with units RoT units per datacenter and returns each
// datacenter's replica, its units, and this node's datacenter.
func placement(pc protocol.Config, units int) (nodeOf []protocol.NodeID, unitsOf [][]protocol.NodeID, self int, err error) {
	if units == 0 {
		nodeOf, self, err = protocol.FullReplicas(pc)
		return nodeOf, make([][]protocol.NodeID, len(nodeOf)), self, err
	}
	n := pc.Topology.N()
	want := UnitNodes(n, units)
	if len(pc.Nodes) != len(want) {
		return nil, nil, 0, fmt.Errorf("ogre with %d RoT units per datacenter needs %d nodes, got %d", units, len(want), len(pc.Nodes))
	}
	for i, nd := range pc.Nodes {
		if nd != want[i] {
			return nil, nil, 0, fmt.Errorf("ogre with RoT units: node %d is %+v, want %+v (the replicas, then the units; ogre.UnitNodes)", i, nd, want[i])
		}
	}
	if int(pc.Self) < 0 || int(pc.Self) >= len(pc.Nodes) {
		return nil, nil, 0, fmt.Errorf("self node %d out of range", pc.Self)
	}
	nodeOf, unitsOf = make([]protocol.NodeID, n), make([][]protocol.NodeID, n)
	for _, nd := range pc.Nodes {
		if nd.Partition == 0 {
			nodeOf[nd.DC] = nd.ID
		} else {
			unitsOf[nd.DC] = append(unitsOf[nd.DC], nd.ID)
		}
	}
	return nodeOf, unitsOf, pc.Nodes[pc.Self].DC, nil
}

// Unit is a RoT-Storage unit: a node holding a full RoT-Storage, fed by its datacenter's
// replica's ingestion stream, serving read-only transactions.
type Unit struct {
	env     protocol.Env
	replica protocol.NodeID
	rot     *rot
	next    uint64 // stream entries ingested
	early   map[uint64]*Decision
	ackDue  bool // stream entries arrived since the last IngestAck
}

// Start arms the housekeeping timer (acknowledgements, garbage collection).
func (u *Unit) Start() { u.env.SetTimer(tickUs, timerTick) }

// HandleMessage ingests the replica's stream in order (the next tick acknowledges the prefix it
// holds); anything else, or from any other node, is ignored.
func (u *Unit) HandleMessage(from protocol.NodeID, m protocol.Message) {
	in, ok := m.(*Ingest)
	if from != u.replica || !ok || in == nil || in.Decision == nil || !in.Decision.Commit || !wellFormed(in.Decision, true) {
		return
	}
	switch {
	case in.Seq == u.next+1:
		u.rot.ingest(in.Decision)
		u.next++
		for d := u.early[u.next+1]; d != nil; d = u.early[u.next+1] {
			delete(u.early, u.next+1)
			u.rot.ingest(d)
			u.next++
		}
	case in.Seq > u.next+1 && len(u.early) < maxEarly:
		u.early[in.Seq] = in.Decision
	}
	u.ackDue = true
}

// HandleRequest serves read-only transactions (ReadSnapshot) and refuses everything else.
func (u *Unit) HandleRequest(req protocol.Request) {
	if req.Kind != protocol.ReadSnapshot {
		u.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "ogre: a RoT unit serves read-only transactions only; send reads and commits to the datacenter's replica"})
		return
	}
	u.rot.serve(u.env, req)
}

// HandleTimer reads the next chunk of the read-only transactions in flight, or acknowledges the
// stream and collects garbage.
func (u *Unit) HandleTimer(id protocol.TimerID) {
	switch id {
	case timerRead:
		u.rot.onReadTimer(u.env)
	case timerTick:
		if u.ackDue {
			u.ackDue = false
			u.env.Send(u.replica, &IngestAck{Seq: u.next})
		}
		u.rot.collect()
		u.env.SetTimer(tickUs, timerTick)
	}
}

// RoTBufferStats reports the unit's ingestion buffering (see Replica.RoTBufferStats).
func (u *Unit) RoTBufferStats() (ingested, everBuffered int, bufferedUs int64) {
	return u.rot.bufferStats()
}

// Ingested returns how many entries of its replica's stream the unit has ingested.
func (u *Unit) Ingested() uint64 { return u.next }

// forward appends a committed transaction to the ingestion stream and sends it to every unit.
func (r *Replica) forward(d *Decision) {
	if len(r.units) == 0 {
		return
	}
	r.stream = append(r.stream, d)
	seq := r.streamBase + uint64(len(r.stream))
	for i, id := range r.units {
		if r.unitAcked[i] == seq-1 { // the unit was up to date: its acknowledgement is due from now
			r.unitResendUs[i] = r.env.NowUs() + unitRetryUs
		}
		r.env.Send(id, &Ingest{Seq: seq, Decision: d})
	}
}

// onIngestAck records how much of the stream unit i holds and forgets what every unit holds.
func (r *Replica) onIngestAck(i int, seq uint64) {
	if seq <= r.unitAcked[i] || seq > r.streamBase+uint64(len(r.stream)) {
		return
	}
	r.unitAcked[i], r.unitResendUs[i] = seq, r.env.NowUs()+unitRetryUs
	low := seq
	for _, a := range r.unitAcked {
		low = min(low, a)
	}
	if low > r.streamBase {
		r.stream = r.stream[low-r.streamBase:]
		r.streamBase = low
	}
}

// resendStream retransmits to each unit that has not acknowledged the whole stream for
// unitRetryUs the next entries it lacks.
func (r *Replica) resendStream(now int64) {
	last := r.streamBase + uint64(len(r.stream))
	for i, id := range r.units {
		if r.unitAcked[i] == last || now < r.unitResendUs[i] {
			continue
		}
		r.unitResendUs[i] = now + unitRetryUs
		for seq := r.unitAcked[i] + 1; seq <= min(last, r.unitAcked[i]+resendMax); seq++ {
			r.env.Send(id, &Ingest{Seq: seq, Decision: r.stream[seq-r.streamBase-1]})
		}
	}
}

// Quiescent reports whether every RoT unit of the replica's datacenter holds its whole ingestion
// stream (always, without units): the simulator's end-of-run convergence waits for it.
func (r *Replica) Quiescent() bool {
	last := r.streamBase + uint64(len(r.stream))
	for _, a := range r.unitAcked {
		if a != last {
			return false
		}
	}
	return true
}
