package flstore

import "github.com/meridian-kv/meridian/protocol"

// Client operations (protocol.Request.Op) and their answers (protocol.Reply.Op).

// AppendOp appends Record (its Tags, Body, WantDeps, MinLId and AppendSeq; the rest is
// assigned): in standalone FLStore to any maintainer, in Chariots to any batcher.
type AppendOp struct{ Record *Record }

// AppendResult answers an append once the record is persisted at its owner maintainer.
type AppendResult struct {
	TOId, LId uint64
	// Via is the node that took the append (Chariots: a batcher, Record.Via), where a real
	// node relays the answer (RelayTo); NoVia if the answering node took it. Not encoded: a
	// decoded answer, already where it was going, has 0.
	Via protocol.NodeID
}

// NoVia is AppendResult.Via when the node that answers took the append itself.
const NoVia protocol.NodeID = -1

// RelayTo returns the node a real deployment relays the answer to when the node that made it
// holds no waiting call (server/relay.go): the node that took the append, where its client
// waits. The client may have sent the append to any batcher of its datacenter (a batcher it
// fails over to after its first is down), so the node that allocated its id is not enough.
func (a *AppendResult) RelayTo() (protocol.NodeID, bool) { return a.Via, a.Via != NoVia }

// HLQuery asks a maintainer for the head of the log.
type HLQuery struct{}

// HLResult is a maintainer's head of the log and its epoch journal (where older positions live).
type HLResult struct {
	HL      uint64
	Journal Journal
}

// ReadOp reads positions [From, To] owned by the maintainer; To is capped at the head of the
// log: the larger of the maintainer's and HL, a head of log the client learned from any
// maintainer (every position up to it is filled at its owner, so it is safe to serve).
type ReadOp struct{ From, To, HL uint64 }

// ReadResult holds the records read (no-op fillers included, marked) and the head of log used.
type ReadResult struct {
	Records []*Record
	HL      uint64
}

// Compare is a tag-value predicate of an index lookup.
type Compare uint8

// The predicates (spec 2.2 rules).
const (
	Any Compare = iota
	Eq
	Lt
	Le
	Gt
	Ge
)

// LookupOp asks an indexer for the positions of records tagged Tag whose value satisfies
// (Op, Value), at most MaxLId (the head of log the client read), at most Limit of them (0: all),
// the most recent first if asked.
type LookupOp struct {
	Tag             string
	Op              Compare
	Value           []byte
	MaxLId          uint64
	Limit           int
	MostRecentFirst bool
	// Journal is the journal of the client's head of log: its maintainers are the ones whose
	// coverage the answer reports.
	Journal Journal
}

// LookupResult lists the positions found, in the order asked. Covered says whether the
// indexer holds every entry of every record at a position up to MaxLId (each maintainer of
// the lookup's journal vouched for its share, IndexAdd.Through); if not, an entry may be
// missing and the client asks again.
type LookupResult struct {
	LIds    []uint64
	Covered bool
}

// Peer messages.

// HLGossip is a maintainer's progress (spec 3.4): Next is its first unfilled position (None if
// it owns no more), Contig the last position it owns below Next (the source rule's value), and
// Journal the epoch journal it computed them under. Gen is the token generation the maintainer
// is in (Chariots, Freeze): a peer drops the progress of an older generation, which a
// truncation may have undone. HL is the sender's head of the log: a maintainer whose first
// unfilled position is at or below it has lost records (its disk; LogMaintainer.Failure).
// Frozen says the sender is frozen (Freeze): its progress may yet be truncated, and only its
// HL counts.
type HLGossip struct {
	Next, Contig uint64
	Journal      Journal
	Gen, HL      uint64
	Frozen       bool
}

// IndexEntry is one tag of one persisted record.
type IndexEntry struct {
	Tag   string
	Value []byte
	LId   uint64
}

// IndexAdd carries entries from a maintainer to the indexer of their tags; resent until acked.
// Through, if not 0, is the maintainer's claim that every entry of its records at positions up
// to Through, under the first Epochs epochs of the journal, is in this message or was
// acknowledged before (every position it owns below its next free one is filled).
type IndexAdd struct {
	Entries []IndexEntry
	Through uint64
	Epochs  int
}

// IndexAck acknowledges the entries of an IndexAdd by position and tag, and its claim.
type IndexAck struct {
	Entries []IndexEntry
	Through uint64
	Epochs  int
}

// Assign carries records with their positions from a Chariots queue to their owner maintainer,
// with the epoch journal they were assigned under and the token generation that assigned them
// (a maintainer takes only its current generation's, once truncated: Freeze); resent until
// acknowledged.
type Assign struct {
	Records []*Record
	Journal Journal
	Gen     uint64
}

// PersistAck acknowledges persisted positions to the queue that assigned them, with the
// maintainer's head of the log HL (every position up to it is filled: the token's stable
// prefix, which the queues publish the row of), under token generation Gen (a queue takes only
// its own generation's: a rebuild may give a position again).
type PersistAck struct {
	LIds    []uint64
	HL, Gen uint64
}

// Token rebuild (Chariots, spec 5.13; the chariots package doc): the coordinating queue freezes
// every maintainer under a new generation, truncates the log to its stable prefix and restarts
// the token there.

