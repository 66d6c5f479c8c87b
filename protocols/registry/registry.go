// Package registry maps protocol names to their implementations: the one place where the CLI,
// the benchmarks and the servers look up a protocol by name. Every protocol package registers
// its protocols with Register from an init function (the database/sql driver pattern);
// protocols/all imports every one of them, and the binaries import protocols/all.
//
// An Entry also carries the protocol's facts that other packages need, so that nothing outside
// the protocol switches on its name: which client interface it serves (Family), which
// consistency it promises (Consistency), whether a committed write is visible at once, how many
// datacenter outages it tolerates.
package registry

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/topology"
)

// Family is the client interface a protocol serves. A workload runs on the protocols of its
// family, and a driver deploys a protocol by its family: one full replica per datacenter, or a
// store split into partitions in every datacenter.
type Family string

// The families.
const (
	// ReadWrite protocols serve interactive read-write transactions (client.Session: Begin,
	// Get, Put, Commit) at one full replica per datacenter: Helios, Message Futures and the
	// baselines.
	ReadWrite Family = "read-write"
	// Causal protocols serve read-only and write-only transactions through their own client
	// library (Entry.NewClient) on a store split into partitions in every datacenter: FastCCS,
	// Eiger, Wren and eventual consistency.
	Causal Family = "causal"
	// PartitionedReadWrite protocols serve interactive read-write transactions and snapshot
	// read-only transactions through their own client library (Entry.NewPartitionedClient) on
	// a store split into partitions, each replicated on a few servers placed over the
	// datacenters (partitioned.Placement): S-DUR.
	PartitionedReadWrite Family = "partitioned-read-write"
	// Log protocols are shared logs (FLStore, Chariots: spec chariots-flstore.md): a pipeline of
	// stage machines placed by the protocol's own layout (Entry.Nodes), serving appends, reads,
	// tag lookups and the head of the log as protocol.Operation requests through their own
	// client library (flstore.Client), with replies that may come from a node other than the one
	// the request went to (Entry.RepliesElsewhere). No transactional workload, swarm or checker
	// runs them: `meridian bench --workload log` and the log family's tests (protocols/log) do.
	Log Family = "log"
	// Pipeline protocols are not stores: their nodes run a computation of their own over the
	// network, in a driver of their own (Entry.Serve) rather than the server's event loop, which
	// `meridian serve` runs for them: COP's global-scale training pipeline (cop-geo: four
	// collection sites ship planned batches to a central site, which trains). `meridian cluster
	// up` places them (Entry.Nodes, Entry.Roles) and `cluster status` shows each node's /status.
	// No workload, swarm or checker runs them.
	Pipeline Family = "pipeline"
)

// Partitioned reports whether the family's protocols split the key space over several nodes
// per datacenter.
func (f Family) Partitioned() bool { return f == Causal }

// Consistency is what a protocol promises, and so what the checker holds its runs to.
type Consistency string

// The consistency levels.
const (
	// Serializable runs must have an acyclic dependency graph and convergent replicas.
	Serializable Consistency = "serializable"
	// TransactionalCausal runs must satisfy causal consistency with atomic snapshots (the
	// checker's oracles C1–C6).
	TransactionalCausal Consistency = "causal"
	// Eventual runs promise only eventual consistency (the ec baseline): the checker holds them
	// to the causal oracles, and its causal findings (C2, C3) are expected, not failures.
	Eventual Consistency = "eventual"
)

