// Package partitioned is the shared vocabulary of Meridian's partitioned, replicated,
// serializable protocols (S-DUR, spec sdur.md): the key space is split into P partitions, each
// replicated on R servers placed over the topology's datacenters, and interactive read-write
// transactions read from the nearest replica of each partition they touch and commit at the
// servers of those partitions.
//
// It is the third deployment shape of Meridian, beside one full replica per datacenter (the
// ReadWrite family) and partitions repeated in every datacenter (the Causal family, package tcc):
// a Placement says which node replicates which partition where, and which replica of a partition
// is its preferred server. A protocol of this family is two sans-IO halves, like the Causal
// family's: server replicas (protocol.Replica, built by the registry's factory, one per node of
// the placement) and a client library (Client, built by a ClientFactory) that routes each read to
// the nearest replica of the key's partition and the commit to the right server.
package partitioned

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/topology"
)

// PartitionOf maps key to one of n partitions. A key of the form "p<i>/<rest>" belongs to
// partition i mod n, so that workloads place keys deliberately (the spec's range partitioning,
// where a transaction is local or global by construction); any other key is hashed like the
// Causal family's keys (tcc.PartitionOf).
func PartitionOf(key string, n int) int {
	if rest, ok := strings.CutPrefix(key, "p"); ok {
		if num, _, ok := strings.Cut(rest, "/"); ok {
			if i, err := strconv.Atoi(num); err == nil && i >= 0 {
				return i % n
			}
		}
	}
	return tcc.PartitionOf(key, n)
}

// Key returns the key named rest in partition p: "p<p>/<rest>".
func Key(p int, rest string) string { return "p" + strconv.Itoa(p) + "/" + rest }

// Placement is where the replicas of every partition run: Node[p][r] is replica r of partition
// p, and replica 0 is the partition's preferred server (its Paxos leader at start, the server its
// home clients commit at). DC[n] is node n's datacenter.
type Placement struct {
	Node [][]protocol.NodeID
	DC   []int
}

// Partitions is P.
func (pl *Placement) Partitions() int { return len(pl.Node) }

// Preferred is partition p's preferred server.
func (pl *Placement) Preferred(p int) protocol.NodeID { return pl.Node[p][0] }

// Nearest returns the replica of partition p nearest to datacenter dc by the topology's RTTs:
// one in dc itself first, the preferred server among equals.
func (pl *Placement) Nearest(topo *topology.Topology, p, dc int) protocol.NodeID {
	best := pl.Node[p][0]
	for _, n := range pl.Node[p][1:] {
		if topo.RTTMs[dc][pl.DC[n]] < topo.RTTMs[dc][pl.DC[best]] {
			best = n
		}
	}
	return best
}

// HomePartition is the partition whose preferred server is nearest to datacenter dc (ties: the
// lowest partition): the partition a client of dc treats as home, where it commits.
func (pl *Placement) HomePartition(topo *topology.Topology, dc int) int {
	home := 0
	for p := range pl.Node {
		if topo.RTTMs[dc][pl.DC[pl.Preferred(p)]] < topo.RTTMs[dc][pl.DC[pl.Preferred(home)]] {
			home = p
		}
	}
	return home
}

// Nodes lists the placement as protocol nodes (node n serves partition Partition in DC).
func (pl *Placement) Nodes() []protocol.Node {
	nodes := make([]protocol.Node, len(pl.DC))
	for p, reps := range pl.Node {
		for _, n := range reps {
			nodes[n] = protocol.Node{ID: n, DC: pl.DC[n], Partition: p}
		}
	}
	return nodes
}

// NewPlacement reads a placement back from nodes: every partition 0..P-1 must have the same
// number R ≥ 1 of replicas; each partition's replicas keep the order of their node ids, so the
// lowest id is the preferred server.
func NewPlacement(nodes []protocol.Node, dcs int) (*Placement, error) {
	if len(nodes) == 0 {
		return nil, errors.New("partitioned: no nodes")
	}
	pl := &Placement{DC: make([]int, len(nodes))}
	for i, nd := range nodes {
		if nd.ID != protocol.NodeID(i) || nd.DC < 0 || nd.DC >= dcs || nd.Partition < 0 || nd.Partition >= len(nodes) {
			return nil, fmt.Errorf("partitioned: node %d has a malformed placement (id %d, datacenter %d, partition %d)", i, nd.ID, nd.DC, nd.Partition)
		}
		for len(pl.Node) <= nd.Partition {
			pl.Node = append(pl.Node, nil)
		}
		pl.Node[nd.Partition] = append(pl.Node[nd.Partition], nd.ID)
		pl.DC[i] = nd.DC
	}
	for p, reps := range pl.Node {
		if len(reps) == 0 || len(reps) != len(pl.Node[0]) {
			return nil, fmt.Errorf("partitioned: partition %d has %d replicas, partition 0 has %d; every partition needs the same non-zero number", p, len(reps), len(pl.Node[0]))
		}
	}
	return pl, nil
}

