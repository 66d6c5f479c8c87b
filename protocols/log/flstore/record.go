package flstore

import (
	"math"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Tag is a named, optionally valued label on a record; indexers map tags to positions (spec 3.5).
type Tag struct {
	Name  string
	Value []byte
}

// Record is one log entry (spec 2.1). Host and TOId name it across datacenters; LId is its
// position in one datacenter's log. Client, AppendSeq, CallSeq and Via name the append that
// created it (its client, the client's append counter, the request to answer and the node that
// took it), so that the checker can hold every append to exactly once and the owner maintainer
// can answer the client.
type Record struct {
	Host int    // datacenter whose client created it
	TOId uint64 // 1, 2, 3, ... per host; 0 until a queue (Chariots) or maintainer assigns it
	LId  uint64 // position in this datacenter's log; 0 until assigned
	// Deps[k] is the highest TOId of datacenter k this record depends on (spec A3: the
	// datacenter's knowledge vector when the record was logged at its host).
	Deps []uint64
	// WantDeps is a client-supplied dependency vector a local record must wait for before it is
	// logged (nil: none); it is subsumed by Deps once logged.
	WantDeps []uint64
	// MinLId asks for a position above MinLId (explicit order, spec 3.6; standalone FLStore).
	MinLId    uint64
	Tags      []Tag
	Body      []byte
	Client    txn.ClientID
	AppendSeq uint64
	CallSeq   uint64
	// Via is the node that took the append (Chariots: the batcher), where the answer is
	// relayed (AppendResult.Via).
	Via protocol.NodeID
	// NoOp marks a filler record (spec A6, 5.13): skipped by readers, never indexed.
	NoOp bool
	// Collected marks a record whose body was garbage-collected (spec 4 GC): every datacenter
	// is known to hold it.
	Collected bool
}

// Key names a record across datacenters: its host and TOId.
type Key struct {
	Host int
	TOId uint64
}

// Key returns r's cross-datacenter name.
func (r *Record) Key() Key { return Key{r.Host, r.TOId} }

// recordOverheadBytes approximates a record's fixed fields on the wire.
const recordOverheadBytes = 48

// SizeBytes estimates r's encoded size.
func (r *Record) SizeBytes() int {
	n := recordOverheadBytes + len(r.Body) + 8*(len(r.Deps)+len(r.WantDeps))
	for _, t := range r.Tags {
		n += len(t.Name) + len(t.Value) + 4
	}
	return n
}

// Clone returns a copy of r that shares nothing mutable with it but Body and Tags, which are
// never modified after creation.
func (r *Record) Clone() *Record {
	c := *r
	c.Deps = append([]uint64(nil), r.Deps...)
	c.WantDeps = append([]uint64(nil), r.WantDeps...)
	return &c
}

// recordsBytes sums the sizes of rs.
func recordsBytes(rs []*Record) int {
	n := 0
	for _, r := range rs {
		n += r.SizeBytes()
	}
	return n
}

// Epoch is one entry of the epoch journal (spec 3.2, 5.12): from StartLId on, positions are
// dealt out in ranges of B to Maintainers round robin.
type Epoch struct {
	StartLId    uint64
	Maintainers []protocol.NodeID
	B           uint64
}

// Journal is the epoch journal: epochs in increasing StartLId order, the first starting at 1.
// Journals only grow, and one writer extends them (the token holder in Chariots), so of two
// journals the longer one extends the shorter.
type Journal []Epoch

// None is the position a maintainer's progress takes when it owns no further position.
const None = math.MaxUint64

// epochOf returns the index of the epoch covering position l ≥ 1.
func (j Journal) epochOf(l uint64) int {
	e := 0
	for i := range j {
		if j[i].StartLId <= l {
			e = i
		}
	}
	return e
}

// Owner returns the maintainer owning position l ≥ 1 (spec 3.2 with the journal of 5.12).
func (j Journal) Owner(l uint64) protocol.NodeID {
	ep := j[j.epochOf(l)]
	off := l - ep.StartLId
	return ep.Maintainers[(off/ep.B)%uint64(len(ep.Maintainers))]
}

// NextOwned returns the first position after p owned by m, or None if m owns none.
func (j Journal) NextOwned(m protocol.NodeID, p uint64) uint64 {
	q := p + 1
	for e := j.epochOf(q); e < len(j); e++ {
		ep := j[e]
		q = max(q, ep.StartLId)
		idx := -1
		for i, x := range ep.Maintainers {
			if x == m {
				idx = i
			}
		}
		if idx >= 0 {
			n, b := uint64(len(ep.Maintainers)), ep.B
			block := (q - ep.StartLId) / b
			round, at := block/n, block%n
			switch {
			case at == uint64(idx):
			case at < uint64(idx):
				q = ep.StartLId + (round*n+uint64(idx))*b
			default:
				q = ep.StartLId + ((round+1)*n+uint64(idx))*b
			}
			if e+1 == len(j) || q < j[e+1].StartLId {
				return q
			}
		}
		if e+1 < len(j) {
			q = j[e+1].StartLId
		}
	}
	return None
}

// Extends reports whether j is o extended by zero or more epochs.
func (j Journal) Extends(o Journal) bool {
	if len(j) < len(o) {
		return false
	}
	for i := range o {
		if j[i].StartLId != o[i].StartLId || j[i].B != o[i].B || len(j[i].Maintainers) != len(o[i].Maintainers) {
			return false
		}
	}
	return true
}

// Within reports whether every maintainer j names is one of nodes.
func (j Journal) Within(nodes []protocol.NodeID) bool {
	for _, e := range j {
		for _, m := range e.Maintainers {
			if !contains(nodes, m) {
				return false
			}
		}
	}
	return true
}

func contains(ns []protocol.NodeID, m protocol.NodeID) bool {
	for _, x := range ns {
		if x == m {
			return true
		}
	}
	return false
}

// Valid reports whether j is well formed: epochs start at 1, in increasing order, each with
// maintainers and a positive range size.
func (j Journal) Valid() bool {
	if len(j) == 0 || j[0].StartLId != 1 {
		return false
	}
	for i, e := range j {
		if e.B == 0 || len(e.Maintainers) == 0 || (i > 0 && e.StartLId <= j[i-1].StartLId) {
			return false
		}
	}
	return true
}
