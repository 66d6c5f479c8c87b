package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// AppendRequest is AppendRequestWith without a codec, for requests that carry no Op (every
// kind but protocol.Operation).
func AppendRequest(dst []byte, r *protocol.Request) ([]byte, error) {
	return AppendRequestWith(dst, r, nil)
}

// AppendRequestWith appends every field of r: Client, Seq, Kind, Key, TxnID, Keys, Txn (preceded
// by a presence flag) and Op (preceded by a presence flag, then encoded by opCodec, the
// protocol's codec, as a length-prefixed byte string of at most MaxOpLen bytes). Kind is carried
// as is, even if unknown, so that the replica, not the wire, answers a bad request. It fails,
// leaving dst's length unchanged, if r exceeds a wire limit (MaxKeyLen, MaxSnapshotKeys, the
// transaction limits, MaxOpLen), or carries an Op that opCodec is nil for or cannot encode.
func AppendRequestWith(dst []byte, r *protocol.Request, opCodec protocol.Codec) ([]byte, error) {
	if err := checkLen("request key length", len(r.Key), MaxKeyLen); err != nil {
		return dst, err
	}
	if err := checkLen("request key count", len(r.Keys), MaxSnapshotKeys); err != nil {
		return dst, err
	}
	for _, k := range r.Keys {
		if err := checkLen("request key length", len(k), MaxKeyLen); err != nil {
			return dst, err
		}
	}
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(r.Client))
	dst = binary.AppendUvarint(dst, r.Seq)
	dst = append(dst, byte(r.Kind))
	dst = AppendString(dst, r.Key)
	dst = binary.AppendUvarint(dst, uint64(r.TxnID))
	dst = binary.AppendUvarint(dst, uint64(len(r.Keys)))
	for _, k := range r.Keys {
		dst = AppendString(dst, k)
	}
	dst = AppendBool(dst, r.Txn != nil)
	if r.Txn != nil {
		var err error
		if dst, err = AppendTxn(dst, r.Txn); err != nil {
			return dst[:start], err
		}
	}
	dst = AppendBool(dst, r.Op != nil)
	if r.Op != nil {
		if opCodec == nil {
			return dst[:start], fmt.Errorf("wire: cannot encode the operation %T of a request without the protocol's codec", r.Op)
		}
		op, err := opCodec.Append(nil, r.Op)
		if err != nil {
			return dst[:start], fmt.Errorf("wire: encoding the request's operation: %w", err)
		}
		if err := checkLen("request operation length", len(op), MaxOpLen); err != nil {
			return dst[:start], err
		}
		dst = AppendBytes(dst, op)
	}
	return dst, nil
}

// DecodeRequest is DecodeRequestWith without a codec: a request carrying an Op is an error.
func DecodeRequest(b []byte) (protocol.Request, error) {
	return DecodeRequestWith(b, nil)
}

// DecodeRequestWith parses a whole buffer written by AppendRequestWith, decoding an Op with
// opCodec; trailing bytes are an error, and so is an Op that opCodec is nil for or rejects.
func DecodeRequestWith(b []byte, opCodec protocol.Codec) (protocol.Request, error) {
	d := Decoder{b: b}
	r, err := decodeRequest(&d, opCodec)
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return protocol.Request{}, err
	}
	return r, nil
}

func decodeRequest(d *Decoder, opCodec protocol.Codec) (r protocol.Request, err error) {
	client, err := d.Uint32("request client")
	if err != nil {
		return r, err
	}
	r.Client = txn.ClientID(client)
	if r.Seq, err = d.Uvarint("request seq"); err != nil {
		return r, err
	}
	kind, err := d.Byte("request kind")
	if err != nil {
		return r, err
	}
	r.Kind = protocol.RequestKind(kind)
	if r.Key, err = d.String("request key", MaxKeyLen); err != nil {
		return r, err
	}
	txnID, err := d.Uvarint("request transaction id")
	if err != nil {
		return r, err
	}
	r.TxnID = txn.ID(txnID)
	n, err := d.Count("request key count", MaxSnapshotKeys, 1)
	if err != nil {
		return r, err
	}
	if n > 0 {
		r.Keys = make([]string, n)
		for i := range r.Keys {
			if r.Keys[i], err = d.String("request keys", MaxKeyLen); err != nil {
				return r, err
			}
		}
	}
	hasTxn, err := d.Bool("request txn flag")
	if err != nil {
		return r, err
	}
	if hasTxn {
		if r.Txn, err = DecodeTxn(d); err != nil {
			return r, err
		}
	}
	hasOp, err := d.Bool("request op flag")
	if err != nil || !hasOp {
		return r, err
	}
	op, err := d.raw("request operation", MaxOpLen)
	if err != nil {
		return r, err
	}
	if opCodec == nil {
		return r, d.Errorf("request operation", "no codec to decode it with")
	}
	if r.Op, err = opCodec.Decode(op); err != nil {
		return r, d.Errorf("request operation", "%v", err)
	}
	return r, nil
}

