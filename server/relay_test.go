package server

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// TestRelayedReplyEncoding: a relayed reply decodes to what was encoded, with or without an
// operation, and one cut inside its fields or padded is an error, never a panic.
func TestRelayedReplyEncoding(t *testing.T) {
	for _, r := range []protocol.Reply{
		{Client: 1<<24 | 5, Seq: 9, Op: &flstore.AppendResult{TOId: 3, LId: 7}},
		{Client: 2<<24 | 1, Seq: 1, Err: "chariots: malformed append"},
	} {
		b, err := encodeRelayedReply(r, chariots.Codec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRelayedReply(b, chariots.Codec)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("decoded %+v (%v), want %+v", got, err, r)
		}
		// Cut inside its fields, it fails (a cut operation may decode as a shorter one, or none:
		// frames carry their length, so a relayed reply is never cut in transit).
		fields := int(b[0]) // one-byte length prefix for these replies
		for n := range 1 + fields {
			if _, err := decodeRelayedReply(b[:n], chariots.Codec); err == nil {
				t.Fatalf("a reply cut to %d of %d bytes decoded", n, len(b))
			}
		}
		if _, err := decodeRelayedReply(append(b, 0xff), chariots.Codec); err == nil {
			t.Fatal("a reply with a trailing byte decoded")
		}
	}
	if _, err := decodeRelayedReply([]byte{0x80}, chariots.Codec); err == nil {
		t.Fatal("a bad length decoded")
	}
}