// Freeze opens token generation Gen at a maintainer: from then on it takes no assignment of an
// older generation, and none of Gen until truncated (Truncate). It answers FreezeAck.
type Freeze struct{ Gen uint64 }

// FreezeAck is a frozen maintainer's progress: Next its first unfilled position (None if it owns
// no more) under Journal.
type FreezeAck struct {
	Gen, Next uint64
	Journal   Journal
}

// Truncate cuts a frozen maintainer's share of the log to the stable prefix T (every position
// up to T is filled, nothing above it was read, shipped or answered): it deletes its records above
// T, learns Journal, takes T as its head of the log, and answers TruncateAck with its records
// at positions From..T (From > T: none), which the new token's row and logged appends need.
type Truncate struct {
	Gen, T, From uint64
	Journal      Journal
}

// TruncateAck answers Truncate: the maintainer's records at positions From..T, without bodies
// and tags.
type TruncateAck struct {
	Gen     uint64
	Records []*Record
}

// FetchReq asks a maintainer for its records hosted by its own datacenter with TOId ≥ FromTOId
// and a position within the head of the log, at most Limit, in TOId order (Chariots senders).
// Horizon, if set, is the sender's garbage-collection horizon: per host, the TOId up to which
// every datacenter holds the records (spec 4 GC rule).
type FetchReq struct {
	FromTOId uint64
	Limit    int
	Horizon  []uint64
}

// FetchResp answers a FetchReq from FromTOId (the request's): the records of this
// datacenter's clients with TOId ≥ FromTOId, in TOId order, up to the head of the log.
type FetchResp struct {
	FromTOId uint64
	Records  []*Record
}

const headerBytes = 16

// SizeBytes estimates the encoded size.
func (m *AppendOp) SizeBytes() int { return headerBytes + m.Record.SizeBytes() }

// SizeBytes estimates the encoded size.
func (m *AppendResult) SizeBytes() int { return headerBytes + 16 }

// SizeBytes estimates the encoded size.
func (m *HLQuery) SizeBytes() int { return headerBytes }

// SizeBytes estimates the encoded size.
func (m *HLResult) SizeBytes() int { return headerBytes + 8 + journalBytes(m.Journal) }

// SizeBytes estimates the encoded size.
func (m *ReadOp) SizeBytes() int { return headerBytes + 16 }

// SizeBytes estimates the encoded size.
func (m *ReadResult) SizeBytes() int { return headerBytes + 8 + recordsBytes(m.Records) }

// SizeBytes estimates the encoded size.
func (m *LookupOp) SizeBytes() int {
	return headerBytes + len(m.Tag) + len(m.Value) + 24 + journalBytes(m.Journal)
}

// SizeBytes estimates the encoded size.
func (m *LookupResult) SizeBytes() int { return headerBytes + 1 + 8*len(m.LIds) }

// SizeBytes estimates the encoded size.
func (m *HLGossip) SizeBytes() int { return headerBytes + 33 + journalBytes(m.Journal) }

// SizeBytes estimates the encoded size.
func (m *IndexAdd) SizeBytes() int { return headerBytes + 12 + entriesBytes(m.Entries) }

// SizeBytes estimates the encoded size.
func (m *IndexAck) SizeBytes() int { return headerBytes + 12 + entriesBytes(m.Entries) }

// SizeBytes estimates the encoded size.
func (m *Assign) SizeBytes() int {
	return headerBytes + recordsBytes(m.Records) + journalBytes(m.Journal)
}

// SizeBytes estimates the encoded size.
func (m *PersistAck) SizeBytes() int { return headerBytes + 16 + 8*len(m.LIds) }

// SizeBytes estimates the encoded size.
func (m *Freeze) SizeBytes() int { return headerBytes + 8 }

// SizeBytes estimates the encoded size.
func (m *FreezeAck) SizeBytes() int { return headerBytes + 16 + journalBytes(m.Journal) }

// SizeBytes estimates the encoded size.
func (m *Truncate) SizeBytes() int { return headerBytes + 24 + journalBytes(m.Journal) }

// SizeBytes estimates the encoded size.
func (m *TruncateAck) SizeBytes() int { return headerBytes + 8 + recordsBytes(m.Records) }

// SizeBytes estimates the encoded size.
func (m *FetchReq) SizeBytes() int { return headerBytes + 16 + 8*len(m.Horizon) }

// SizeBytes estimates the encoded size.
func (m *FetchResp) SizeBytes() int { return headerBytes + 8 + recordsBytes(m.Records) }

func journalBytes(j Journal) int {
	n := 0
	for _, e := range j {
		n += 16 + 4*len(e.Maintainers)
	}
	return n
}

func entriesBytes(es []IndexEntry) int {
	n := 0
	for _, e := range es {
		n += 12 + len(e.Tag) + len(e.Value)
	}
	return n
}

var _ = []protocol.Message{&AppendOp{}, &AppendResult{}, &HLQuery{}, &HLResult{}, &ReadOp{}, &ReadResult{},
	&LookupOp{}, &LookupResult{}, &HLGossip{}, &IndexAdd{}, &IndexAck{}, &Assign{}, &PersistAck{}, &FetchReq{}, &FetchResp{},
	&Freeze{}, &FreezeAck{}, &Truncate{}, &TruncateAck{}}
