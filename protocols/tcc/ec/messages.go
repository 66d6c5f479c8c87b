package ec

import "github.com/meridian-kv/meridian/protocol/txn"

// ReadReq is a ROT's one round at one partition: its keys there (distinct).
type ReadReq struct {
	Tx   txn.ID
	Keys []string
}

// ReadResp answers a ReadReq with each key's current value, in request order.
type ReadResp struct {
	Tx    txn.ID
	Items []Item
}

// Item is one key's current value and its writer (txn.None, with a nil value, for a key never
// written).
type Item struct {
	Key    string
	Value  []byte
	Writer txn.ID
}

// WriteReq is a WOT's one round at one partition: its writes there (distinct keys), all stamped
// with the client's timestamp Ts.
type WriteReq struct {
	Tx     txn.ID
	Ts     int64
	Writes []txn.Write
}

// WriteResp acknowledges a WriteReq.
type WriteResp struct {
	Tx txn.ID
}

// Encoded sizes, for traffic accounting: an id or a timestamp is at most 10 bytes as a varint;
// each key, value and list is counted with a 2-byte length.
const (
	sizeScalar = 10
	sizeLen    = 2
)

// SizeBytes implements protocol.Message.
func (m *ReadReq) SizeBytes() int {
	n := 1 + sizeScalar + sizeLen
	for _, k := range m.Keys {
		n += sizeLen + len(k)
	}
	return n
}

// SizeBytes implements protocol.Message.
func (m *ReadResp) SizeBytes() int {
	n := 1 + sizeScalar + sizeLen
	for _, it := range m.Items {
		n += 2*sizeLen + len(it.Key) + len(it.Value) + sizeScalar
	}
	return n
}

// SizeBytes implements protocol.Message.
func (m *WriteReq) SizeBytes() int {
	n := 1 + 2*sizeScalar + sizeLen
	for _, w := range m.Writes {
		n += 2*sizeLen + len(w.Key) + len(w.Value)
	}
	return n
}

// SizeBytes implements protocol.Message.
func (m *WriteResp) SizeBytes() int { return 1 + sizeScalar }
