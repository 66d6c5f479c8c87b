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
// forgot the appends it forwarded). Gen is the token's generation (the coordinator's clock when
// it rebuilt it): queues drop older generations' tokens and maintainers their assignments.
// StableLId is a head of the log a maintainer reported (PersistAck): every position up to it is
// filled; Recent lists the assignments above it, in runs, so that the row and the logged
// appends as of any position from StableLId on can be told (rowAt, loggedAt: a rebuild
// truncates there, and the row published covers the stable prefix only).
type Token struct {
	Gen         uint64
	Hop         uint64
	MaxTOId     []uint64
	LastLId     uint64
	Deferred    []*Record
	Ring        []protocol.NodeID
	Journal     flstore.Journal
	RowSent     []uint64 // the row last published to the senders
	RowSentAtUs int64
	Logged      map[txn.ClientID]*seqSet
	StableLId   uint64
	Recent      []Assigned
}

// Assigned is a run of N ≥ 1 assignments of the token, not all at or below its StableLId:
// positions LId … LId+N−1 hold records of one host with TOIds TOId … TOId+N−1 and, for local
// records, of one client with append numbers AppendSeq … AppendSeq+N−1 (0: none). A queue
// assigns a client's appends in a row, so under load a run covers a batch: the token carries
// a few runs, not an entry per unstable record (entries of 32 bytes each made chariots-t75's
// token grow to 500 KB under saturation, and the ring slow down in turn).
type Assigned struct {
	LId       uint64
	N         uint64
	Host      int
	TOId      uint64
	Client    txn.ClientID
	AppendSeq uint64
}

// extends reports whether the assignment of (lid, host, toid, client, seq) continues run a.
func (a Assigned) extends(lid uint64, host int, toid uint64, client txn.ClientID, seq uint64) bool {
	next := func(first, v uint64) bool { return (first == 0 && v == 0) || (first > 0 && v == first+a.N) }
	return lid == a.LId+a.N && host == a.Host && client == a.Client && toid == a.TOId+a.N && next(a.AppendSeq, seq)
}

// last returns the run's last position.
func (a Assigned) last() uint64 { return a.LId + a.N - 1 }

// clone deep-copies the token's mutable parts (records are replaced, never modified).
func (t *Token) clone() *Token {
	c := *t
	c.MaxTOId = append([]uint64(nil), t.MaxTOId...)
	c.Deferred = append([]*Record(nil), t.Deferred...)
	c.Ring = append([]protocol.NodeID(nil), t.Ring...)
	c.Journal = append(flstore.Journal(nil), t.Journal...)
	c.RowSent = append([]uint64(nil), t.RowSent...)
	c.Recent = append([]Assigned(nil), t.Recent...)
	c.Logged = make(map[txn.ClientID]*seqSet, len(t.Logged))
	for k, v := range t.Logged {
		c.Logged[k] = v.clone()
	}
	return &c
}

// newer reports whether t is a later token than o (nil: none): a newer generation, or a later
// pass of the same one.
func (t *Token) newer(o *Token) bool {
	return o == nil || t.Gen > o.Gen || (t.Gen == o.Gen && t.Hop > o.Hop)
}

// TokenAck acknowledges pass Hop of a token of generation Gen.
type TokenAck struct{ Gen, Hop uint64 }

// RowUpdate publishes the datacenter's own ATable row to the senders and filters: the token's
// MaxTOId as of its stable prefix (rowAt(StableLId)), under token generation Gen. A filter that
// sees a newer generation resets to the row (a rebuild may have truncated the log below what
// it forwarded).
type RowUpdate struct {
	Row []uint64
	Gen uint64
}

// RebuildReq asks the coordinating queue for a token rebuild (a queue that started at StartUs,
// by its clock, possibly restarted empty with assignments lost); a rebuild whose generation is
// above StartUs covers it.
type RebuildReq struct{ StartUs uint64 }

// TokenCopy answers a queue's Freeze (flstore.Freeze) with the newest token it held or passed
// (nil if none), which the rebuild starts from, and whether an elasticity event added the queue
// (the rebuilt ring then includes it).
type TokenCopy struct {
	Gen   uint64
	Token *Token
	Added bool
}

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

// Elasticity operations (protocol.Request.Op), answered with themselves (spec 5.12; AddSpare).

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
	// a run of Recent: six varints (16 bytes encoded in a 5-million-record log)
	n := headerBytes + 16 + 16*len(m.MaxTOId) + recordsBytes(m.Deferred) + 4*len(m.Ring) + 24*len(m.Journal) + 24*len(m.Recent)
	for _, s := range m.Logged {
		n += 12 + 8*len(s.above)
	}
	return n
}

// SizeBytes estimates the encoded size.
func (m *TokenAck) SizeBytes() int { return headerBytes + 8 }

// SizeBytes estimates the encoded size.
func (m *RowUpdate) SizeBytes() int { return headerBytes + 8 + 8*len(m.Row) }

// SizeBytes estimates the encoded size.
func (m *RebuildReq) SizeBytes() int { return headerBytes + 8 }

// SizeBytes estimates the encoded size.
func (m *TokenCopy) SizeBytes() int {
	if m.Token == nil {
		return headerBytes + 8
	}
	return headerBytes + 8 + m.Token.SizeBytes()
}

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
