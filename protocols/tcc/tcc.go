// Package tcc is the shared vocabulary of Meridian's transactional-causal protocol family
// (FastCCS, Eiger, Wren and the eventual-consistency baseline; spec fastccs-tcc.md): a key space
// split over N partitions per datacenter, read-only transactions (ROTs) that read a set of keys
// from one snapshot, and write-only transactions (WOTs) that write a set of keys atomically.
//
// Unlike Helios and Message Futures, these protocols run part of their logic in the client
// library (FastCCS's client clock, Eiger's dependency list, Wren's write cache), so a protocol
// here is two sans-IO halves: server replicas (protocol.Replica, one per partition, built by the
// registry's factory) and a Client built by a ClientFactory. Both halves speak the protocol's own
// messages through protocol.Request.Op and protocol.Reply.Op.
package tcc

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// PartitionOf maps key to one of n partitions: FNV-1a 64 of the key modulo n (spec §2.1). Every
// protocol of the family and every workload use it, so that comparisons are fair.
func PartitionOf(key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// Layout is where the partitions of every datacenter run: Node[dc][p] is the node serving
// partition p in datacenter dc.
type Layout struct {
	Node [][]protocol.NodeID
}

// Partitions is the number of partitions per datacenter.
func (l *Layout) Partitions() int { return len(l.Node[0]) }

// NewLayout checks that nodes give every one of dcs datacenters exactly the partitions 0..N-1
// (the same N everywhere) and returns where they run.
func NewLayout(nodes []protocol.Node, dcs int) (*Layout, error) {
	if dcs <= 0 {
		return nil, errors.New("tcc: no datacenters")
	}
	perDC := make([]map[int]protocol.NodeID, dcs)
	for i := range perDC {
		perDC[i] = map[int]protocol.NodeID{}
	}
	for i, nd := range nodes {
		if nd.ID != protocol.NodeID(i) || nd.DC < 0 || nd.DC >= dcs || nd.Partition < 0 {
			return nil, fmt.Errorf("tcc: node %d has a malformed placement (id %d, datacenter %d, partition %d)", i, nd.ID, nd.DC, nd.Partition)
		}
		if _, dup := perDC[nd.DC][nd.Partition]; dup {
			return nil, fmt.Errorf("tcc: datacenter %d has two nodes for partition %d", nd.DC, nd.Partition)
		}
		perDC[nd.DC][nd.Partition] = nd.ID
	}
	n := len(perDC[0])
	l := &Layout{Node: make([][]protocol.NodeID, dcs)}
	for dc, m := range perDC {
		if len(m) != n || n == 0 {
			return nil, fmt.Errorf("tcc: datacenter %d has %d partitions, datacenter 0 has %d; every datacenter needs the same non-zero number", dc, len(m), n)
		}
		l.Node[dc] = make([]protocol.NodeID, n)
		for p := range n {
			id, ok := m[p]
			if !ok {
				return nil, fmt.Errorf("tcc: datacenter %d has no node for partition %d", dc, p)
			}
			l.Node[dc][p] = id
		}
	}
	return l, nil
}

// PartitionedNodes places n partitions in each of dcs datacenters: node dc*n+p serves partition
// p of datacenter dc.
func PartitionedNodes(dcs, n int) []protocol.Node {
	nodes := make([]protocol.Node, 0, dcs*n)
	for dc := range dcs {
		for p := range n {
			nodes = append(nodes, protocol.Node{ID: protocol.NodeID(len(nodes)), DC: dc, Partition: p})
		}
	}
	return nodes
}

// Transport carries a client library's requests to any node of its deployment. Calls may be
// outstanding to several nodes at once; each done runs exactly once, on the client's own event
// loop (in the simulator: in virtual time). sim.Conn implements it.
type Transport interface {
	CallNode(to protocol.NodeID, req protocol.Request, done func(protocol.Reply))
	// NowUs reads the client's clock.
	NowUs() int64
	// After runs fn on the client's event loop after delayUs (the library's timeouts).
	After(delayUs int64, fn func())
}

// ClientConfig is what a client library is built from.
type ClientConfig struct {
	ID        txn.ClientID
	DC        int // the client's datacenter: it talks only to that datacenter's partitions
	Layout    *Layout
	Transport Transport
	Rand      *rand.Rand // seeded: coordinator choices and the like
	Params    protocol.Params
}

// ClientFactory builds one client session's library. It validates cfg.Params like a replica
// factory does.
type ClientFactory func(cfg ClientConfig) (Client, error)

// Client is one session's protocol library. It runs one transaction at a time.
type Client interface {
	// ReadTx reads keys from one snapshot (a ROT) and calls done once. Keys may repeat; every
	// position gets the same answer (cut isolation).
	ReadTx(id txn.ID, keys []string, done func(ReadResult))
	// WriteTx writes all of writes atomically (a WOT) and calls done once. Keys are distinct.
	WriteTx(id txn.ID, writes []txn.Write, done func(WriteResult))
}

// Mover is a Client whose session can change datacenter (fastccs-geo, spec G1). Move switches
// the session to datacenter dc and calls done once dc covers the session's causal past, so that
// its next transactions there see everything it has seen or written; until then it must not be
// given a transaction. If done reports an error the session stays where it was.
type Mover interface {
	Move(dc int, done func(error))
}

// Read is one key's answer in a ROT: its value and the transaction that wrote it (txn.None for
// the initial, empty version).
type Read struct {
	Key     string
	Value   []byte
	Version txn.ID
}

// ReadResult is a finished ROT.
type ReadResult struct {
	Reads []Read // in request order
	// Rounds is the number of client-server rounds the ROT took (a server-side commit check,
	// Eiger's third round, counts as one).
	Rounds int
	// CommitChecks counts Eiger's server-to-coordinator commit checks this ROT caused.
	CommitChecks int
	Err          error
}

// WriteResult is a finished WOT. Status is Unknown when the outcome could not be learned (a
// timeout); the checker then treats the writes as possibly visible.
type WriteResult struct {
	Status txn.Status
	Err    error
}

// GroupKeys groups the distinct keys of keys by the partition (of n) that owns them: the
// partitions in increasing order, and each one's keys in first-appearance order. A ROT listing a
// key twice reads it once (spec A20).
func GroupKeys(keys []string, n int) (parts []int, keysOf map[int][]string) {
	keysOf = map[int][]string{}
	for _, k := range keys {
		p := PartitionOf(k, n)
		if slices.Contains(keysOf[p], k) {
			continue
		}
		if len(keysOf[p]) == 0 {
			parts = append(parts, p)
		}
		keysOf[p] = append(keysOf[p], k)
	}
	slices.Sort(parts)
	return parts, keysOf
}

// SingleDC checks that nodes place the partitions of exactly one datacenter, for the protocols
// that run in one (why says what keeps them there), and returns the node of each partition.
func SingleDC(protocolName, why string, nodes []protocol.Node, dcs int) ([]protocol.NodeID, error) {
	if dcs != 1 {
		return nil, fmt.Errorf("%s: runs in one datacenter only (%s), got %d", protocolName, why, dcs)
	}
	l, err := NewLayout(nodes, 1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", protocolName, err)
	}
	return l.Node[0], nil
}

// Stamp places a version in its key's order in the protocols that order versions by a scalar
// time (Wren's commit time, ec's last-writer-wins timestamp): by time, ties broken by the
// writer's id, so that every replica orders a key's versions alike.
type Stamp struct {
	Time   int64
	Writer txn.ID
}

// Compare orders a before (-1), at (0) or after (+1) b.
func (a Stamp) Compare(b Stamp) int {
	if c := cmp.Compare(a.Time, b.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Writer, b.Writer)
}

// Visibility is one committed write-only transaction becoming visible at one of its participant
// partitions: from the moment the partition committed the transaction's versions locally until
// round-1 reads there could first return them (FastCCS: ct ≤ svc over the whole vector; Wren:
// ct ≤ LST). Times are the partition's clock (protocol.Env.NowUs), which every partition of a
// datacenter shares in the simulator.
type Visibility struct {
	Tx        txn.ID
	CommitUs  int64 // the local commit: the versions are installed with their final commit time
	VisibleUs int64 // the first moment a round-1 read here could return them
	// Participants and DecidedUs are set only in the coordinator's event: how many partitions
	// the transaction wrote, and when the coordinator decided to commit it. The transaction is
	// visible in the store once visible at all of them; its lag is the latest VisibleUs of its
	// participants' events minus DecidedUs.
	Participants int
	DecidedUs    int64
}

// LagUs is the partition's visibility lag, VisibleUs − CommitUs.
func (v Visibility) LagUs() int64 { return v.VisibleUs - v.CommitUs }

// VisibilityReporter is implemented by the replicas of protocols in which a committed version
// becomes visible to reads some time after its partition commits it (FastCCS, Wren): the
// driver drains their events to measure the visibility lag (spec §4.3). Protocols that make a
// version visible on commit (EC; Eiger, whose reads see a version as soon as the partition
// receives the commit) do not implement it: their lag is 0 by definition.
//
// A replica records nothing until the first DrainVisibility call, so that one no driver drains
// pays nothing, and holds at most MaxUndrainedVisibility undrained events: later ones are
// dropped, and counted, until the next drain. Recording never changes what the replica sends.
type VisibilityReporter interface {
	// DrainVisibility appends the events recorded since the previous call to dst, in the order
	// they became visible, forgets them, and returns dst with the number of events dropped
	// since the previous call. The first call turns recording on.
	DrainVisibility(dst []Visibility) (events []Visibility, dropped int)
}

// MaxUndrainedVisibility bounds the events a VisibilityReporter keeps between drains.
const MaxUndrainedVisibility = 1 << 16

// VisibilityLog is the bounded event buffer behind a VisibilityReporter.
type VisibilityLog struct {
	on      bool
	events  []Visibility
	dropped int
}

// On reports whether recording is on (a driver has drained once).
func (l *VisibilityLog) On() bool { return l.on }

// Record keeps v, or counts it as dropped when MaxUndrainedVisibility events wait already.
func (l *VisibilityLog) Record(v Visibility) {
	if !l.on {
		return
	}
	if len(l.events) >= MaxUndrainedVisibility {
		l.dropped++
		return
	}
	l.events = append(l.events, v)
}

// Drop counts an event the replica could not track (its own bound on waiting transactions).
func (l *VisibilityLog) Drop() { l.dropped++ }

// Drain implements VisibilityReporter.DrainVisibility.
func (l *VisibilityLog) Drain(dst []Visibility) ([]Visibility, int) {
	l.on = true
	dst = append(dst, l.events...)
	dropped := l.dropped
	clear(l.events)
	l.events, l.dropped = l.events[:0], 0
	return dst, dropped
}
