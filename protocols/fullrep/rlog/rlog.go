// Package rlog is the causally ordered replicated log with an N×N timetable that Message Futures
// and Helios are built on (Wuu and Bernstein's replicated dictionary; the dissertation's RLog,
// RDict and awareness table; spec §1).
//
// Each of n sites appends records it creates, periodically sends every peer the records that peer
// may lack together with its timetable, and incorporates what it receives. Entry T[j][k] = τ means
// "this site knows that site j holds every record created at site k with timestamp ≤ τ". The log
// keeps these invariants, which the tests check:
//
//   - prefix knowledge: the k-records a site holds are exactly those with ts ≤ T[self][k]
//     (minus garbage-collected ones);
//   - dominance: T[j][k] ≤ T[self][k], and no entry ever decreases;
//   - causality: records are forwarded in log order and a message's table is merged only after
//     its records are incorporated, so T[self][k] ≥ τ implies this site holds everything k held
//     at k-time τ.
//
// Incremental sends. The spec's sender includes every record the receiver is not known to hold,
// so each record travels in every message to a peer until that peer's acknowledgement returns
// (about one round trip of periodic sends). To avoid that resending, an incremental message
// carries only the records the sender obtained since its previous message to that peer (and
// still not known to it), with a base: for every site k, the timestamp of the newest k-record
// the sender held at that previous message. A receiver accepts an incremental message only if
// it holds every record up to the base (T[self][k] ≥ base[k]), so it never incorporates records
// past a gap; a lost message that carried nothing new to the receiver (a heartbeat, or records
// it got from a third site) leaves no gap at all. A full message carries every record the
// receiver is not known to hold, as in the spec, and is always accepted. A receiver that rejects
// a message asks the sender, in its own next message, for a full one (NeedFull), which repairs
// the link one round trip after the gap; every FullEvery-th message is full anyway, in case the
// request is lost too. Either way an accepted message leaves the receiver holding everything the
// sender held and it lacked, which is all the invariants need. Stale, duplicated or reordered
// messages are harmless.
package rlog

import (
	"errors"
	"fmt"
	"slices"
)

// Record is one log entry: created at site Host with timestamp TS (unique per host, increasing).
type Record[P any] struct {
	Host    int
	TS      int64
	Payload P
}

// Message is the partial log one site sends another, with a copy of the sender's timetable
// (row-major n×n). Full says the message carries every record the receiver is not known to
// hold; otherwise it carries those the sender obtained since its previous message, and Base[k]
// is the newest k-record's timestamp the sender held at that previous message (nil when Full).
// NeedFull asks the receiver for a full message next: the sender rejected one of its messages.
type Message[P any] struct {
	From     int
	SendTS   int64
	Full     bool
	NeedFull bool
	Base     []int64
	Records  []Record[P]
	Table    []int64
}

// FullEvery is how often (in messages per link) a sender sends a full message; the first
// message on every link is full.
const FullEvery = 16

// ErrGap is returned by Receive for an incremental message whose base this site does not hold
// (a message carrying records it lacks was lost or reordered). The message is ignored; this
// site's next message asks the sender for a full one, which repairs the link.
var ErrGap = errors.New("rlog: incremental message after a gap; waiting for a full message")

// Log is one site's replica of the log. It is not safe for concurrent use.
type Log[P any] struct {
	self, n int
	last    int64 // highest timestamp this site has used or advertised
	table   []int64
	records []Record[P]
	// Per peer j: every record before known[j] is known to j; every record before sentTo[j] went
	// to j in one of the sentSeq[j] messages so far; fullNext[j]: j asked for a full message;
	// wantFull[j]: a message from j was rejected, so ask j for a full one.
	known, sentTo      []int
	sentSeq            []uint64
	fullNext, wantFull []bool
	// newest[k] is the newest k-record's timestamp this site holds (or ever held: GC keeps it);
	// sentNewest is newest as of the previous Broadcast, the base of the next incremental messages.
	newest, sentNewest []int64
	// Scratch space of GC, and the length at which Trim next runs it.
	floor      []int64
	keptBefore []int
	trimAt     int
	// slab is the rest of the chunk the next messages' records are carved from (slabRecords).
	slab []Record[P]
}

