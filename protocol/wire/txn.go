package wire

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// AppendTxn appends t: its ID, its reads (key, version) and its writes (key, value). It fails,
// leaving dst's length unchanged, if t is nil or exceeds MaxTxnOps, MaxKeyLen or MaxValueLen.
func AppendTxn(dst []byte, t *txn.Txn) ([]byte, error) {
	if t == nil {
		return dst, errors.New("wire: cannot encode a nil transaction")
	}
	if err := checkTxn(t); err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(t.ID))
	dst = binary.AppendUvarint(dst, uint64(len(t.Reads)))
	for _, r := range t.Reads {
		dst = AppendString(dst, r.Key)
		dst = binary.AppendUvarint(dst, uint64(r.Version))
	}
	dst = binary.AppendUvarint(dst, uint64(len(t.Writes)))
	for _, w := range t.Writes {
		dst = AppendString(dst, w.Key)
		dst = AppendBytes(dst, w.Value)
	}
	return dst, nil
}

func checkTxn(t *txn.Txn) error {
	if t.Members != nil {
		return errors.New("wire: a batch of transactions is encoded by Writer.OptionalTxn only")
	}
	if err := checkLen("transaction read set", len(t.Reads), MaxTxnOps); err != nil {
		return err
	}
	if err := checkLen("transaction write set", len(t.Writes), MaxTxnOps); err != nil {
		return err
	}
	for _, r := range t.Reads {
		if err := checkLen("read key length", len(r.Key), MaxKeyLen); err != nil {
			return err
		}
	}
	for _, w := range t.Writes {
		if err := checkLen("write key length", len(w.Key), MaxKeyLen); err != nil {
			return err
		}
		if err := checkLen("write value length", len(w.Value), MaxValueLen); err != nil {
			return err
		}
	}
	return nil
}

// DecodeTxn reads a transaction written by AppendTxn. Empty read and write sets and empty
// values decode as nil. It checks the wire limits only; whether keys are non-empty and distinct
// is the protocol's business (protocol.ValidateCommit).
//
// The transaction's keys share one allocation, and so do its values: decoding a transaction
// costs five allocations whatever its size, and a key or value kept longer than its
// transaction keeps only that transaction's keys or values alive.
func DecodeTxn(d *Decoder) (*txn.Txn, error) {
	// Pass 1 validates and sizes the arenas; pass 2 cannot fail and fills them.
	start := *d
	nr, nw, keyBytes, valueBytes, err := scanTxn(d)
	if err != nil {
		return nil, err
	}
	p := start
	id, _ := p.Uvarint("txn id")
	t := &txn.Txn{ID: txn.ID(id)}
	var keys strings.Builder
	keys.Grow(keyBytes)
	key := func() string {
		b, _ := p.raw("txn key", MaxKeyLen)
		n := keys.Len()
		keys.Write(b)
		return keys.String()[n:]
	}
	p.Uvarint("txn read count")
	if nr > 0 {
		t.Reads = make([]txn.Read, nr)
		for i := range t.Reads {
			t.Reads[i].Key = key()
			v, _ := p.Uvarint("txn read version")
			t.Reads[i].Version = txn.ID(v)
		}
	}
	p.Uvarint("txn write count")
	if nw > 0 {
		t.Writes = make([]txn.Write, nw)
		values := make([]byte, 0, valueBytes)
		for i := range t.Writes {
			t.Writes[i].Key = key()
			if v, _ := p.raw("txn write value", MaxValueLen); len(v) > 0 {
				n := len(values)
				values = append(values, v...)
				t.Writes[i].Value = values[n:len(values):len(values)]
			}
		}
	}
	if p.off != d.off {
		return nil, d.Errorf("txn", "decoding out of step (%d, %d)", p.off, d.off) // cannot happen
	}
	return t, nil
}

// scanTxn checks a transaction's encoding and returns its shape, consuming it.
func scanTxn(d *Decoder) (reads, writes, keyBytes, valueBytes int, err error) {
	if _, err = d.Uvarint("txn id"); err != nil {
		return 0, 0, 0, 0, err
	}
	// A read takes at least 2 bytes (empty key, version), a write 2 (empty key, empty value).
	if reads, err = d.Count("txn read count", MaxTxnOps, 2); err != nil {
		return 0, 0, 0, 0, err
	}
	for range reads {
		k, err := d.raw("txn read key", MaxKeyLen)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		keyBytes += len(k)
		if _, err := d.Uvarint("txn read version"); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if writes, err = d.Count("txn write count", MaxTxnOps, 2); err != nil {
		return 0, 0, 0, 0, err
	}
	for range writes {
		k, err := d.raw("txn write key", MaxKeyLen)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		keyBytes += len(k)
		v, err := d.raw("txn write value", MaxValueLen)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		valueBytes += len(v)
	}
	return reads, writes, keyBytes, valueBytes, nil
}
