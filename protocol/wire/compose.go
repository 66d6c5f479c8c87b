package wire

import (
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// Append appends with f, an Append function of this or another package (a transaction, a
// protocol's log record), recording its error under what.
func (w *Writer) Append(what string, f func(dst []byte) ([]byte, error)) {
	b, err := f(w.b)
	if err != nil {
		w.Fail(what, "%v", err)
		return
	}
	w.b = b
}

// Decode reads with f, a decode function of this or another package, unless an error was
// recorded before, and records f's error.
func (r *Reader) Decode(f func(d *Decoder) error) {
	if r.err == nil {
		r.err = f(&r.d)
	}
}

// MaxCheckpointCount bounds a list in a replica's checkpoint (protocol.Checkpointer): pools,
// logs and tables that a replica holds in memory, far larger than any one message's.
const MaxCheckpointCount = 1 << 30

// TxnsByID appends a pool of transactions keyed by id (a checkpoint's in-flight transactions):
// the count, then each transaction (Txn) in id order, so that the encoding does not depend on
// the map's iteration order. Reader.TxnsByID reads it.
func (w *Writer) TxnsByID(pool map[txn.ID]*txn.Txn) {
	w.Count("transaction pool", len(pool), MaxCheckpointCount)
	for _, id := range slices.Sorted(maps.Keys(pool)) {
		w.Txn(pool[id])
	}
}

// TxnsByID reads a pool written by Writer.TxnsByID; it is never nil.
func (r *Reader) TxnsByID() map[txn.ID]*txn.Txn {
	// A transaction takes at least 3 bytes: its id and two empty sets.
	n := r.Count("transaction pool", MaxCheckpointCount, 3)
	pool := make(map[txn.ID]*txn.Txn, n)
	for range n {
		if t := r.Txn(); t != nil {
			pool[t.ID] = t
		}
	}
	return pool
}

// Message appends m encoded by the protocol's codec c, length-prefixed (a message a checkpoint
// keeps, such as a decision awaiting retransmission); Reader.Message reads it.
func (w *Writer) Message(c protocol.Codec, m protocol.Message) {
	b, err := c.Append(nil, m)
	if err != nil {
		w.Fail("message", "%v", err)
		return
	}
	w.Bytes("message", b, MaxOpLen)
}

// Message reads a message written by Writer.Message with codec c; nil after an error.
func (r *Reader) Message(c protocol.Codec) protocol.Message {
	b := r.Bytes("message", MaxOpLen)
	if r.err != nil {
		return nil
	}
	m, err := c.Decode(b)
	if err != nil {
		r.Fail("message", "%v", err)
		return nil
	}
	return m
}

// Reply appends a reply without an operation (AppendReply), length-prefixed (an outcome a
// checkpoint keeps to answer a repeated request); Reader.Reply reads it.
func (w *Writer) Reply(rep protocol.Reply) {
	w.Append("reply", func(dst []byte) ([]byte, error) {
		b, err := AppendReply(nil, &rep)
		if err != nil {
			return dst, err
		}
		return AppendBytes(dst, b), nil
	})
}

// Reply reads a reply written by Writer.Reply.
func (r *Reader) Reply() protocol.Reply {
	b := r.Bytes("reply", MaxOpLen)
	if r.err != nil {
		return protocol.Reply{}
	}
	rep, err := DecodeReply(b)
	if err != nil {
		r.Fail("reply", "%v", err)
	}
	return rep
}

// IDs appends a list of transaction ids (count, then each); Reader.IDs reads it.
func (w *Writer) IDs(ids []txn.ID) {
	w.Count("id list", len(ids), MaxCheckpointCount)
	for _, id := range ids {
		w.ID(id)
	}
}

// IDs reads a list written by Writer.IDs; an empty list is nil.
func (r *Reader) IDs() []txn.ID {
	n := r.Count("id list", MaxCheckpointCount, 1)
	if n == 0 {
		return nil
	}
	ids := make([]txn.ID, n)
	for i := range ids {
		ids[i] = r.ID("id")
	}
	return ids
}

// Uvarints appends a list of unsigned numbers, telling nil from empty; Reader.Uvarints reads it.
func (w *Writer) Uvarints(vs []uint64) {
	w.Bool(vs != nil)
	w.Count("number list", len(vs), MaxCheckpointCount)
	for _, v := range vs {
		w.Uvarint(v)
	}
}

// Uvarints reads a list written by Writer.Uvarints.
func (r *Reader) Uvarints() []uint64 {
	present := r.Bool("number list present")
	vs := make([]uint64, r.Count("number list", MaxCheckpointCount, 1))
	for i := range vs {
		vs[i] = r.Uvarint("number")
	}
	if !present {
		return nil
	}
	return vs
}

// Varints appends a list of signed numbers (times), telling nil from empty; Reader.Varints reads
// it.
func (w *Writer) Varints(vs []int64) {
	w.Bool(vs != nil)
	w.Count("number list", len(vs), MaxCheckpointCount)
	for _, v := range vs {
		w.Varint(v)
	}
}

// Varints reads a list written by Writer.Varints.
func (r *Reader) Varints() []int64 {
	present := r.Bool("number list present")
	vs := make([]int64, r.Count("number list", MaxCheckpointCount, 1))
	for i := range vs {
		vs[i] = r.Varint("number")
	}
	if !present {
		return nil
	}
	return vs
}

// Bools appends a list of flags, telling nil from empty; Reader.Bools reads it.
func (w *Writer) Bools(vs []bool) {
	w.Bool(vs != nil)
	w.Count("flag list", len(vs), MaxCheckpointCount)
	for _, v := range vs {
		w.Bool(v)
	}
}

// Bools reads a list written by Writer.Bools.
func (r *Reader) Bools() []bool {
	present := r.Bool("flag list present")
	vs := make([]bool, r.Count("flag list", MaxCheckpointCount, 1))
	for i := range vs {
		vs[i] = r.Bool("flag")
	}
	if !present {
		return nil
	}
	return vs
}

// MaxBatchTxns bounds the members of one batch (txn.NewBatch) on the wire.
const MaxBatchTxns = 1 << 12

// The flag that starts an OptionalTxn: none, a transaction, or a batch.
const (
	optNone byte = iota
	optTxn
	optBatch
)

// OptionalTxn appends a transaction that may be nil (a no-op log entry) or a batch
// (txn.NewBatch): a flag byte (0: none, 1: a transaction, 2: a batch), then the transaction, or
// the batch's id, member count and members. The footprint of a batch is not sent: the reader
// rebuilds it from the members. Reader.OptionalTxn reads it.
func (w *Writer) OptionalTxn(t *txn.Txn) {
	switch {
	case t == nil:
		w.Byte(optNone)
	case t.Members != nil:
		w.Byte(optBatch)
		w.ID(t.ID)
		if !txn.IsBatchID(t.ID) || len(t.Members) < 2 {
			w.Fail("batch", "id %v or %d members out of range", t.ID, len(t.Members))
		}
		w.Count("batch members", len(t.Members), MaxBatchTxns)
		for _, m := range t.Members {
			w.Txn(m)
		}
	default:
		w.Byte(optTxn)
		w.Txn(t)
	}
}

// OptionalTxn reads a transaction written by Writer.OptionalTxn. It refuses a batch whose id is
// not a batch id, with fewer than two members or more than MaxBatchTxns, or whose members are
// batches or repeat an id.
func (r *Reader) OptionalTxn() *txn.Txn {
	switch flag := r.Byte("transaction flag"); flag {
	case optNone:
		return nil
	case optTxn:
		return r.Txn()
	case optBatch:
		id := r.ID("batch id")
		// A member takes at least 3 bytes: its id and two empty sets.
		members := make([]*txn.Txn, r.Count("batch members", MaxBatchTxns, 3))
		seen := make(map[txn.ID]bool, len(members))
		for i := range members {
			members[i] = r.Txn()
			if r.err != nil {
				return nil
			}
			if m := members[i].ID; txn.IsBatchID(m) || seen[m] {
				r.Fail("batch member", "%v is a batch id or repeated", m)
				return nil
			}
			seen[members[i].ID] = true
		}
		if r.err == nil && (!txn.IsBatchID(id) || len(members) < 2) {
			r.Fail("batch", "id %v or %d members out of range", id, len(members))
		}
		if r.err != nil {
			return nil
		}
		return txn.NewBatch(id, members)
	default:
		r.Fail("transaction flag", "%d is none of 0, 1, 2", flag)
	}
	return nil
}

// Request appends a client request (AppendRequestWith; opCodec, the protocol's codec, encodes
// its operation, and may be nil for the other kinds), length-prefixed: a request a checkpoint
// keeps until it is answered. Reader.Request reads it.
func (w *Writer) Request(req protocol.Request, opCodec protocol.Codec) {
	w.Append("request", func(dst []byte) ([]byte, error) {
		b, err := AppendRequestWith(nil, &req, opCodec)
		if err != nil {
			return dst, err
		}
		return AppendBytes(dst, b), nil
	})
}

// Request reads a request written by Writer.Request with the same opCodec.
func (r *Reader) Request(opCodec protocol.Codec) protocol.Request {
	b := r.Bytes("request", 2*MaxOpLen)
	if r.err != nil {
		return protocol.Request{}
	}
	req, err := DecodeRequestWith(b, opCodec)
	if err != nil {
		r.Fail("request", "%v", err)
	}
	return req
}

// Strings appends a list of keys of any length up to MaxCheckpointCount (Keys is bounded by a
// transaction's limit): a set of keys a checkpoint keeps. Reader.Strings reads it.
func (w *Writer) Strings(keys []string) {
	w.Count("key list", len(keys), MaxCheckpointCount)
	for _, k := range keys {
		w.String("key", k, MaxKeyLen)
	}
}

// Strings reads a list written by Writer.Strings; an empty list is nil.
func (r *Reader) Strings() []string { return r.keyList("key list", MaxCheckpointCount) }

// keyList reads a count of at most limit keys, then the keys; an empty list is nil.
func (r *Reader) keyList(what string, limit int) []string {
	n := r.Count(what, limit, 1)
	if n == 0 {
		return nil
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = r.String("key", MaxKeyLen)
	}
	return keys
}
