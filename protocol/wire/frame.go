package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
)

// Frame kinds: the first byte of every frame says what its payload is. Values not listed here
// are reserved for future kinds; a receiver rejects kinds it does not know.
const (
	// KindHello carries a Hello, the first frame each side of a peer connection sends.
	KindHello byte = 1
	// KindMessage carries one protocol message, encoded by the protocol's protocol.Codec.
	KindMessage byte = 2
	// KindReply carries a client reply from the node whose replica made it to the node holding
	// the client's request (registry.Entry.RepliesElsewhere: a Chariots maintainer answers the
	// append a batcher took); the payload is the server's encoding of the reply.
	KindReply byte = 3
)

// DefaultMaxFrameBytes is a frame size limit (kind byte plus payload) for ReadFrame callers with
// no better figure: large enough for a full Helios message carrying thousands of transactions,
// small enough that a peer cannot exhaust memory with one frame.
const DefaultMaxFrameBytes = 64 << 20

var (
	// ErrFrameTooLarge is returned by ReadFrame for a frame whose length prefix exceeds maxBytes
	// (before anything is allocated), and by WriteFrame for a payload whose length does not fit
	// the 4-byte prefix.
	ErrFrameTooLarge = errors.New("wire: frame too large")
	// ErrEmptyFrame is returned by ReadFrame for a frame whose length prefix is 0: every frame
	// holds at least its kind byte.
	ErrEmptyFrame = errors.New("wire: empty frame (length 0)")
)

// frameHeader is the length prefix: 4 bytes, big-endian, counting the kind byte and the payload.
const frameHeader = 4

// readChunk bounds how much ReadFrame allocates ahead of the bytes that have actually arrived,
// so that a peer announcing a large frame must send it to make the receiver hold it.
const readChunk = 64 << 10

// WriteFrame writes one frame: a 4-byte big-endian length (1 + len(payload)), the kind byte and
// the payload. Header and payload go out in one write where w supports it (a net.Conn uses
// writev), so small frames do not become two packets.
func WriteFrame(w io.Writer, kind byte, payload []byte) error {
	if uint64(len(payload))+1 > math.MaxUint32 {
		return fmt.Errorf("%w: payload of %d bytes does not fit a 4-byte length", ErrFrameTooLarge, len(payload))
	}
	var hdr [frameHeader + 1]byte
	binary.BigEndian.PutUint32(hdr[:frameHeader], uint32(len(payload)+1))
	hdr[frameHeader] = kind
	if len(payload) == 0 {
		_, err := w.Write(hdr[:])
		return err
	}
	bufs := net.Buffers{hdr[:], payload}
	_, err := bufs.WriteTo(w)
	return err
}

// ReadFrame reads one frame written by WriteFrame. maxBytes bounds the length prefix (kind byte
// plus payload); 0 or less means DefaultMaxFrameBytes. A length of 0 is ErrEmptyFrame and one
// above maxBytes is ErrFrameTooLarge, both reported before any allocation; after either the
// stream is out of step and should be closed. The payload is freshly allocated and owned by the
// caller. At a clean end of stream (no byte of a new frame read) ReadFrame returns io.EOF; a
// stream that ends inside a frame gives io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, maxBytes int) (kind byte, payload []byte, err error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFrameBytes
	}
	hdr, err := r.Peek(frameHeader)
	if err != nil {
		if err == io.EOF && len(hdr) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr)
	if _, err := r.Discard(frameHeader); err != nil {
		return 0, nil, err // cannot happen after a successful Peek
	}
	switch {
	case n == 0:
		return 0, nil, ErrEmptyFrame
	case uint64(n) > uint64(maxBytes):
		return 0, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, maxBytes)
	}
	kind, err = r.ReadByte()
	if err != nil {
		return 0, nil, noEOF(err)
	}
	size := int(n) - 1
	if size == 0 {
		return kind, nil, nil
	}
	payload = make([]byte, 0, min(size, readChunk))
	for len(payload) < size {
		if len(payload) == cap(payload) {
			payload = slices.Grow(payload, min(size-len(payload), cap(payload)))
		}
		m, err := io.ReadFull(r, payload[len(payload):min(size, cap(payload))])
		payload = payload[:len(payload)+m]
		if err != nil {
			return 0, nil, noEOF(err)
		}
	}
	return kind, payload, nil
}

// noEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Hello is the handshake payload (frame KindHello) each side of a peer connection sends first,
// so that a node never feeds messages from another cluster, another protocol, an unexpected
// peer or an incompatible format version into its replica.
type Hello struct {
	// Version is the sender's FormatVersion. It is encoded first, so that every future
	// version can still read it and refuse the connection cleanly.
	Version uint32
	// Cluster names the deployment; peers of different clusters refuse each other.
	Cluster string
	// Protocol is the registry name of the protocol the sender runs (for example "helios-1").
	Protocol string
	// From is the sender's node id (protocol.NodeID).
	From uint32
}

// AppendHello appends h: Version, Cluster, Protocol, From. It fails, leaving dst's length
// unchanged, if a name exceeds MaxNameLen.
func AppendHello(dst []byte, h Hello) ([]byte, error) {
	if err := checkLen("hello cluster name length", len(h.Cluster), MaxNameLen); err != nil {
		return dst, err
	}
	if err := checkLen("hello protocol name length", len(h.Protocol), MaxNameLen); err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(h.Version))
	dst = AppendString(dst, h.Cluster)
	dst = AppendString(dst, h.Protocol)
	dst = binary.AppendUvarint(dst, uint64(h.From))
	return dst, nil
}

// ErrVersionMismatch is returned by DecodeHello when the peer speaks another FormatVersion; the
// returned Hello then holds only the peer's Version.
var ErrVersionMismatch = errors.New("wire: format version mismatch")

// DecodeHello parses a Hello written by AppendHello. A peer with a different FormatVersion gets
// an error wrapping ErrVersionMismatch and a Hello holding only its Version: the rest of its
// hello is not parsed, since its layout may differ.
func DecodeHello(b []byte) (Hello, error) {
	d := Decoder{b: b}
	var h Hello
	var err error
	if h.Version, err = d.Uint32("hello version"); err != nil {
		return Hello{}, err
	}
	if h.Version != FormatVersion {
		return Hello{Version: h.Version}, fmt.Errorf("%w: peer speaks version %d, this node %d", ErrVersionMismatch, h.Version, FormatVersion)
	}
	if h.Cluster, err = d.String("hello cluster", MaxNameLen); err != nil {
		return Hello{}, err
	}
	if h.Protocol, err = d.String("hello protocol", MaxNameLen); err != nil {
		return Hello{}, err
	}
	if h.From, err = d.Uint32("hello from"); err != nil {
		return Hello{}, err
	}
	if err := d.Done(); err != nil {
		return Hello{}, err
	}
	return h, nil
}
