package wire

import (
	"fmt"
	"reflect"

	"github.com/meridian-kv/meridian/protocol"
)

// Codec is a protocol.Codec built from a protocol's two field-by-field functions, for the
// protocols whose messages are a tag byte followed by fields (the transactional-causal family):
//
//	var Codec protocol.Codec = wire.Codec{Protocol: "wren", Write: write, Read: read}
//
// Append refuses a nil message (or a nil pointer) before calling Write, and returns dst
// unchanged with Write's first error; Decode requires Read to consume the whole input. Every
// error is prefixed with Protocol.
type Codec struct {
	// Protocol names the protocol in errors ("wren: ...").
	Protocol string
	// Write writes m's tag and fields to w, or returns false if m is not one of the protocol's
	// messages. It is never called with a nil message.
	Write func(w *Writer, m protocol.Message) bool
	// Read reads one message's tag and fields. It may return anything once r has an error (Read
	// records an unknown tag with r.Fail); its result is then discarded.
	Read func(r *Reader) protocol.Message
}

// Append appends m's encoding to dst.
func (c Codec) Append(dst []byte, m protocol.Message) ([]byte, error) {
	if v := reflect.ValueOf(m); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return dst, fmt.Errorf("%s: cannot encode %T: nil", c.Protocol, m)
	}
	w := NewWriter(dst)
	if !c.Write(w, m) {
		return dst, fmt.Errorf("%s: cannot encode %T: not a %s message", c.Protocol, m, c.Protocol)
	}
	b, err := w.Finish()
	if err != nil {
		return dst, fmt.Errorf("%s: %w", c.Protocol, err)
	}
	return b, nil
}

// Decode decodes one whole message; errors wrap ErrMalformed.
func (c Codec) Decode(b []byte) (protocol.Message, error) {
	r := NewReader(b)
	m := c.Read(r)
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Protocol, err)
	}
	return m, nil
}
