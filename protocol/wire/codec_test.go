package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
)

// note is a one-message protocol for testing Codec: a tag, then a string of at most 3 bytes.
type note struct{ text string }

func (n *note) SizeBytes() int { return 2 + len(n.text) }

// other is a message of another protocol.
type other struct{}

func (other) SizeBytes() int { return 1 }

var noteCodec protocol.Codec = Codec{
	Protocol: "note",
	Write: func(w *Writer, m protocol.Message) bool {
		n, ok := m.(*note)
		if ok {
			w.Byte(1)
			w.String("text", n.text, 3)
		}
		return ok
	},
	Read: func(r *Reader) protocol.Message {
		if tag := r.Byte("note tag"); tag != 1 {
			r.Fail("note tag", "unknown tag %d", tag)
			return nil
		}
		return &note{text: r.String("text", 3)}
	},
}

// TestCodec checks that Codec round-trips, refuses nil messages, foreign messages and Write's
// errors leaving dst unchanged, and refuses Read's errors and trailing bytes as malformed.
func TestCodec(t *testing.T) {
	b, err := noteCodec.Append([]byte{0xee}, &note{text: "hi"})
	if err != nil || !bytes.Equal(b, []byte{0xee, 1, 2, 'h', 'i'}) {
		t.Fatalf("Append = %x, %v", b, err)
	}
	if m, err := noteCodec.Decode(b[1:]); err != nil || m.(*note).text != "hi" {
		t.Fatalf("Decode = %#v, %v", m, err)
	}
	for _, m := range []protocol.Message{nil, (*note)(nil), other{}, &note{text: "long"}} {
		dst := []byte{0xee}
		if b, err := noteCodec.Append(dst, m); err == nil || !bytes.Equal(b, dst) || !strings.HasPrefix(err.Error(), "note: ") {
			t.Errorf("Append(%#v) = %x, %v; want an error and dst unchanged", m, b, err)
		}
	}
	for _, in := range [][]byte{{}, {2}, {1, 4, 'l', 'o', 'n', 'g'}, {1, 0, 0}} {
		if m, err := noteCodec.Decode(in); m != nil || !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "note: ") {
			t.Errorf("Decode(%x) = %#v, %v; want a malformed-input error", in, m, err)
		}
	}
}
