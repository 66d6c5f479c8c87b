package flstore

import (
	"errors"
	"fmt"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
)

// A Chariots token rebuild at a maintainer (Freeze, Truncate; the chariots package doc, "Token
// loss and a queue restarting empty"): the coordinating queue freezes it under a new
// generation, learns its progress, and truncates its share of the log to the stable prefix.

// freeze enters generation f.Gen (if newer) and answers with the progress, which stays put
// while frozen (no assignment is taken). A repeat of the current generation's Freeze is
// answered again while frozen; an older one is ignored.
func (m *LogMaintainer) freeze(from protocol.NodeID, f *Freeze) {
	if f.Gen > m.gen {
		m.gen, m.frozen = f.Gen, true
	}
	if f.Gen == m.gen && m.frozen {
		m.env.Send(from, &FreezeAck{Gen: m.gen, Next: m.next, Journal: m.cfg.Journal})
	}
}

// truncateTo cuts this maintainer's share of the log to t.T (Truncate) once, ends the freeze,
// and answers with its records at positions t.From..t.T (bodies and tags dropped). A Truncate
// whose T is not below the first unfilled own position (a hole up to T) is malformed and ignored.
func (m *LogMaintainer) truncateTo(from protocol.NodeID, t *Truncate) {
	if t.Gen != m.gen || t.T < m.hl {
		return // another generation's, or below the head of the log: records would be lost
	}
	if m.frozen {
		if t.Journal.Valid() && t.Journal.Extends(m.cfg.Journal) && t.Journal.Within(m.cfg.Peers) {
			m.learnJournal(t.Journal)
		}
		if m.next != None && t.T >= m.next {
			return
		}
		m.truncate(t.T)
		m.frozen = false
	}
	ack := &TruncateAck{Gen: m.gen}
	m.disk.records(max(t.From, 1), t.T, func(r *Record) bool {
		ack.Records = append(ack.Records, collected(r))
		return true
	})
	m.env.Send(from, ack)
}

// truncate deletes the own records above stable prefix t (every own position up to t is filled:
// t < next), makes its positions unfilled, holds the peers' progress to t, drops the index entries
// above it and takes t as the head of the log (answering the clients up to it).
func (m *LogMaintainer) truncate(t uint64) {
	var gone []*Record
	m.disk.records(t+1, None, func(r *Record) bool {
		gone = append(gone, r)
		return true
	})
	for _, r := range gone {
		m.disk.remove(r)
		delete(m.observed, r.LId)
	}
	m.above = map[uint64]bool{}
	if m.contig > t {
		m.contig = m.cfg.Journal.lastOwned(m.cfg.Self, t)
	}
	m.next = m.cfg.Journal.NextOwned(m.cfg.Self, t)
	for n, p := range m.peers {
		p.next, p.contig = min(p.next, m.cfg.Journal.NextOwned(n, t)), min(p.contig, t)
		m.peers[n] = p
	}
	for ix, es := range m.unindexed {
		m.unindexed[ix] = entriesUpTo(es, t)
	}
	i := sort.Search(len(m.unanswered), func(i int) bool { return m.unanswered[i].LId > t })
	m.unanswered = m.unanswered[:i] // the clients of the records above t retry
	m.raiseHL(t)
}

// entriesUpTo returns the entries of es at positions up to l (es itself if all are).
func entriesUpTo(es []IndexEntry, l uint64) []IndexEntry {
	for i, e := range es {
		if e.LId > l {
			out := append([]IndexEntry(nil), es[:i]...)
			for _, e := range es[i+1:] {
				if e.LId <= l {
					out = append(out, e)
				}
			}
			return out
		}
	}
	return es
}

// lastOwned returns the last position at most p that m owns, or 0 if none.
func (j Journal) lastOwned(m protocol.NodeID, p uint64) uint64 {
	for e := j.epochOf(max(p, 1)); e >= 0 && p > 0; e-- {
		ep := j[e]
		if p < ep.StartLId {
			continue
		}
		n, b := uint64(len(ep.Maintainers)), ep.B
		for i, x := range ep.Maintainers {
			if x != m {
				continue
			}
			block := (p - ep.StartLId) / b
			round, at := block/n, block%n
			switch {
			case at == uint64(i):
				return p
			case at > uint64(i):
				return ep.StartLId + (round*n+uint64(i))*b + b - 1
			case round > 0:
				return ep.StartLId + ((round-1)*n+uint64(i))*b + b - 1
			}
		}
		p = ep.StartLId - 1
	}
	return 0
}

// lose stops this maintainer for good: peer from reports head of the log hl, at or above the
// first position this maintainer has not filled, so records it held are gone (it restarted with
// an empty data directory). No other node of the datacenter holds its ranges (in-datacenter
// replication of maintainers is out of scope, spec 5.13): rather than serve a log with holes
// or let a token rebuild truncate the datacenter's log below what clients were answered, it
// refuses everything with the reason (Failure; the network server stops the node with it).
func (m *LogMaintainer) lose(from protocol.NodeID, hl uint64) {
	m.lost = fmt.Sprintf("flstore: maintainer %d lost its records: maintainer %d's head of the log is %d, but its own first "+
		"unfilled position is %d (restarted with an empty data directory?); no other node holds its ranges (spec 5.13: "+
		"in-datacenter replication of maintainers is out of scope): restore its data directory", m.cfg.Self, from, hl, m.next)
}

// Failure implements protocol.Failer: the reason this maintainer stopped (lose), or nil.
func (m *LogMaintainer) Failure() error {
	if m.lost == "" {
		return nil
	}
	return errors.New(m.lost)
}