// AppendReply appends every field of r but Op: Client, Seq, Value, Version, Snapshot (key,
// value, version each), Status, Reason and Err. It fails, leaving dst's length unchanged, if r
// exceeds a wire limit (MaxValueLen, MaxSnapshotKeys, MaxKeyLen, MaxTextLen) or carries an Op
// (the network runtime carries an Operation's reply as the protocol codec's bytes, see package
// rpc, and never writes replies to the input log).
func AppendReply(dst []byte, r *protocol.Reply) ([]byte, error) {
	if r.Op != nil {
		return dst, fmt.Errorf("wire: cannot encode the operation %T of a reply", r.Op)
	}
	if err := checkLen("reply value length", len(r.Value), MaxValueLen); err != nil {
		return dst, err
	}
	if err := checkLen("reply snapshot size", len(r.Snapshot), MaxSnapshotKeys); err != nil {
		return dst, err
	}
	for _, s := range r.Snapshot {
		if err := checkLen("snapshot key length", len(s.Key), MaxKeyLen); err != nil {
			return dst, err
		}
		if err := checkLen("snapshot value length", len(s.Value), MaxValueLen); err != nil {
			return dst, err
		}
	}
	if err := checkLen("reply reason length", len(r.Reason), MaxTextLen); err != nil {
		return dst, err
	}
	if err := checkLen("reply error length", len(r.Err), MaxTextLen); err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(r.Client))
	dst = binary.AppendUvarint(dst, r.Seq)
	dst = AppendBytes(dst, r.Value)
	dst = binary.AppendUvarint(dst, uint64(r.Version))
	dst = binary.AppendUvarint(dst, uint64(len(r.Snapshot)))
	for _, s := range r.Snapshot {
		dst = AppendString(dst, s.Key)
		dst = AppendBytes(dst, s.Value)
		dst = binary.AppendUvarint(dst, uint64(s.Version))
	}
	dst = append(dst, byte(r.Status))
	dst = AppendString(dst, string(r.Reason))
	dst = AppendString(dst, r.Err)
	return dst, nil
}

// DecodeReply parses a whole buffer written by AppendReply; trailing bytes are an error.
func DecodeReply(b []byte) (protocol.Reply, error) {
	d := Decoder{b: b}
	r, err := decodeReply(&d)
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return protocol.Reply{}, err
	}
	return r, nil
}

func decodeReply(d *Decoder) (r protocol.Reply, err error) {
	client, err := d.Uint32("reply client")
	if err != nil {
		return r, err
	}
	r.Client = txn.ClientID(client)
	if r.Seq, err = d.Uvarint("reply seq"); err != nil {
		return r, err
	}
	if r.Value, err = d.Bytes("reply value", MaxValueLen); err != nil {
		return r, err
	}
	v, err := d.Uvarint("reply version")
	if err != nil {
		return r, err
	}
	r.Version = txn.ID(v)
	// A snapshot read takes at least 3 bytes: empty key, empty value, version.
	n, err := d.Count("reply snapshot size", MaxSnapshotKeys, 3)
	if err != nil {
		return r, err
	}
	if n > 0 {
		r.Snapshot = make([]protocol.SnapshotRead, n)
		for i := range r.Snapshot {
			s := &r.Snapshot[i]
			if s.Key, err = d.String("snapshot key", MaxKeyLen); err != nil {
				return r, err
			}
			if s.Value, err = d.Bytes("snapshot value", MaxValueLen); err != nil {
				return r, err
			}
			v, err := d.Uvarint("snapshot version")
			if err != nil {
				return r, err
			}
			s.Version = txn.ID(v)
		}
	}
	status, err := d.Byte("reply status")
	if err != nil {
		return r, err
	}
	r.Status = txn.Status(status)
	reason, err := d.String("reply reason", MaxTextLen)
	if err != nil {
		return r, err
	}
	r.Reason = txn.AbortReason(reason)
	if r.Err, err = d.String("reply error", MaxTextLen); err != nil {
		return r, err
	}
	return r, nil
}
