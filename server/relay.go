package server

import (
	"encoding/binary"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Relayed replies. In a protocol whose replies may come from another node than the one that
// took the request (registry.Entry.RepliesElsewhere: a Chariots client appends at a batcher,
// and the maintainer that persists the record answers), a node whose replica answers a request
// it holds no waiting call for relays the answer to the node the answer names as the one that
// took the request (relayVia: the batcher a log client appended at), or else to the node that
// allocated the client's id. The relayed reply travels as a wire.KindReply frame over the peer
// transport, after the input that produced it is durable like every other effect, and the
// receiving node hands it to the waiting call, if any; it is never a replica input and is not
// recorded.

// relayVia is implemented by an answer that names the node where its request was taken
// (flstore.AppendResult: the batcher a client appended at, which need not be the node that
// allocated its id once the client failed over to another batcher).
type relayVia interface {
	RelayTo() (protocol.NodeID, bool)
}

// relayTarget returns the node a reply with no waiting call here goes to, or false if none:
// the node its answer names (relayVia), else the node that allocated the client's id.
func (n *Node) relayTarget(r protocol.Reply) (protocol.NodeID, bool) {
	if !n.relayReplies {
		return 0, false
	}
	if v, ok := r.Op.(relayVia); ok {
		if to, ok := v.RelayTo(); ok && to >= 0 && int(to) < len(n.cfg.Nodes) && to != n.self {
			return to, true
		}
	}
	home := int(r.Client>>24) - 1 // the allocator's index (inputLog.allocateClientIDs)
	if home < 0 || home >= len(n.cfg.Nodes) || home == int(n.self) {
		return 0, false
	}
	return protocol.NodeID(home), true
}

// encodeRelayedReply encodes r: the length of its fields but Op (wire.AppendReply), those
// fields, then Op encoded by codec (nothing if Op is nil).
func encodeRelayedReply(r protocol.Reply, codec protocol.Codec) ([]byte, error) {
	op := r.Op
	r.Op = nil
	fields, err := wire.AppendReply(nil, &r)
	if err != nil {
		return nil, err
	}
	b := binary.AppendUvarint(nil, uint64(len(fields)))
	b = append(b, fields...)
	if op != nil {
		if b, err = codec.Append(b, op); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// decodeRelayedReply decodes what encodeRelayedReply wrote; a malformed payload is an error.
func decodeRelayedReply(b []byte, codec protocol.Codec) (protocol.Reply, error) {
	size, k := binary.Uvarint(b)
	if k <= 0 || size > uint64(len(b)-k) {
		return protocol.Reply{}, fmt.Errorf("relayed reply: bad length")
	}
	r, err := wire.DecodeReply(b[k : k+int(size)])
	if err != nil {
		return protocol.Reply{}, fmt.Errorf("relayed reply: %w", err)
	}
	if rest := b[k+int(size):]; len(rest) > 0 {
		if codec == nil {
			return protocol.Reply{}, fmt.Errorf("relayed reply: an operation, and the protocol serves none")
		}
		if r.Op, err = codec.Decode(rest); err != nil {
			return protocol.Reply{}, fmt.Errorf("relayed reply: operation: %w", err)
		}
	}
	return r, nil
}

// relay sends r to node to, where its request waits.
func (n *Node) relay(to protocol.NodeID, r protocol.Reply) {
	b, err := encodeRelayedReply(r, n.codec)
	if err != nil {
		n.logger.Error("cannot encode a relayed reply", "client", r.Client, "err", err)
		return
	}
	n.transport.queue(to, wire.KindReply, b)
}

// deliverRelayed hands a reply relayed by a peer to its waiting call (loop goroutine); one no
// call waits for (answered already, or the client is gone) is dropped.
func (n *Node) deliverRelayed(r protocol.Reply) {
	key := replyKey{r.Client, r.Seq}
	p, ok := n.pending[key]
	if !ok {
		return
	}
	delete(n.pending, key)
	p.reply(r, nil)
}
