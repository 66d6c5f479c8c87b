package rc

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes Replicated Commit peer messages for the network runtime: one tag byte, then
//
//	ReadLock     txn id, read id, key
//	ReadReply    txn id, read id, granted; if granted: value, version, count
//	Accept       the transaction (wire.AppendTxn)
//	Vote         txn id, accepted; if accepted: counts
//	Decision     committed; if committed: the transaction with its writes only, then positions
//	             (one per write); if aborted: the txn id
//	DecisionAck  txn id
//
// Decode checks every count against the wire limits and a committed Decision's positions
// against its writes, so a decoded message is always one Replicated Commit could have sent.
var Codec protocol.Codec = codec{}

const (
	tagReadLock byte = iota + 1
	tagReadReply
	tagAccept
	tagVote
	tagDecision
	tagDecisionAck
)

type codec struct{}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	id := func(tag byte, t txn.ID) []byte { return binary.AppendUvarint(append(dst, tag), uint64(t)) }
	switch m := m.(type) {
	case *ReadLock:
		if m != nil && len(m.Key) <= wire.MaxKeyLen {
			return wire.AppendString(binary.AppendUvarint(id(tagReadLock, m.Txn), m.Read), m.Key), nil
		}
	case *ReadReply:
		if m != nil && len(m.Value) <= wire.MaxValueLen {
			b := wire.AppendBool(binary.AppendUvarint(id(tagReadReply, m.Txn), m.Read), m.Granted)
			if m.Granted {
				b = binary.AppendUvarint(binary.AppendUvarint(wire.AppendBytes(b, m.Value), uint64(m.Version)), m.Count)
			}
			return b, nil
		}
	case *Accept:
		if m != nil && m.Txn != nil {
			return wire.AppendTxn(append(dst, tagAccept), m.Txn)
		}
	case *Vote:
		if m != nil && len(m.Counts) <= wire.MaxTxnOps && (m.Accepted || len(m.Counts) == 0) {
			b := wire.AppendBool(id(tagVote, m.Txn), m.Accepted)
			if m.Accepted {
				b = appendUints(b, m.Counts)
			}
			return b, nil
		}
	case *Decision:
		switch {
		case m == nil:
		case !m.Committed && len(m.Writes) == 0 && len(m.Positions) == 0:
			return binary.AppendUvarint(wire.AppendBool(append(dst, tagDecision), false), uint64(m.Txn)), nil
		case m.Committed && len(m.Positions) == len(m.Writes):
			b, err := wire.AppendTxn(wire.AppendBool(append(dst, tagDecision), true), &txn.Txn{ID: m.Txn, Writes: m.Writes})
			if err != nil {
				return dst, err
			}
			return appendUints(b, m.Positions), nil
		}
	case *DecisionAck:
		if m != nil {
			return id(tagDecisionAck, m.Txn), nil
		}
	}
	return dst, fmt.Errorf("rc: cannot encode %T (nil or malformed)", m)
}

func appendUints(dst []byte, v []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	for _, x := range v {
		dst = binary.AppendUvarint(dst, x)
	}
	return dst
}

func decodeUints(d *wire.Decoder, what string) ([]uint64, error) {
	n, err := d.Count(what, wire.MaxTxnOps, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]uint64, n)
	for i := range out {
		if out[i], err = d.Uvarint(what); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	m, err := decode(wire.NewDecoder(b))
	if err != nil {
		return nil, fmt.Errorf("rc: %w", err)
	}
	return m, nil
}

func decode(d *wire.Decoder) (protocol.Message, error) {
	tag, err := d.Byte("rc message tag")
	if err != nil {
		return nil, err
	}
	var m protocol.Message
	switch tag {
	case tagReadLock:
		x := &ReadLock{}
		var id uint64
		if id, err = d.Uvarint("txn id"); err == nil {
			if x.Read, err = d.Uvarint("read id"); err == nil {
				x.Key, err = d.String("key", wire.MaxKeyLen)
			}
		}
		x.Txn, m = txn.ID(id), x
	case tagReadReply:
		x := &ReadReply{}
		var id, ver uint64
		if id, err = d.Uvarint("txn id"); err == nil {
			if x.Read, err = d.Uvarint("read id"); err == nil {
				if x.Granted, err = d.Bool("granted"); err == nil && x.Granted {
					if x.Value, err = d.Bytes("value", wire.MaxValueLen); err == nil {
						if ver, err = d.Uvarint("version"); err == nil {
							x.Count, err = d.Uvarint("count")
						}
					}
				}
			}
		}
		x.Txn, x.Version, m = txn.ID(id), txn.ID(ver), x
	case tagAccept:
		var t *txn.Txn
		t, err = wire.DecodeTxn(d)
		m = &Accept{Txn: t}
	case tagVote:
		x := &Vote{}
		var id uint64
		if id, err = d.Uvarint("txn id"); err == nil {
			if x.Accepted, err = d.Bool("accepted"); err == nil && x.Accepted {
				x.Counts, err = decodeUints(d, "counts")
			}
		}
		x.Txn, m = txn.ID(id), x
	case tagDecision:
		x := &Decision{}
		if x.Committed, err = d.Bool("committed"); err == nil {
			if x.Committed {
				var t *txn.Txn
				if t, err = wire.DecodeTxn(d); err == nil {
					if len(t.Reads) > 0 {
						return nil, d.Errorf("decision", "committed decision carries reads")
					}
					x.Txn, x.Writes = t.ID, t.Writes
					if x.Positions, err = decodeUints(d, "positions"); err == nil && len(x.Positions) != len(x.Writes) {
						return nil, d.Errorf("positions", "%d positions for %d writes", len(x.Positions), len(x.Writes))
					}
				}
			} else {
				var id uint64
				id, err = d.Uvarint("txn id")
				x.Txn = txn.ID(id)
			}
		}
		m = x
	case tagDecisionAck:
		var id uint64
		id, err = d.Uvarint("txn id")
		m = &DecisionAck{Txn: txn.ID(id)}
	default:
		return nil, d.Errorf("rc message tag", "unknown tag %d", tag)
	}
	if err != nil {
		return nil, err
	}
	return m, d.Done()
}
