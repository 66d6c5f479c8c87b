package protocol

// Codec turns one protocol's replica-to-replica messages into bytes and back, for the network
// runtime. Decode must never panic and must reject malformed or oversized input with an error:
// its input comes from the network.
type Codec interface {
	// Append appends m's encoding to dst.
	Append(dst []byte, m Message) ([]byte, error)
	// Decode parses one message encoded by Append.
	Decode(b []byte) (Message, error)
}