// New returns site self's empty log in a system of n sites.
func New[P any](self, n int) *Log[P] {
	if n < 1 || self < 0 || self >= n {
		panic(fmt.Sprintf("rlog: site %d out of range for %d sites", self, n))
	}
	return &Log[P]{self: self, n: n, table: make([]int64, n*n),
		known: make([]int, n), sentTo: make([]int, n), sentSeq: make([]uint64, n),
		fullNext: make([]bool, n), wantFull: make([]bool, n), newest: make([]int64, n)}
}

// T returns T[j][k].
func (l *Log[P]) T(j, k int) int64 { return l.table[j*l.n+k] }

// Self returns this site's index.
func (l *Log[P]) Self() int { return l.self }

// Sites returns the number of sites.
func (l *Log[P]) Sites() int { return l.n }

// Last returns the highest timestamp this site has assigned.
func (l *Log[P]) Last() int64 { return l.last }

// next returns a timestamp strictly greater than every earlier one: max(nowTS, last+1). Pass
// the local clock for physical timestamps (Helios) or 0 for a logical counter.
func (l *Log[P]) next(nowTS int64) int64 {
	l.last = max(nowTS, l.last+1)
	l.table[l.self*l.n+l.self] = l.last
	return l.last
}

// Append creates a local record with a fresh timestamp not below nowTS and returns it.
func (l *Log[P]) Append(nowTS int64, p P) Record[P] {
	r := Record[P]{Host: l.self, TS: l.next(nowTS), Payload: p}
	l.records = append(l.records, r)
	l.newest[l.self] = r.TS
	return r
}

// Broadcast takes one heartbeat timestamp σ (not below nowTS) and calls send once per peer with
// that peer's partial log stamped σ. One σ serves all peers, so that "everyone has heard my send
// at σ" is a single condition (Message Futures' LPT). The messages share one copy of the
// timetable: neither senders nor receivers may modify a message. It returns σ.
func (l *Log[P]) Broadcast(nowTS int64, send func(to int, m *Message[P])) int64 {
	sigma := l.next(nowTS)
	table := slices.Clone(l.table)
	for to := 0; to < l.n; to++ {
		if to != l.self {
			send(to, l.messageTo(to, sigma, table))
		}
	}
	l.sentNewest = slices.Clone(l.newest)
	return sigma
}

// messageTo returns the partial log for peer to, stamped sigma, carrying table.
func (l *Log[P]) messageTo(to int, sigma int64, table []int64) *Message[P] {
	l.sentSeq[to]++
	m := &Message[P]{From: l.self, SendTS: sigma, Full: l.sentSeq[to]%FullEvery == 1 || l.fullNext[to],
		NeedFull: l.wantFull[to], Table: table}
	l.fullNext[to], l.wantFull[to] = false, false
	if !m.Full {
		m.Base = l.sentNewest
	}
	row := l.table[to*l.n : (to+1)*l.n]
	for l.known[to] < len(l.records) && row[l.records[l.known[to]].Host] >= l.records[l.known[to]].TS {
		l.known[to]++
	}
	start := l.known[to]
	if !m.Full {
		start = max(start, l.sentTo[to])
	}
	l.sentTo[to] = len(l.records)
	candidates := l.records[start:]
	if len(candidates) > len(l.slab) {
		l.slab = make([]Record[P], max(len(candidates), slabRecords))
	}
	records := l.slab[:0:len(candidates)]
	for _, r := range candidates {
		if row[r.Host] < r.TS {
			records = append(records, r)
		}
	}
	if len(records) > 0 {
		m.Records = records[:len(records):len(records)]
		l.slab = l.slab[len(records):]
	}
	return m
}

// slabRecords is the size of the chunks that messages' records are carved from: one allocation
// serves many messages. Messages are never modified, so they can share a chunk; it is freed with
// the last of them.
const slabRecords = 1024