// Entry describes one registered protocol.
type Entry struct {
	Name        string
	Description string
	New         protocol.Factory
	// Codec encodes the protocol's peer messages for the network runtime.
	Codec protocol.Codec
	// Family is the client interface the protocol serves.
	Family Family
	// Consistency is what the protocol promises; empty means Serializable for the ReadWrite
	// family and TransactionalCausal for the Causal family.
	Consistency Consistency
	// NewClient is the client library of a Causal protocol, which runs part of the protocol.
	NewClient tcc.ClientFactory
	// NewPartitionedClient is the client library of a PartitionedReadWrite protocol: it routes
	// reads to the nearest replica of each partition and the commit to the right server.
	NewPartitionedClient partitioned.ClientFactory
	// MaxReadRounds bounds the rounds a read-only transaction of a Causal protocol may take
	// (the FastCCS thesis's Table 2.1: 2 for FastCCS and Wren, 3 for Eiger, 1 for ec); the
	// checker enforces it (oracle C5).
	MaxReadRounds int
	// VisibleOnCommit is set for the Causal protocols whose partitions make a version visible
	// to reads as they commit it (ec installs a write at once; Eiger's reads see a version as
	// soon as its partition receives the commit): their visibility lag is 0 by definition.
	VisibleOnCommit bool
	// SerializableSnapshotsPerDC is set for the ReadWrite protocols whose ReadSnapshot answers
	// are read-only transactions serializable with the read-write history and the other
	// snapshots of their datacenter (Ogre's RoT-Storage): workloads may run them, and the
	// checker checks them one datacenter at a time (checker.Options.SnapshotsPerDC). Elsewhere a
	// snapshot is consistent within its replica only, and is not checked.
	SerializableSnapshotsPerDC bool
	// ReadOnlyCommitsAreSnapshots, if set, reports whether with parameters p a read-only
	// transaction committed through Commit was served from its replica's snapshot without being
	// ordered (ALVIN's EUS reads, reads=eus): the driver records such transactions as snapshots,
	// checked one datacenter at a time with SerializableSnapshotsPerDC.
	ReadOnlyCommitsAreSnapshots func(p protocol.Params) bool
	// Nodes, if set, places a ReadWrite protocol that runs more nodes than one replica per
	// datacenter with parameters p on dcs datacenters (nil nodes, or Nodes unset: one replica per
	// datacenter). The node of partition 0 of each datacenter is its replica and serves the
	// read-write clients; the nodes of higher partitions serve the datacenter's read-only
	// clients (a workload's extra clients), round robin: Ogre's RoT units (rot_units). A Log
	// protocol must set it: its stage machines in layout order, each node's Partition its index
	// within its datacenter.
	Nodes func(p protocol.Params, dcs int) ([]protocol.Node, error)
	// Roles, if set, names what each node Nodes places does ("maintainer0", "batcher0", …, per
	// datacenter), for the node names `meridian cluster up` writes (DC-ROLE).
	Roles func(p protocol.Params, dcs int) ([]string, error)
	// Serve runs one node of a Pipeline protocol as a real process until ctx ends (the
	// protocol's own driver: sockets, clocks and goroutines around its sans-IO state
	// machines); only Pipeline protocols set it, and they must.
	Serve func(ctx context.Context, node ServeConfig) error
	// DeployParams are parameters `meridian cluster up` gives the protocol unless --set gives
	// them: what a real deployment runs with where the simulator's default differs (Ogre: one
	// RoT unit node per datacenter, rot_units=1).
	DeployParams protocol.Params
	// ToleratesOutages is how many datacenter outages the protocol keeps committing through
	// (Helios-1: 1, Helios-2: 2); 0 for the others.
	ToleratesOutages int
	// RepliesElsewhere is set for the protocols where a node may answer a request another node
	// took (a Chariots maintainer answers the append a batcher took): a real node relays a
	// reply it has no waiting request for to the node that allocated the client's id, where the
	// client library sends such requests (see server.Node).
	RepliesElsewhere bool
	// SpansDatacenters is set for the Causal protocols that keep a partitioned replica in every
	// datacenter and replicate between them (fastccs-geo); the others of the family serve one
	// datacenter, as in the FastCCS thesis. The swarms draw several datacenters for them.
	SpansDatacenters bool
	// RandomParams draws valid random parameters for property tests (the swarms), from r, for
	// a run on topo: the protocol knows which of its parameters (timers, grace times, commit
	// latencies, timeouts) matter and which values are valid. intervalMs is a log-propagation
	// period the caller drew from [1, 20] ms for the protocols that have one; topo is nil for the
	// Causal family's one-datacenter runs. nil: the defaults.
	RandomParams func(r *rand.Rand, topo *topology.Topology, intervalMs int) protocol.Params
}

// Promises returns the consistency the protocol promises, with the family's default filled in.
func (e Entry) Promises() Consistency {
	switch {
	case e.Consistency != "":
		return e.Consistency
	case e.Family == Causal:
		return TransactionalCausal
	}
	return Serializable
}

var entries = map[string]Entry{}

// Register adds a protocol under name; a protocol package calls it from its init function. It
// panics if the name is taken, the entry has no factory or no family, or a Causal or
// PartitionedReadWrite entry has no client library of its kind.
func Register(name string, e Entry) {
	_, taken := entries[name]
	switch {
	case taken || e.New == nil || name == "":
		panic("registry: cannot register protocol " + strconv.Quote(name))
	case e.Family != ReadWrite && e.Family != Causal && e.Family != PartitionedReadWrite && e.Family != Log && e.Family != Pipeline:
		panic(fmt.Sprintf("registry: protocol %q has no family", name))
	case (e.Family == Causal) != (e.NewClient != nil):
		panic(fmt.Sprintf("registry: protocol %q: exactly the causal protocols have a client library", name))
	case (e.Family == PartitionedReadWrite) != (e.NewPartitionedClient != nil):
		panic(fmt.Sprintf("registry: protocol %q: exactly the partitioned read-write protocols have a partitioned client library", name))
	case e.Family == Log && e.Nodes == nil:
		panic(fmt.Sprintf("registry: log protocol %q places no nodes (Entry.Nodes)", name))
	case (e.Family == Pipeline) != (e.Serve != nil) || e.Family == Pipeline && (e.Nodes == nil || e.Roles == nil):
		panic(fmt.Sprintf("registry: protocol %q: exactly the pipelines have Serve, and they place and name their nodes (Nodes, Roles)", name))
	}
	entries[name] = e
}

// Transactional reports whether the family serves transactions: every family but Log and
// Pipeline. The transactional tools (swarms, `bench` workloads other than log, the checker) run
// only these.
func (f Family) Transactional() bool { return f != Log && f != Pipeline }

// ServesOperations reports whether a real node of e takes protocol.Operation requests (the
// Operate RPC, encoded by e.Codec): the protocols with a client library of their own.
func (e Entry) ServesOperations() bool {
	return e.NewClient != nil || e.NewPartitionedClient != nil || e.Family == Log
}

// Lookup returns the protocol called name.
func Lookup(name string) (Entry, error) {
	e, ok := entries[name]
	if !ok {
		return Entry{}, fmt.Errorf("unknown protocol %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	e.Name = name
	return e, nil
}

// Names lists every registered protocol, sorted.
func Names() []string {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ServeConfig is what a Pipeline node's Serve gets from `meridian serve`: its place in the
// deployment, where every node listens, its own directory, and where to log and report.
type ServeConfig struct {
	// Config is the node's protocol configuration: its node id, every node's placement, the
	// topology and the parameters.
	Config protocol.Config
	// PeerAddrs is every node's peer address (host:port), by node id.
	PeerAddrs []string
	// DataDir is the node's own directory (created before Serve is called).
	DataDir string
	// Log receives the node's progress lines.
	Log io.Writer
	// Report replaces the node's one-line status, which its /status endpoint answers (and
	// `meridian cluster status` shows). Safe to call from any goroutine.
	Report func(status string)
}
