// Package protocol defines the contract between a replication protocol and the driver that runs
// it. A protocol replica is a deterministic, single-threaded state machine in the style of
// etcd-io/raft: it reacts to three kinds of input (a peer message, a client request, a timer) and
// produces effects only through the Env its driver hands it. It never starts goroutines, touches
// sockets, reads a wall clock or uses global randomness, so the same code runs unchanged in the
// discrete-event simulator (package sim) and in a networked server.
package protocol

import (
	"fmt"
	"math/rand/v2"

	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/topology"
)

// NodeID indexes Config.Nodes: one protocol replica (one process in a real deployment).
type NodeID int32

// Node places one replica: its datacenter (an index into the topology's DCs) and the key-space
// partition it serves. Helios and Message Futures run one full replica per datacenter (partition
// 0); partitioned protocols run several nodes per datacenter.
type Node struct {
	ID        NodeID
	DC        int
	Partition int
}

// Config is what a replica is built from. Every replica of a run gets the same Nodes, Topology
// and Params; only Self differs.
type Config struct {
	Self     NodeID
	Nodes    []Node
	Topology *topology.Topology
	Params   Params
}

// SelfNode returns the Node this replica runs as.
func (c *Config) SelfNode() Node { return c.Nodes[c.Self] }

// TimerID names a timer a replica set; its meaning is private to the protocol.
type TimerID int

// Message is a replica-to-replica message. A sender must not modify a message (or anything it
// points to) after Send: the simulator hands the same value to the receiver.
type Message interface {
	// SizeBytes estimates the message's encoded size, for traffic accounting.
	SizeBytes() int
}

// Env is everything a replica may use to observe or affect the world. Drivers implement it.
// Effects (Send, SetTimer, Reply) take place after the current handler returns; a handler's
// effects are emitted in call order.
type Env interface {
	// NowUs reads this node's local clock in microseconds. It may be skewed and drift relative
	// to other nodes' clocks, and it may repeat a value, but it never goes backwards.
	NowUs() int64
	// Rand is this node's seeded pseudo-random source.
	Rand() *rand.Rand
	// Send queues m for delivery to node to. Delivery may be delayed, and messages on a link
	// whose endpoints are partitioned or crashed are lost; protocols that need reliability
	// retransmit. Links are FIFO while they deliver.
	Send(to NodeID, m Message)
	// SetTimer arranges for HandleTimer(id) to be called after afterUs microseconds of this
	// node's local time. Timers cannot be cancelled: protocols ignore stale ones.
	SetTimer(afterUs int64, id TimerID)
	// Reply sends r to the client named in r.Client.
	Reply(r Reply)
	// Store is this replica's multi-version data store.
	Store() *store.Store
}

// Replica is one protocol instance. Drivers call its methods from one goroutine at a time.
type Replica interface {
	// Start is called once before any other input: a replica typically sends its first
	// heartbeat and arms its periodic timers here.
	Start()
	// HandleMessage processes one message from a peer replica.
	HandleMessage(from NodeID, m Message)
	// HandleRequest processes one client request; the replica answers with Env.Reply, now or
	// later.
	HandleRequest(req Request)
	// HandleTimer processes a timer set with Env.SetTimer.
	HandleTimer(id TimerID)
}

// Factory builds the replica cfg.Self with env. It validates cfg.Params and returns an error
// naming any unknown or malformed parameter.
type Factory func(cfg Config, env Env) (Replica, error)

// RequestKind says what a client asks of its replica.
type RequestKind uint8

const (
	// Get reads the latest version of Key at the replica (part of a read-write transaction).
	Get RequestKind = iota + 1
	// Commit submits Txn for commit; the reply carries the outcome.
	Commit
	// ReadSnapshot reads all Keys from one consistent local snapshot of the replica. It is the
	// opt-in "per-DC snapshot" read-only path: consistent within the datacenter, not globally
	// serializable (spec GAP-H9). Read-only transactions that need one-copy serializability
	// go through Commit with an empty write set.
	ReadSnapshot
	// Operation carries a protocol-specific request in Request.Op, answered in Reply.Op. The
	// partitioned protocols (the transactional-causal family) speak it: their client library
	// runs part of the protocol (vector clocks, dependency lists, snapshot rounds) and needs
	// messages of its own shape, not the Get/Commit vocabulary.
	Operation
)

// Request is a client's request to its replica. Seq is echoed in the Reply.
type Request struct {
	Client txn.ClientID
	Seq    uint64
	Kind   RequestKind
	Key    string   // Get
	Keys   []string // ReadSnapshot
	Txn    *txn.Txn // Commit
	// Get: the transaction the read belongs to; protocols that lock on reads use it.
	TxnID txn.ID
	// Operation: the protocol's own request, encoded on the wire by its Codec.
	Op Message
}

// Reply answers one Request.
type Reply struct {
	Client txn.ClientID
	Seq    uint64
	// Get: the value and its version (writer id; txn.None for the initial, empty version).
	Value   []byte
	Version txn.ID
	// ReadSnapshot: one entry per requested key, in request order.
	Snapshot []SnapshotRead
	// Commit: the outcome, and why if aborted.
	Status txn.Status
	Reason txn.AbortReason
	// Operation: the protocol's own answer.
	Op Message
	// Err reports a malformed request; no other field is meaningful then.
	Err string
}

// VersionOrderer is implemented by replicas whose version order of a key is not the order in
// which they installed its versions in their Store (for example Eiger, which orders versions by
// commit timestamp while commits may arrive out of that order). The drivers hand the checker
// VersionOrder instead of the store's installation order.
type VersionOrderer interface {
	// VersionOrder returns, for every key this replica holds, its versions' writers, oldest first.
	VersionOrder() map[string][]txn.ID
}

// SnapshotRead is one key read by a ReadSnapshot request.
type SnapshotRead struct {
	Key     string
	Value   []byte
	Version txn.ID
}

// FullReplicas checks that cfg places exactly one replica in every datacenter, as the
// full-replication protocols (Message Futures, Helios) require, and returns the replica of each
// datacenter indexed by datacenter, with this replica's datacenter.
func FullReplicas(cfg Config) (nodeOfDC []NodeID, selfDC int, err error) {
	n := cfg.Topology.N()
	nodeOfDC = make([]NodeID, n)
	seen := make([]bool, n)
	for i, nd := range cfg.Nodes {
		if nd.ID != NodeID(i) || nd.DC < 0 || nd.DC >= n {
			return nil, 0, fmt.Errorf("node %d: malformed placement (id %d, datacenter %d of %d)", i, nd.ID, nd.DC, n)
		}
		if seen[nd.DC] {
			return nil, 0, fmt.Errorf("datacenter %s has more than one replica; this protocol runs exactly one full replica per datacenter", cfg.Topology.DCs[nd.DC])
		}
		seen[nd.DC] = true
		nodeOfDC[nd.DC] = nd.ID
	}
	for dc, ok := range seen {
		if !ok {
			return nil, 0, fmt.Errorf("datacenter %s has no replica", cfg.Topology.DCs[dc])
		}
	}
	if int(cfg.Self) < 0 || int(cfg.Self) >= len(cfg.Nodes) {
		return nil, 0, fmt.Errorf("self node %d out of range", cfg.Self)
	}
	return nodeOfDC, cfg.Nodes[cfg.Self].DC, nil
}
