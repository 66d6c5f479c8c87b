package flstore

import (
	"encoding/binary"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// diskRecords lays a maintainer's records out on its Disk:
//
//	'r' position (8 bytes, big-endian)            → the record (WriteRecord)
//	'h' host (4 bytes) TOId (8 bytes, big-endian)  → its position (Chariots: senders' fetches of
//	                                                  this datacenter's records in TOId order, and
//	                                                  garbage collection per host)
//
// A record that does not decode (a damaged disk) reads as missing.
type diskRecords struct{ d protocol.Disk }

const (
	recordPrefix = 'r'
	hostPrefix   = 'h'
)

func recordKey(l uint64) []byte { return binary.BigEndian.AppendUint64([]byte{recordPrefix}, l) }

func hostKey(h int, t uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32([]byte{hostPrefix}, uint32(h)), t)
}

// put writes r at its position.
func (s diskRecords) put(r *Record) {
	w := wire.NewWriter(nil)
	WriteRecord(w, r)
	b, err := w.Finish()
	if err != nil {
		return // a record that does not encode came from a peer: never the case after the checks
	}
	s.d.Set(recordKey(r.LId), b)
}

// index records r's position under its host and TOId.
func (s diskRecords) index(r *Record) {
	s.d.Set(hostKey(r.Host, r.TOId), binary.BigEndian.AppendUint64(nil, r.LId))
}

// get reads the record at position l.
func (s diskRecords) get(l uint64) *Record {
	b, ok := s.d.Get(recordKey(l))
	if !ok {
		return nil
	}
	return decodeRecord(b)
}

func decodeRecord(b []byte) *Record {
	r := wire.NewReader(b)
	rec := ReadRecord(r)
	if r.Done() != nil {
		return nil
	}
	return rec
}

// records calls fn with the records at positions from..to (inclusive) in order, until it
// returns false.
func (s diskRecords) records(from, to uint64, fn func(*Record) bool) {
	if from > to {
		return
	}
	end := []byte{recordPrefix + 1}
	if to < None {
		end = recordKey(to + 1)
	}
	s.d.Scan(recordKey(from), end, func(_, v []byte) bool {
		rec := decodeRecord(v)
		return rec == nil || fn(rec)
	})
}

// hosted calls fn with host h's records from TOId from on, in TOId order, until it returns
// false.
func (s diskRecords) hosted(h int, from uint64, fn func(*Record) bool) {
	s.d.Scan(hostKey(h, from), hostKey(h+1, 0), func(_, v []byte) bool {
		if len(v) != 8 {
			return true
		}
		rec := s.get(binary.BigEndian.Uint64(v))
		return rec == nil || fn(rec)
	})
}

// remove deletes r (its position and, in Chariots, its host index entry): an empty value reads
// as missing.
func (s diskRecords) remove(r *Record) {
	s.d.Set(recordKey(r.LId), nil)
	s.d.Set(hostKey(r.Host, r.TOId), nil)
}

// diskPostings lays an indexer's posting lists out on its Disk, one key per entry:
//
//	'p' tag length (uvarint) tag position (8 bytes, big-endian) → the tag's value
//
// so that a tag's entries are one range of keys in position order (the length keeps a tag
// that is a prefix of another out of its range). Writing an entry again is harmless.
type diskPostings struct{ d protocol.Disk }

const postingPrefix = 'p'

// postingTag is the prefix of every key of tag's entries.
func postingTag(tag string) []byte {
	return append(binary.AppendUvarint([]byte{postingPrefix}, uint64(len(tag))), tag...)
}

// put writes entry e.
func (p diskPostings) put(e IndexEntry) {
	p.d.Set(binary.BigEndian.AppendUint64(postingTag(e.Tag), e.LId), e.Value)
}

// scan calls fn with tag's entries at positions up to maxLId, in position order (the highest
// first if reverse), until it returns false.
func (p diskPostings) scan(tag string, maxLId uint64, reverse bool, fn func(lid uint64, value []byte) bool) {
	prefix := slices.Clip(postingTag(tag)) // each append below copies it
	from := binary.BigEndian.AppendUint64(prefix, 0)
	to := append(binary.BigEndian.AppendUint64(prefix, None), 0) // just past the last position
	if maxLId < None {
		to = binary.BigEndian.AppendUint64(prefix, maxLId+1)
	}
	scan := p.d.Scan
	if reverse {
		scan = p.d.ScanReverse
	}
	scan(from, to, func(k, v []byte) bool {
		return fn(binary.BigEndian.Uint64(k[len(prefix):]), v)
	})
}
