package rlog

import (
	"slices"

	"github.com/meridian-kv/meridian/protocol/wire"
)

// Checkpoint appends the log's whole state to w, encoding each record's payload with
// appendPayload (a codec's payload function): the records held, the timetable, the per-peer
// send positions and flags, the newest timestamps and the GC threshold. GC's scratch space is
// left out. Restore reads it back.
func (l *Log[P]) Checkpoint(w *wire.Writer, appendPayload func([]byte, P) ([]byte, error)) {
	w.Int("rlog sites", l.n, MaxSites)
	w.Varint(l.last)
	for _, ts := range l.table {
		w.Varint(ts)
	}
	for j := range l.n {
		w.Int("rlog known", l.known[j], MaxRecords*MaxSites)
		w.Int("rlog sent to", l.sentTo[j], MaxRecords*MaxSites)
		w.Uvarint(l.sentSeq[j])
		w.Bool(l.fullNext[j])
		w.Bool(l.wantFull[j])
		w.Varint(l.newest[j])
	}
	w.Bool(l.sentNewest != nil)
	for _, ts := range l.sentNewest {
		w.Varint(ts)
	}
	w.Int("rlog trim at", l.trimAt, MaxRecords*MaxSites)
	w.Count("rlog records", len(l.records), MaxRecords*MaxSites)
	for _, r := range l.records {
		w.Int("rlog record host", r.Host, l.n-1)
		w.Varint(r.TS)
		w.Append("rlog record", func(dst []byte) ([]byte, error) { return appendPayload(dst, r.Payload) })
	}
}

// Restore replaces the state of a log built by New for the same sites by the one Checkpoint
// wrote, decoding payloads with decodePayload. A malformed checkpoint (another number of sites,
// a position past the records, a record of no site) is recorded as r's error; the log must then
// be discarded.
func (l *Log[P]) Restore(r *wire.Reader, decodePayload func(*wire.Decoder) (P, error)) {
	if n := r.Int("rlog sites", MaxSites); r.Err() == nil && n != l.n {
		r.Fail("rlog sites", "checkpoint of %d sites, want %d", n, l.n)
	}
	if r.Err() != nil {
		return
	}
	l.last = r.Varint("rlog last")
	for i := range l.table {
		l.table[i] = r.Varint("rlog table")
	}
	for j := range l.n {
		l.known[j] = r.Int("rlog known", MaxRecords*MaxSites)
		l.sentTo[j] = r.Int("rlog sent to", MaxRecords*MaxSites)
		l.sentSeq[j] = r.Uvarint("rlog sent seq")
		l.fullNext[j] = r.Bool("rlog full next")
		l.wantFull[j] = r.Bool("rlog want full")
		l.newest[j] = r.Varint("rlog newest")
	}
	l.sentNewest = nil
	if r.Bool("rlog sent newest") {
		l.sentNewest = make([]int64, l.n)
		for j := range l.sentNewest {
			l.sentNewest[j] = r.Varint("rlog sent newest")
		}
	}
	l.trimAt = r.Int("rlog trim at", MaxRecords*MaxSites)
	count := r.Count("rlog records", MaxRecords*MaxSites, 3)
	l.records = make([]Record[P], count)
	for i := range l.records {
		rec := &l.records[i]
		rec.Host = r.Int("rlog record host", l.n-1)
		rec.TS = r.Varint("rlog record timestamp")
		r.Decode(func(d *wire.Decoder) (err error) {
			rec.Payload, err = decodePayload(d)
			return err
		})
	}
	if r.Err() == nil && slices.ContainsFunc(append(slices.Clone(l.known), l.sentTo...), func(pos int) bool { return pos > count }) {
		r.Fail("rlog positions", "a peer's position lies past the %d records", count)
	}
	if r.Err() != nil {
		l.records = nil
	}
}
