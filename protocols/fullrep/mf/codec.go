package mf

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
)

// Codec encodes Message Futures peer messages (*Message) for the network runtime. The rlog
// envelope comes from rlog.AppendMessage; each record's Entry is one tag byte (Ep, committed
// Ec, aborted Ec) followed by its transaction (wire.AppendTxn) with an empty read set: only
// write sets travel (spec §2.3), so Codec refuses to encode an entry carrying reads and rejects
// one on decoding. A decoded entry always has its Txn.
var Codec protocol.Codec = codec{}

// Entry tags on the wire.
const (
	tagPending   byte = 1 // Ep(t)
	tagCommitted byte = 2 // Ec(t), committed
	tagAborted   byte = 3 // Ec(t), aborted
)

type codec struct{}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	msg, ok := m.(*Message)
	if !ok || msg == nil {
		return dst, fmt.Errorf("mf: cannot encode %T", m)
	}
	return rlog.AppendMessage(dst, (*rlog.Message[Entry])(msg), appendEntry)
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	m, err := rlog.DecodeMessage(b, 0, decodeEntry)
	if err != nil {
		return nil, fmt.Errorf("mf: %w", err)
	}
	return (*Message)(m), nil
}

func appendEntry(dst []byte, e Entry) ([]byte, error) {
	var tag byte
	switch {
	case e.Txn == nil:
		return dst, fmt.Errorf("mf: cannot encode an entry without its transaction")
	case len(e.Txn.Reads) > 0:
		return dst, fmt.Errorf("mf: cannot encode an entry carrying a read set (transaction %v)", e.Txn.ID)
	case !e.Finished && e.Committed:
		return dst, fmt.Errorf("mf: cannot encode a pending entry marked committed (transaction %v)", e.Txn.ID)
	case !e.Finished:
		tag = tagPending
	case e.Committed:
		tag = tagCommitted
	default:
		tag = tagAborted
	}
	return wire.AppendTxn(append(dst, tag), e.Txn)
}

func decodeEntry(d *wire.Decoder) (Entry, error) {
	tag, err := d.Byte("mf entry tag")
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	switch tag {
	case tagPending:
	case tagCommitted:
		e.Finished, e.Committed = true, true
	case tagAborted:
		e.Finished = true
	default:
		return Entry{}, d.Errorf("mf entry tag", "unknown tag %d", tag)
	}
	if e.Txn, err = wire.DecodeTxn(d); err != nil {
		return Entry{}, err
	}
	if len(e.Txn.Reads) > 0 {
		return Entry{}, d.Errorf("mf entry", "transaction %v carries a read set", e.Txn.ID)
	}
	return e, nil
}
