// Package codectest holds the checks every protocol's wire codec (protocol.Codec) must pass, so
// that each protocol's tests state only its sample messages: every message round-trips
// unchanged, every truncation and a trailing byte are refused, and under fuzzing Decode never
// panics, refuses garbage with wire.ErrMalformed and decodes only canonical encodings.
package codectest

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// RoundTrip encodes every message of msgs, decodes it back and requires the same value, requires
// Append to keep what dst already held, then requires every truncation of the encoding (with no
// message and an error wrapping wire.ErrMalformed), and the encoding with one trailing byte, to
// be refused.
func RoundTrip(t *testing.T, c protocol.Codec, msgs []protocol.Message) {
	t.Helper()
	for _, m := range msgs {
		b, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		got, err := c.Decode(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%#v: decoded %#v, %v", m, got, err)
		}
		prefix := []byte("prefix")
		if again, err := c.Append(prefix[:len(prefix):len(prefix)], m); err != nil || string(again[:len(prefix)]) != "prefix" || string(again[len(prefix):]) != string(b) {
			t.Errorf("%T: Append after other bytes gave %x, %v; want them kept and %x after", m, again, err, b)
		}
		for i := range b {
			if got, err := c.Decode(b[:i]); err == nil || got != nil || !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("%T: truncation to %d bytes decoded to %v, %v; want nil and a malformed-input error", m, i, got, err)
			}
		}
		if _, err := c.Decode(append(b, 0)); err == nil {
			t.Errorf("%T: trailing byte accepted", m)
		}
	}
}

// Fuzz seeds f with the encodings of msgs and fuzzes c.Decode: it must never panic, an error
// must wrap wire.ErrMalformed and come without a message, whatever decodes must pass valid (if
// not nil: the protocol's own well-formedness check), re-encode to the same bytes and decode
// again to an equal message.
func Fuzz(f *testing.F, c protocol.Codec, msgs []protocol.Message, valid func(protocol.Message) bool) {
	for _, m := range msgs {
		b, err := c.Append(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := c.Decode(b)
		if err != nil {
			if m != nil || !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("error %v (message %v) does not wrap wire.ErrMalformed", err, m)
			}
			return
		}
		if valid != nil && !valid(m) {
			t.Fatalf("decoded a malformed message: %+v", m)
		}
		again, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("decoded %#v does not re-encode: %v", m, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encodes differently:\n in %x\nout %x", b, again)
		}
		if m2, err := c.Decode(again); err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("decodes differently the second time: %#v, %v", m2, err)
		}
	})
}

// Messages lists named sample messages in name order, for RoundTrip and Fuzz.
func Messages[M protocol.Message](samples map[string]M) []protocol.Message {
	out := make([]protocol.Message, 0, len(samples))
	for _, name := range slices.Sorted(maps.Keys(samples)) {
		out = append(out, samples[name])
	}
	return out
}
