package logsim

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/sim"
)

// StageCost is one role's CPU time per input: a fixed part and a part per record the input
// carries (RecordsIn).
type StageCost struct {
	PerMessageNs, PerRecordNs int64
}

// Capacity is the simulator's model of a machine of the log family (issue 14 item 6): each
// stage machine has one CPU that handles its inputs one at a time, each costing its role's
// StageCost, and every machine (stage machines and client machines alike) a network interface
// of NICBitsPerSec in each direction (sim.LAN), messages sized by their SizeBytes.
type Capacity struct {
	// Cost is the CPU cost per role; Standalone that of a standalone FLStore maintainer, whose
	// every append is a client request.
	Cost       map[flstore.Role]StageCost
	Standalone StageCost
	// NICBitsPerSec is every machine's interface speed in each direction.
	NICBitsPerSec int64
}

// Calibrated is the capacity model used by `meridian repro chariots-*`. The CPU costs are
// measured: the real stage code (Go), driven directly with inputs decoded from and outputs
// encoded to the wire format, 512-byte records, on this shared 2-core machine
// (chariots.BenchmarkStageCost*; docs/BENCHMARKS.md "Chariots stage costs"), fitted as
// PerMessage + k·PerRecord from inputs of k = 1 and k = 100 records. They leave out the
// transport (TCP, gRPC), durability (Pebble) and the runtime's background work, so they are a
// lower bound on a real process's cost. The network interface is not measured: 1 Gb/s is an
// assumption (the speed of the spec's LAN model, WL7, and of the source's era of machines; the
// source's racks had a 10 Gb switch and does not state the NICs). Under this model the NIC,
// not the CPU, limits every stage: a 512-byte record is about 600 bytes on the wire, 4.9 µs of
// a 1 Gb/s interface, more than any stage's CPU cost per record.
var Calibrated = Capacity{
	Cost: map[flstore.Role]StageCost{
		flstore.Batcher:    {PerMessageNs: 70, PerRecordNs: 1290},
		flstore.Filter:     {PerMessageNs: 1720, PerRecordNs: 1450},
		flstore.Queue:      {PerMessageNs: 2210, PerRecordNs: 2050},
		flstore.Maintainer: {PerMessageNs: 0, PerRecordNs: 3830},
		flstore.Sender:     {PerMessageNs: 2560, PerRecordNs: 1550},
		flstore.Receiver:   {PerMessageNs: 630, PerRecordNs: 1070},
	},
	Standalone:    StageCost{PerRecordNs: 3190},
	NICBitsPerSec: 1_000_000_000,
}

// RecordsIn counts the records input m carries, for the per-record part of a stage's cost.
func RecordsIn(m protocol.Message) int {
	switch m := m.(type) {
	case *flstore.AppendOp:
		return 1
	case *chariots.RecordBatch:
		return len(m.Records)
	case *flstore.Assign:
		return len(m.Records)
	case *flstore.FetchResp:
		return len(m.Records)
	case *chariots.ShipBatch:
		return len(m.Records)
	case *chariots.Token:
		return len(m.Deferred)
	}
	return 0
}

// apply sets svc's cost per input for nodes playing roles (by node id; FLStore maintainers
// standalone if standalone), sim.Service.PerInput, and its control plane, and returns the
// network model: every input costs its role's StageCost, the nanoseconds below a microsecond
// carried to the node's next input. In a Chariots deployment the head-of-log gossip is control
// plane (Control); standalone maintainers answer an append on persisting it, their gossip
// serves readers only, and it stays data (chariots-f1 and f2 unchanged).
func (c *Capacity) apply(svc *sim.Service, roles []flstore.Role, standalone bool) sim.LAN {
	carryNs := make([]int64, len(roles))
	costs := make([]StageCost, len(roles))
	for i, r := range roles {
		costs[i] = c.Cost[r]
		if standalone && r == flstore.Maintainer {
			costs[i] = c.Standalone
		}
	}
	svc.PerInput = func(n protocol.NodeID, m protocol.Message) int64 {
		sc := costs[n]
		ns := carryNs[n] + sc.PerMessageNs + sc.PerRecordNs*int64(RecordsIn(m))
		carryNs[n] = ns % 1000
		return ns / 1000
	}
	if !standalone {
		svc.Control = Control
	}
	return sim.LAN{BandwidthBitsPerSec: c.NICBitsPerSec}
}

// Control reports whether m is control plane in the capacity model (sim.Service.Control): the
// log maintainers' head-of-log gossip, a fixed-size message whose cost spec 3.4 puts at "latency
// (gossip delay), not throughput". Chariots maintainers answer an append once the head of the
// log passes it (a token rebuild truncates above the head of the log), so the answers wait for
// the peers' gossip: queued behind a saturated maintainer's incoming records, as it was in the
// plain FIFO model, it held answers back by the depth of that queue (chariots-t75 ran at 0.565×
// Table 7.2's end-to-end throughput instead of 2×). A deployment gets the same by giving the
// gossip its own connection and a priority class. Records, assignments, tokens and every other
// message stay data.
func Control(m protocol.Message) bool {
	switch m.(type) {
	case *flstore.HLGossip:
		return true
	}
	return false
}

// RecordsPerSec is role r's CPU capacity in records per second with inputs of batch records.
func (c *Capacity) RecordsPerSec(r flstore.Role, batch int) float64 {
	sc := c.Cost[r]
	return 1e9 / (float64(sc.PerRecordNs) + float64(sc.PerMessageNs)/float64(batch))
}

// NICRecordsPerSec is how many records of recordBytes on the wire one direction of a machine's
// interface carries per second.
func (c *Capacity) NICRecordsPerSec(recordBytes int) float64 {
	return float64(c.NICBitsPerSec) / 8 / float64(recordBytes)
}
