package twopc

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes 2pc-paxos peer messages for the network runtime: one tag byte, then the fields
// in declaration order (integers as uvarints, keys and values length-prefixed, transactions with
// wire.AppendTxn). Decode rejects unknown tags, oversized fields and trailing bytes.
var Codec protocol.Codec = codec{}

// Message tags on the wire.
const (
	tagReadReq byte = iota + 1
	tagReadResp
	tagCommitReq
	tagAbortReq
	tagOutcome
	tagAccept
	tagAck
	tagPrepare
	tagPromise
)

// maxPromiseEntries bounds the entries one Promise reports; a candidate asks for the rest with
// further Prepares.
const maxPromiseEntries = 1024

// maxDCs bounds datacenter indices on the wire.
const maxDCs = 1 << ballotBits

type codec struct{}

func uv(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

func sv(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

func (codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	switch m := m.(type) {
	case *ReadReq:
		dst = uv(uv(uv(append(dst, tagReadReq), uint64(m.From)), m.Ballot), uint64(m.Txn))
		return uv(wire.AppendString(dst, m.Key), m.Rid), nil
	case *ReadResp:
		dst = uv(uv(append(dst, tagReadResp), m.Rid), uint64(m.Txn))
		dst = uv(wire.AppendBytes(dst, m.Value), uint64(m.Version))
		return wire.AppendString(wire.AppendBool(dst, m.Aborted), string(m.Reason)), nil
	case *CommitReq:
		if m.Txn == nil {
			break
		}
		return wire.AppendTxn(uv(uv(append(dst, tagCommitReq), uint64(m.From)), m.Ballot), m.Txn)
	case *AbortReq:
		return uv(uv(append(dst, tagAbortReq), uint64(m.From)), uint64(m.Txn)), nil
	case *Outcome:
		dst = append(uv(append(dst, tagOutcome), uint64(m.Txn)), byte(m.Status))
		return wire.AppendString(dst, string(m.Reason)), nil
	case *Accept:
		dst = uv(uv(uv(uv(append(dst, tagAccept), m.Ballot), m.Fence), m.Base), m.Commit)
		dst = uv(sv(dst, m.SentUs), uint64(len(m.Entries)))
		for _, e := range m.Entries {
			if e.Txn == nil {
				return dst, fmt.Errorf("2pc-paxos: cannot encode log entry %d without a transaction", e.Index)
			}
			var err error
			if dst, err = wire.AppendTxn(uv(dst, e.Index), e.Txn); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case *Ack:
		dst = uv(uv(uv(append(dst, tagAck), uint64(m.From)), m.Ballot), m.Match)
		return sv(uv(dst, m.Commit), m.EchoUs), nil
	case *Prepare:
		return sv(uv(uv(append(dst, tagPrepare), m.Ballot), m.After), m.SentUs), nil
	case *Promise:
		dst = uv(uv(uv(append(dst, tagPromise), uint64(m.From)), m.Ballot), m.Promised)
		dst = uv(uv(uv(dst, m.Applied), m.FenceBallot), m.FenceEnd)
		dst = uv(sv(wire.AppendBool(dst, m.More), m.EchoUs), uint64(len(m.Entries)))
		for _, e := range m.Entries {
			if e.Txn == nil {
				return dst, fmt.Errorf("2pc-paxos: cannot encode reported entry %d without a transaction", e.Index)
			}
			var err error
			if dst, err = wire.AppendTxn(uv(uv(dst, e.Index), e.Ballot), e.Txn); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return dst, fmt.Errorf("2pc-paxos: cannot encode %T", m)
}

func (codec) Decode(b []byte) (protocol.Message, error) {
	d := wire.NewDecoder(b)
	m, err := decode(d)
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return nil, fmt.Errorf("2pc-paxos: %w", err)
	}
	return m, nil
}

func decode(d *wire.Decoder) (protocol.Message, error) {
	tag, err := d.Byte("2pc-paxos message tag")
	if err != nil {
		return nil, err
	}
	var errs []error
	u := func(what string) uint64 {
		v, err := d.Uvarint(what)
		errs = append(errs, err)
		return v
	}
	dc := func() int {
		v, err := d.Int("datacenter", maxDCs)
		errs = append(errs, err)
		return v
	}
	sint := func(what string) int64 {
		v, err := d.Varint(what)
		errs = append(errs, err)
		return v
	}
	str := func(what string, limit int) string {
		s, err := d.String(what, limit)
		errs = append(errs, err)
		return s
	}
	check := func(m protocol.Message) (protocol.Message, error) {
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	switch tag {
	case tagReadReq:
		m := &ReadReq{From: dc()}
		if errs[0] == nil {
			m.Ballot = u("ballot")
		}
		if errs[len(errs)-1] == nil {
			m.Txn = txn.ID(u("txn"))
		}
		if errs[len(errs)-1] == nil {
			m.Key = str("key", wire.MaxKeyLen)
		}
		if errs[len(errs)-1] == nil {
			m.Rid = u("rid")
		}
		return check(m)
	case tagReadResp:
		m := &ReadResp{Rid: u("rid")}
		if errs[0] == nil {
			m.Txn = txn.ID(u("txn"))
		}
		if errs[len(errs)-1] == nil {
			v, err := d.Bytes("value", wire.MaxValueLen)
			errs = append(errs, err)
			m.Value = v
		}
		if errs[len(errs)-1] == nil {
			m.Version = txn.ID(u("version"))
		}
		if errs[len(errs)-1] == nil {
			a, err := d.Bool("aborted")
			errs = append(errs, err)
			m.Aborted = a
		}
		if errs[len(errs)-1] == nil {
			m.Reason = txn.AbortReason(str("reason", wire.MaxTextLen))
		}
		return check(m)
	case tagCommitReq:
		m := &CommitReq{From: dc()}
		if errs[0] == nil {
			m.Ballot = u("ballot")
		}
		if errs[len(errs)-1] == nil {
			t, err := wire.DecodeTxn(d)
			errs = append(errs, err)
			m.Txn = t
		}
		return check(m)
	case tagAbortReq:
		m := &AbortReq{From: dc()}
		if errs[0] == nil {
			m.Txn = txn.ID(u("txn"))
		}
		return check(m)
	case tagOutcome:
		m := &Outcome{Txn: txn.ID(u("txn"))}
		if errs[0] == nil {
			s, err := d.Byte("status")
			errs = append(errs, err)
			if err == nil && s != byte(txn.Committed) && s != byte(txn.Aborted) {
				errs = append(errs, d.Errorf("status", "unknown status %d", s))
			}
			m.Status = txn.Status(s)
		}
		if errs[len(errs)-1] == nil {
			m.Reason = txn.AbortReason(str("reason", wire.MaxTextLen))
		}
		return check(m)
	case tagAccept:
		m := &Accept{Ballot: u("ballot")}
		for _, f := range []*uint64{&m.Fence, &m.Base, &m.Commit} {
			if errs[len(errs)-1] == nil {
				*f = u("accept field")
			}
		}
		if errs[len(errs)-1] == nil {
			m.SentUs = sint("sent time")
		}
		if errs[len(errs)-1] != nil {
			return check(m)
		}
		n, err := d.Count("entries", batchEntries, 2)
		if err != nil {
			return nil, err
		}
		for range n {
			idx, err := d.Uvarint("entry index")
			if err != nil {
				return nil, err
			}
			t, err := wire.DecodeTxn(d)
			if err != nil {
				return nil, err
			}
			m.Entries = append(m.Entries, Entry{Index: idx, Txn: t})
		}
		return m, nil
	case tagAck:
		m := &Ack{From: dc()}
		for _, f := range []*uint64{&m.Ballot, &m.Match, &m.Commit} {
			if errs[len(errs)-1] == nil {
				*f = u("ack field")
			}
		}
		if errs[len(errs)-1] == nil {
			m.EchoUs = sint("echoed time")
		}
		return check(m)
	case tagPrepare:
		m := &Prepare{Ballot: u("ballot")}
		if errs[0] == nil {
			m.After = u("after")
		}
		if errs[len(errs)-1] == nil {
			m.SentUs = sint("sent time")
		}
		return check(m)
	case tagPromise:
		m := &Promise{From: dc()}
		for _, f := range []*uint64{&m.Ballot, &m.Promised, &m.Applied, &m.FenceBallot, &m.FenceEnd} {
			if errs[len(errs)-1] == nil {
				*f = u("promise field")
			}
		}
		if errs[len(errs)-1] == nil {
			more, err := d.Bool("more")
			errs = append(errs, err)
			m.More = more
		}
		if errs[len(errs)-1] == nil {
			m.EchoUs = sint("echoed time")
		}
		if errs[len(errs)-1] != nil {
			return check(m)
		}
		n, err := d.Count("entries", maxPromiseEntries, 3)
		if err != nil {
			return nil, err
		}
		for range n {
			idx, err := d.Uvarint("entry index")
			if err != nil {
				return nil, err
			}
			b, err := d.Uvarint("entry ballot")
			if err != nil {
				return nil, err
			}
			t, err := wire.DecodeTxn(d)
			if err != nil {
				return nil, err
			}
			m.Entries = append(m.Entries, Accepted{Index: idx, Ballot: b, Txn: t})
		}
		return m, nil
	}
	return nil, d.Errorf("2pc-paxos message tag", "unknown tag %d", tag)
}
