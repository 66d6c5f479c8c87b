package chariots

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Record is the log record (flstore.Record): Chariots and FLStore share it.
type Record = flstore.Record

// RecordBatch carries records from a receiver to a batcher, from a batcher to a filter, and
// from a filter to a queue. A filter numbers its batches (Seq ≥ 1) within its incarnation Inc
// (its clock when it started: a filter that restarted empty numbers from 1 again) and resends
// each until the queue acknowledges it; queues drop a batch they already took, and the batches
// of a filter's earlier incarnations.
type RecordBatch struct {
	Inc     uint64
	Seq     uint64
	Records []*Record
}

// BatchAck acknowledges a filter's batch (of incarnation Inc) to it.
type BatchAck struct{ Inc, Seq uint64 }

// Token is the queues' circulating token (spec 5.5). MaxTOId is this datacenter's own ATable
// row: per host, the highest TOId logged here. LastLId is the last position assigned. Deferred
// are records not yet eligible that travel with the token. Ring and Journal are the queue ring
// and the epoch journal, extended by the token holder alone (elasticity, spec 5.12). Hop counts
// the token's passes, so a queue takes a resent token once. Logged holds, per client of this
// datacenter, the append numbers (AppendSeq) of its appends logged here, so that a queue drops
// a copy of an append already logged that a filter let through (one that restarted empty, and
// forgot the appends it forwarded).
type Token struct {
	Hop         uint64
	MaxTOId     []uint64
	LastLId     uint64
	Deferred    []*Record
	Ring        []protocol.NodeID
	Journal     flstore.Journal
	RowSent     []uint64 // the row last published to the senders
	RowSentAtUs int64
	Logged      map[txn.ClientID]*seqSet
}

// clone deep-copies the token's mutable parts (records are replaced, never modified).
func (t *Token) clone() *Token {
	c := *t
	c.MaxTOId = append([]uint64(nil), t.MaxTOId...)
	c.Deferred = append([]*Record(nil), t.Deferred...)
	c.Ring = append([]protocol.NodeID(nil), t.Ring...)
	c.Journal = append(flstore.Journal(nil), t.Journal...)
	c.RowSent = append([]uint64(nil), t.RowSent...)
	c.Logged = make(map[txn.ClientID]*seqSet, len(t.Logged))
	for k, v := range t.Logged {
		c.Logged[k] = v.clone()
	}
	return &c
}

// TokenAck acknowledges a token pass.
type TokenAck struct{ Hop uint64 }

// RowUpdate publishes the token's MaxTOId (the datacenter's own ATable row) to the senders.
type RowUpdate struct{ Row []uint64 }

// ShipBatch carries a datacenter's own records and its ATable to a receiver of another
// datacenter (spec 5.7); it is also the heartbeat that spreads the table when there is nothing
// to ship.
type ShipBatch struct {
	FromDC  int
	Records []*Record
	Table   [][]uint64
}

// TableUpdate hands an ATable a receiver got to the senders of its datacenter.
type TableUpdate struct{ Table [][]uint64 }

// Elasticity operations (protocol.Request.Op), answered with an empty Reply (spec 5.12).

// AddBatcher tells a receiver about a new batcher.
type AddBatcher struct{ Node protocol.NodeID }

// FilterMapUpdate tells batchers and filters that host Host's records with TOId ≥ FromTOId
// are championed by Filters[TOId mod len(Filters)].
type FilterMapUpdate struct {
	Host     int
	FromTOId uint64
	Filters  []protocol.NodeID
}

// FilterMapSync carries a batcher's or a filter's filter map (its epochs per host) to another
// batcher or filter of its datacenter, which adopts the epochs it lacks and answers with its own
// map if that has epochs the sender lacks. A filter sends it to the batcher of a record it
// does not champion: one of the two has an older map, because it restarted empty (or missed a
// FilterMapUpdate).
type FilterMapSync struct{ Hosts [][]FilterEpoch }

// AddQueue tells filters about a new queue, and a queue to add it to the ring.
type AddQueue struct{ Node protocol.NodeID }

// AddMaintainer asks a queue to start a new epoch of the journal with Node added.
type AddMaintainer struct{ Node protocol.NodeID }

const headerBytes = 16

func recordsBytes(rs []*Record) int {
	n := 0
	for _, r := range rs {
		n += r.SizeBytes()
	}
	return n
}

// SizeBytes estimates the encoded size.
func (m *RecordBatch) SizeBytes() int { return headerBytes + recordsBytes(m.Records) }

// SizeBytes estimates the encoded size.
func (m *BatchAck) SizeBytes() int { return headerBytes }

// SizeBytes estimates the encoded size.
func (m *Token) SizeBytes() int {
	n := headerBytes + 16*len(m.MaxTOId) + recordsBytes(m.Deferred) + 4*len(m.Ring) + 24*len(m.Journal)
	for _, s := range m.Logged {
		n += 12 + 8*len(s.above)
	}
	return n
}

// SizeBytes estimates the encoded size.
func (m *TokenAck) SizeBytes() int { return headerBytes }

// SizeBytes estimates the encoded size.
func (m *RowUpdate) SizeBytes() int { return headerBytes + 8*len(m.Row) }

// SizeBytes estimates the encoded size.
func (m *ShipBatch) SizeBytes() int {
	return headerBytes + recordsBytes(m.Records) + 8*len(m.Table)*len(m.Table)
}

// SizeBytes estimates the encoded size.
func (m *TableUpdate) SizeBytes() int { return headerBytes + 8*len(m.Table)*len(m.Table) }

// SizeBytes estimates the encoded size.
func (m *AddBatcher) SizeBytes() int { return headerBytes }

// SizeBytes estimates the encoded size.
func (m *FilterMapUpdate) SizeBytes() int { return headerBytes + 12 + 4*len(m.Filters) }

// SizeBytes estimates the encoded size.
func (m *FilterMapSync) SizeBytes() int {
	n := headerBytes
	for _, eps := range m.Hosts {
		for _, e := range eps {
			n += 8 + 4*len(e.Filters)
		}
	}
	return n
}

// SizeBytes estimates the encoded size.
func (m *AddQueue) SizeBytes() int { return headerBytes }

// SizeBytes estimates the encoded size.
func (m *AddMaintainer) SizeBytes() int { return headerBytes }