// Spread places P partitions of R replicas each over the topology's datacenters, round robin:
// replica r of partition p runs in datacenter (p + r) mod DCs, so every partition's preferred
// server is in a different datacenter (while there are enough) and its other replicas follow in
// topology order. Node ids run partition by partition. It is the generic P × R form over any
// topology; presets with the spec's placements build theirs by hand.
func Spread(topo *topology.Topology, partitions, replicas int) (*Placement, error) {
	if partitions < 1 || replicas < 1 {
		return nil, fmt.Errorf("partitioned: need at least one partition and one replica, got %d × %d", partitions, replicas)
	}
	pl := &Placement{}
	for p := range partitions {
		var reps []protocol.NodeID
		for r := range replicas {
			reps = append(reps, protocol.NodeID(len(pl.DC)))
			pl.DC = append(pl.DC, (p+r)%topo.N())
		}
		pl.Node = append(pl.Node, reps)
	}
	return pl, nil
}

// Transport carries a client library's requests to any node: sim.Conn implements it. It is the
// Causal family's transport; the two families route differently over the same calls.
type Transport = tcc.Transport

// ClientConfig is what a client library is built from.
type ClientConfig struct {
	ID        txn.ClientID
	DC        int // the client's datacenter: reads go to the replicas nearest to it
	Topology  *topology.Topology
	Placement *Placement
	Transport Transport
	Rand      *rand.Rand
	Params    protocol.Params
}

// ClientFactory builds one client session's library. It validates cfg.Params like a replica
// factory does.
type ClientFactory func(cfg ClientConfig) (Client, error)

// Client is one session's protocol library: it runs one interactive transaction at a time.
// Every callback runs once, on the client's event loop.
type Client interface {
	// Begin starts transaction id; a read-only one reads a consistent snapshot and never
	// aborts. done reports a failure to begin (an unreachable server).
	Begin(id txn.ID, readOnly bool, done func(error))
	// Read reads key in the current transaction: its own write if it wrote key, else the
	// version of the transaction's snapshot of key's partition.
	Read(key string, done func(value []byte, version txn.ID, err error))
	// Write buffers a write of key; the library reads key first if the transaction has not
	// (S-DUR admits no blind writes), and calls done then.
	Write(key string, value []byte, done func(error))
	// Commit ends the transaction and reports its outcome: Committed or Aborted with a reason,
	// or Unknown with an error when the answer was lost. A read-only transaction commits at
	// once.
	Commit(done func(status txn.Status, reason txn.AbortReason, err error))
	// Reads returns the versions the current transaction read, in read order (for the history).
	Reads() []txn.Read
}

// presetPlacements are the spec's placements (sdur.md §4.1, B12) of two partitions × three
// replicas on the sdur-wan1 and sdur-wan2 topologies, by datacenter name, preferred server first.
// WAN 1: each partition's majority in its home region, in two zones, and the third replica in
// the other partition's home region; WAN 2: one replica of each partition per region.
var presetPlacements = map[string][][]string{
	"sdur-wan1": {{"eu-1", "eu-2", "use-1"}, {"use-1", "use-2", "eu-1"}},
	"sdur-wan2": {{"eu", "use", "usw"}, {"use", "eu", "usw"}},
}

// PlacementFor is the placement of P partitions × R replicas on topo: the spec's on the
// sdur-wan1 and sdur-wan2 presets with 2 × 3, else Spread.
func PlacementFor(topo *topology.Topology, partitions, replicas int) (*Placement, error) {
	spec, ok := presetPlacements[topo.Name]
	if !ok || partitions != len(spec) || replicas != len(spec[0]) {
		return Spread(topo, partitions, replicas)
	}
	pl := &Placement{}
	for _, dcs := range spec {
		var reps []protocol.NodeID
		for _, name := range dcs {
			dc, ok := topo.Index(name)
			if !ok {
				return nil, fmt.Errorf("partitioned: topology %s has no datacenter %s", topo.Name, name)
			}
			reps = append(reps, protocol.NodeID(len(pl.DC)))
			pl.DC = append(pl.DC, dc)
		}
		pl.Node = append(pl.Node, reps)
	}
	return pl, nil
}
