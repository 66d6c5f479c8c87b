package rlog

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol/wire"
)

// Limits of the message encoding, checked by AppendMessage and DecodeMessage.
const (
	// MaxSites bounds the number of sites, so that a table (MaxSites² entries) stays small.
	MaxSites = 256
	// MaxRecords bounds the records of one message. A full message to a peer that has been
	// unreachable for a while carries every record since; past this, the network layer must
	// split or the peer must wait for garbage collection.
	MaxRecords = 1 << 20
)

// AppendMessage appends m's encoding to dst, encoding each payload with appendPayload. Layout,
// all integers varints (wire's conventions):
//
//	n                  number of sites; len(m.Table) = n·n
//	From, SendTS, Full, NeedFull
//	Base               n entries, each as SendTS − entry; only if not Full
//	Table              n·n entries, each as SendTS − entry
//	count              then count records: Host, SendTS − TS, payload
//
// Timestamps travel as differences from SendTS (wrapping, so every int64 round-trips): a table
// entry or record is rarely far behind the sender's clock, so a microsecond timestamp takes 1–3
// bytes instead of 8. AppendMessage fails, leaving dst's length unchanged, if the table is not
// square, a site index is out of range, the base's presence or length does not match Full and
// n, a limit is exceeded or appendPayload fails.
func AppendMessage[P any](dst []byte, m *Message[P], appendPayload func([]byte, P) ([]byte, error)) ([]byte, error) {
	n := 0
	if len(m.Table) <= MaxSites*MaxSites {
		n = isqrt(len(m.Table))
	}
	switch {
	case n*n != len(m.Table) || n < 1:
		return dst, fmt.Errorf("rlog: cannot encode a table of %d entries (want n·n for 1 ≤ n ≤ %d)", len(m.Table), MaxSites)
	case m.From < 0 || m.From >= n:
		return dst, fmt.Errorf("rlog: cannot encode a message from site %d of %d", m.From, n)
	case m.Full != (m.Base == nil) || (m.Base != nil && len(m.Base) != n):
		return dst, fmt.Errorf("rlog: cannot encode a message (full %v) with a base of %d entries for %d sites", m.Full, len(m.Base), n)
	case len(m.Records) > MaxRecords:
		return dst, fmt.Errorf("rlog: cannot encode %d records (limit %d)", len(m.Records), MaxRecords)
	}
	start := len(dst)
	base := uint64(m.SendTS)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendUvarint(dst, uint64(m.From))
	dst = binary.AppendVarint(dst, m.SendTS)
	dst = wire.AppendBool(dst, m.Full)
	dst = wire.AppendBool(dst, m.NeedFull)
	for _, ts := range m.Base {
		dst = binary.AppendVarint(dst, int64(base-uint64(ts)))
	}
	for _, ts := range m.Table {
		dst = binary.AppendVarint(dst, int64(base-uint64(ts)))
	}
	dst = binary.AppendUvarint(dst, uint64(len(m.Records)))
	for i, r := range m.Records {
		if r.Host < 0 || r.Host >= n {
			return dst[:start], fmt.Errorf("rlog: cannot encode record %d: host %d out of range for %d sites", i, r.Host, n)
		}
		dst = binary.AppendUvarint(dst, uint64(r.Host))
		dst = binary.AppendVarint(dst, int64(base-uint64(r.TS)))
		var err error
		if dst, err = appendPayload(dst, r.Payload); err != nil {
			return dst[:start], fmt.Errorf("rlog: record %d: %w", i, err)
		}
	}
	return dst, nil
}

// DecodeMessage parses a message written by AppendMessage, decoding each payload with
// decodePayload. If n > 0 the message must be for n sites; n ≤ 0 accepts any number up to
// MaxSites (Receive checks it against the log). From and every record's Host are checked to be
// below the number of sites; timestamps and the table's contents are left to Receive.
// Trailing bytes are an error; an empty record list decodes as nil.
func DecodeMessage[P any](b []byte, n int, decodePayload func(*wire.Decoder) (P, error)) (*Message[P], error) {
	d := wire.NewDecoder(b)
	sites, err := d.Int("rlog sites", MaxSites)
	switch {
	case err != nil:
		return nil, err
	case sites == 0:
		return nil, d.Errorf("rlog sites", "0 sites")
	case n > 0 && sites != n:
		return nil, d.Errorf("rlog sites", "message for %d sites, want %d", sites, n)
	}
	m := &Message[P]{}
	if m.From, err = d.Int("rlog from", sites-1); err != nil {
		return nil, err
	}
	if m.SendTS, err = d.Varint("rlog send timestamp"); err != nil {
		return nil, err
	}
	if m.Full, err = d.Bool("rlog full flag"); err != nil {
		return nil, err
	}
	if m.NeedFull, err = d.Bool("rlog need-full flag"); err != nil {
		return nil, err
	}
	if !m.Full {
		if m.Base, err = decodeTimestamps(d, "rlog base", sites, m.SendTS); err != nil {
			return nil, err
		}
	}
	if m.Table, err = decodeTimestamps(d, "rlog table", sites*sites, m.SendTS); err != nil {
		return nil, err
	}
	base := uint64(m.SendTS)
	// A record takes at least 2 bytes (host, timestamp) before its payload.
	count, err := d.Count("rlog record count", MaxRecords, 2)
	if err != nil {
		return nil, err
	}
	if count > 0 {
		m.Records = make([]Record[P], count)
	}
	for i := range m.Records {
		r := &m.Records[i]
		if r.Host, err = d.Int("rlog record host", sites-1); err != nil {
			return nil, fmt.Errorf("rlog: record %d: %w", i, err)
		}
		delta, err := d.Varint("rlog record timestamp")
		if err != nil {
			return nil, fmt.Errorf("rlog: record %d: %w", i, err)
		}
		r.TS = int64(base - uint64(delta))
		if r.Payload, err = decodePayload(d); err != nil {
			return nil, fmt.Errorf("rlog: record %d: %w", i, err)
		}
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeTimestamps decodes count timestamps written as differences from sendTS.
func decodeTimestamps(d *wire.Decoder, what string, count int, sendTS int64) ([]int64, error) {
	// Each entry takes at least one byte: check before allocating.
	if d.Remaining() < count {
		return nil, d.Errorf(what, "%d entries cannot fit in the %d bytes left", count, d.Remaining())
	}
	out := make([]int64, count)
	for i := range out {
		delta, err := d.Varint(what + " entry")
		if err != nil {
			return nil, err
		}
		out[i] = int64(uint64(sendTS) - uint64(delta))
	}
	return out, nil
}

// isqrt returns ⌊√x⌋ for x ≤ MaxSites².
func isqrt(x int) int {
	r := 0
	for (r+1)*(r+1) <= x {
		r++
	}
	return r
}
