package helios

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
)

// Codec encodes Helios peer messages (*Message) for the network runtime. The rlog envelope
// comes from rlog.AppendMessage; each record's Entry is one tag byte followed by:
//
//	Preparing            the transaction (wire.AppendTxn)
//	Finished, committed  the transaction; Of is its ID
//	Finished, aborted    Of
//	Nack                 Of
//
// These are exactly the shapes Helios creates, and the only ones Codec encodes or decodes: a
// decoded Preparing or committed Finished entry always has its Txn, and aborted Finished and
// Nack entries never do.
var Codec protocol.Codec = codec{}

// Entry tags on the wire.
const (
	tagPreparing byte = 1
	tagCommitted byte = 2
	tagAborted   byte = 3
	tagNack      byte = 4
)

type codec struct{}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	msg, ok := m.(*Message)
	if !ok || msg == nil {
		return dst, fmt.Errorf("helios: cannot encode %T", m)
	}
	return rlog.AppendMessage(dst, (*rlog.Message[Entry])(msg), appendEntry)
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	m, err := rlog.DecodeMessage(b, 0, decodeEntry)
	if err != nil {
		return nil, fmt.Errorf("helios: %w", err)
	}
	return (*Message)(m), nil
}

func appendEntry(dst []byte, e Entry) ([]byte, error) {
	switch {
	case e.Kind == Preparing && e.Txn != nil && e.Of == 0 && !e.Committed:
		return wire.AppendTxn(append(dst, tagPreparing), e.Txn)
	case e.Kind == Finished && e.Committed && e.Txn != nil && e.Of == e.Txn.ID:
		return wire.AppendTxn(append(dst, tagCommitted), e.Txn)
	case e.Kind == Finished && !e.Committed && e.Txn == nil:
		return binary.AppendUvarint(append(dst, tagAborted), uint64(e.Of)), nil
	case e.Kind == Nack && e.Txn == nil && !e.Committed:
		return binary.AppendUvarint(append(dst, tagNack), uint64(e.Of)), nil
	}
	return dst, fmt.Errorf("helios: cannot encode malformed entry (kind %d, txn present %t, of %v, committed %t)",
		e.Kind, e.Txn != nil, e.Of, e.Committed)
}

func decodeEntry(d *wire.Decoder) (Entry, error) {
	tag, err := d.Byte("helios entry tag")
	if err != nil {
		return Entry{}, err
	}
	switch tag {
	case tagPreparing, tagCommitted:
		t, err := wire.DecodeTxn(d)
		if err != nil {
			return Entry{}, err
		}
		if tag == tagPreparing {
			return Entry{Kind: Preparing, Txn: t}, nil
		}
		return Entry{Kind: Finished, Txn: t, Of: t.ID, Committed: true}, nil
	case tagAborted, tagNack:
		of, err := d.Uvarint("helios entry of")
		if err != nil {
			return Entry{}, err
		}
		if tag == tagAborted {
			return Entry{Kind: Finished, Of: txn.ID(of)}, nil
		}
		return Entry{Kind: Nack, Of: txn.ID(of)}, nil
	}
	return Entry{}, d.Errorf("helios entry tag", "unknown tag %d", tag)
}
