// Package wire is Meridian's binary wire format for the network runtime: the primitive encoder
// and Decoder every codec is built from (and Writer and Reader, which wrap them for codecs that
// write a message field by field), the encodings of transactions and of client requests and
// replies, and the length-prefixed frames (with the peer handshake) that carry them over a TCP
// stream.
//
// Encoding. Integers are varints (encoding/binary's Uvarint, and zigzag Varint for signed
// values); byte strings and strings are a uvarint length followed by the bytes; booleans are one
// byte, 0 or 1; lists are a uvarint count followed by the elements. The format is canonical:
// decoders reject over-long varints, booleans other than 0 and 1, unknown tags and trailing
// bytes, so every accepted input re-encodes to exactly the same bytes. Empty byte strings and
// empty lists decode as nil.
//
// Hostile input. Everything a decoder reads may come from a faulty or malicious peer. Decoders
// never panic; they return errors that wrap ErrMalformed and name the field and offset at fault.
// Every length and count is checked against an exported limit and against the bytes that remain
// before anything is allocated, so a short frame cannot make the receiver allocate much more
// than a small multiple of its own size. Encoders apply the same limits, so that a sender finds
// out at once that a value cannot be sent instead of its peers rejecting it.
//
// Codecs. A codec that writes a message field by field uses Writer and Reader, which remember
// the first error so that fields are written and read in sequence and checked once; Reader
// returns zero values after an error. Codec turns a protocol's write and read functions into a
// protocol.Codec (the transactional-causal protocols' codecs are built this way).
//
// Protocol messages (rlog.AppendMessage, the helios and mf codecs and the transactional-causal
// protocols' codecs) are built on this package; the format version of all of them together is
// FormatVersion, exchanged in the Hello handshake.
package wire

// FormatVersion numbers the wire format as a whole: frames, the handshake, requests, replies and
// every protocol's messages. Peers refuse to talk across versions; bump it on any incompatible
// change.
const FormatVersion uint32 = 2

// Limits on what a decoder accepts (and an encoder produces). They bound the memory a peer can
// make the receiver allocate and catch corrupt lengths early; frames are bounded separately by
// ReadFrame's maxBytes.
const (
	// MaxKeyLen is the longest key, in bytes.
	MaxKeyLen = 1 << 10
	// MaxValueLen is the longest value, in bytes.
	MaxValueLen = 1 << 20
	// MaxTxnOps bounds a transaction's read set and, separately, its write set.
	MaxTxnOps = 1 << 16
	// MaxSnapshotKeys bounds the keys of one ReadSnapshot request and the reads of its reply.
	MaxSnapshotKeys = 1 << 16
	// MaxTextLen bounds the human-readable strings of a reply (abort reason, error message).
	MaxTextLen = 16 << 10
	// MaxNameLen bounds the cluster and protocol names of a Hello.
	MaxNameLen = 255
	// MaxOpLen bounds the encoding of a request's protocol operation (protocol.Request.Op).
	MaxOpLen = 16 << 20
)
