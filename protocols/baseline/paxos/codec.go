package paxos

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes Paxos peer messages (*Message) for the network runtime: the kind byte, then
// From, Pos, Ballot, AccBallot and Applied as unsigned varints, then the value's transaction
// count and each transaction (wire.AppendTxn). Decode checks the result with the same
// well-formedness test the replica applies, so it never returns a message the replica would
// have to distrust structurally.
var Codec protocol.Codec = codec{}

// maxValueTxns bounds a decoded value's length (a combined list holds one datacenter's queue).
const maxValueTxns = 1 << 16

type codec struct{}

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	msg, ok := m.(*Message)
	if !ok || msg == nil || !msg.wellFormed(64) {
		return dst, fmt.Errorf("paxos: cannot encode %T", m)
	}
	dst = append(dst, byte(msg.Kind))
	for _, v := range []uint64{uint64(msg.From), msg.Pos, msg.Ballot, msg.AccBallot, msg.Applied} {
		dst = binary.AppendUvarint(dst, v)
	}
	dst = binary.AppendUvarint(dst, uint64(len(msg.Value)))
	var err error
	for _, t := range msg.Value {
		if dst, err = wire.AppendTxn(dst, t); err != nil {
			return dst, fmt.Errorf("paxos: %w", err)
		}
	}
	return dst, nil
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	d := wire.NewDecoder(b)
	kind, err := d.Byte("paxos kind")
	if err != nil {
		return nil, fmt.Errorf("paxos: %w", err)
	}
	m := &Message{Kind: Kind(kind)}
	if m.From, err = d.Int("paxos from", 63); err != nil {
		return nil, fmt.Errorf("paxos: %w", err)
	}
	for _, f := range []*uint64{&m.Pos, &m.Ballot, &m.AccBallot, &m.Applied} {
		if *f, err = d.Uvarint("paxos field"); err != nil {
			return nil, fmt.Errorf("paxos: %w", err)
		}
	}
	n, err := d.Count("paxos value", maxValueTxns, 1)
	if err != nil {
		return nil, fmt.Errorf("paxos: %w", err)
	}
	if n > 0 {
		m.Value = make([]*txn.Txn, n)
	}
	for i := range n {
		if m.Value[i], err = wire.DecodeTxn(d); err != nil {
			return nil, fmt.Errorf("paxos: %w", err)
		}
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("paxos: %w", err)
	}
	if !m.wellFormed(64) {
		return nil, fmt.Errorf("paxos: malformed %d message", kind)
	}
	return m, nil
}