// Receive incorporates m: every record not yet known is appended to the log and passed to
// incorporate (which may itself Append local records), then the sender's timetable is merged.
// Callers evaluate commit conditions only after Receive returns (spec §1.4: records, then merge,
// then commit check). A malformed message is rejected whole, before any state changes; an
// incremental one after a gap (ErrGap) changes no records and no table entry, and only makes
// this site's next message to the sender ask for a full one. A valid message's NeedFull is
// honoured either way.
func (l *Log[P]) Receive(m *Message[P], incorporate func(Record[P])) error {
	if err := l.validate(m); err != nil {
		return err
	}
	l.fullNext[m.From] = l.fullNext[m.From] || m.NeedFull
	mine := l.table[l.self*l.n : (l.self+1)*l.n]
	if !m.Full {
		for k, ts := range m.Base {
			if k != l.self && mine[k] < ts {
				l.wantFull[m.From] = true
				return ErrGap
			}
		}
	}
	for _, r := range m.Records {
		if mine[r.Host] >= r.TS {
			continue // already known
		}
		l.records = append(l.records, r)
		mine[r.Host] = r.TS
		l.newest[r.Host] = r.TS
		incorporate(r)
	}
	theirs := m.Table[m.From*l.n : (m.From+1)*l.n]
	for k := range mine {
		mine[k] = max(mine[k], theirs[k])
	}
	for j := 0; j < l.n; j++ {
		if j == l.self {
			continue
		}
		for k := 0; k < l.n; k++ {
			i := j*l.n + k
			l.table[i] = max(l.table[i], m.Table[i])
		}
	}
	return nil
}

func (l *Log[P]) validate(m *Message[P]) error {
	if m.From < 0 || m.From >= l.n || m.From == l.self {
		return fmt.Errorf("rlog: message from invalid site %d at site %d of %d", m.From, l.self, l.n)
	}
	if len(m.Table) != l.n*l.n {
		return fmt.Errorf("rlog: message from site %d has %d table entries, want %d", m.From, len(m.Table), l.n*l.n)
	}
	if m.Full != (m.Base == nil) || (m.Base != nil && len(m.Base) != l.n) {
		return fmt.Errorf("rlog: message from site %d (full %v) has a base of %d entries, want %d", m.From, m.Full, len(m.Base), l.n)
	}
	for _, r := range m.Records {
		if r.Host < 0 || r.Host >= l.n {
			return fmt.Errorf("rlog: message from site %d carries a record of invalid site %d", m.From, r.Host)
		}
		if r.Host == l.self && r.TS > l.last {
			return fmt.Errorf("rlog: message from site %d carries our own record at %d, beyond our clock %d", m.From, r.TS, l.last)
		}
	}
	for j := 0; j < l.n; j++ {
		if ts := m.Table[j*l.n+l.self]; ts > l.last {
			return fmt.Errorf("rlog: site %d claims site %d knows our records up to %d, beyond our clock %d", m.From, j, ts, l.last)
		}
	}
	return nil
}

// GC drops every record that all sites are known to hold (spec §1.6) and returns how many.
func (l *Log[P]) GC() int {
	// floor[k]: every site holds k's records up to floor[k].
	floor := append(l.floor[:0], l.table[:l.n]...)
	for j := 1; j < l.n; j++ {
		for k, ts := range l.table[j*l.n : (j+1)*l.n] {
			floor[k] = min(floor[k], ts)
		}
	}
	l.floor = floor
	// keptBefore[i]: how many of the records before index i are kept, the new index of a
	// per-peer position i.
	keptBefore := l.keptBefore[:0]
	kept := l.records[:0]
	for _, r := range l.records {
		keptBefore = append(keptBefore, len(kept))
		if r.TS > floor[r.Host] {
			kept = append(kept, r)
		}
	}
	keptBefore = append(keptBefore, len(kept))
	l.keptBefore = keptBefore
	for j := range l.n {
		l.known[j], l.sentTo[j] = keptBefore[l.known[j]], keptBefore[l.sentTo[j]]
	}
	dropped := len(l.records) - len(kept)
	clear(l.records[len(kept):])
	l.records = kept
	return dropped
}

// Trim is GC for callers that run it after every Broadcast: it runs GC only once the log has
// grown to twice what the last GC left, so that its cost stays proportional to the records
// appended. The records it leaves in place are known to every site: no message carries them.
func (l *Log[P]) Trim() {
	if len(l.records) >= l.trimAt {
		l.GC()
		l.trimAt = 2 * len(l.records)
	}
}

// Len returns the number of records currently held.
func (l *Log[P]) Len() int { return len(l.records) }

// Records returns the held records in log order. The slice is owned by the log.
func (l *Log[P]) Records() []Record[P] { return l.records }
