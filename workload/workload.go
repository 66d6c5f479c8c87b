// Package workload holds Meridian's benchmark workloads and the contract they meet (Workload):
// T-YCSB (TYCSB), the read-write workload of the Message Futures and Helios experiments, and
// the FastCCS thesis's read-only/write-only workload on a partitioned store (TCC).
//
// It exists so that every protocol, client and experiment draws the same, reproducible workload:
// nothing here keeps global state or uses the global random source. Each draw takes the caller's
// *rand.Rand, so a run is a pure function of its seeds, and the generators are immutable after
// construction, so concurrent clients may share one as long as each has its own *rand.Rand.
package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/verify/history"
)

// Workload is the contract between a benchmark workload and the one run path of tools/bench,
// as registry.Entry is between a protocol and its drivers. A workload supplies its clients'
// driver (what each closed-loop client runs next), its own figures (Metrics) and its end-of-run
// checks (final reads at quiescence, invariants of its own such as values naming their
// writers); bench supplies everything else: deployment in the simulator or against a cluster,
// clients' pacing, per-datacenter latency and throughput, the history and the checker. Bench
// runs a workload on every protocol of its Family.
//
// A Workload value is its configuration: TYCSB and TCC implement it, by value, so that copying
// bench.Options copies the workload too.
type Workload interface {
	// Name is the workload's name on the command line and in results ("tycsb", "tcc").
	Name() string
	// Family is the client interface its transactions need.
	Family() registry.Family
	// Validate reports the first invalid setting.
	Validate() error
	// ClientStream is the PCG stream (with the run's seed) of the pseudo-random numbers client
	// id draws: its transactions and its pacing. Each workload keeps the stream its earlier
	// releases used, so that runs stay byte-identical across releases.
	ClientStream(id txn.ClientID) uint64
	// ExtraClientsPerDC is how many clients the workload runs in every datacenter besides the
	// run's ClientsPerDC (T-YCSB's read-only clients); they get the indexes after those.
	ExtraClientsPerDC() int
	// NewRun returns the client side of one run.
	NewRun(info RunInfo) (Run, error)
}

// RunInfo is what a workload learns about the run it drives.
type RunInfo struct {
	Protocol registry.Entry
	Topology *topology.Topology
	// Layout says which node serves partition p of datacenter d (one partition per datacenter
	// for the ReadWrite family).
	Layout *tcc.Layout
	// Placement says where the replicas of every partition run, for the PartitionedReadWrite
	// family (nil for the others; Layout is nil then).
	Placement *partitioned.Placement
	Seed      uint64
	// Params are the protocol's parameters, which configure client libraries too.
	Params protocol.Params
	// ClientsPerDC is the run's number of (main) clients per datacenter, before the extra ones.
	ClientsPerDC int
	// WindowUs is the measurement window [start, end) in run time: a transaction is measured
	// if it starts at or after WindowUs[0] and ends at or before WindowUs[1].
	WindowUs [2]int64
	// Record receives every finished transaction for the run's history; it is safe for
	// concurrent use.
	Record func(history.Txn)
}

// Measured reports whether a transaction that ran from startUs to endUs is measured.
func (i RunInfo) Measured(startUs, endUs int64) bool {
	return startUs >= i.WindowUs[0] && endUs <= i.WindowUs[1]
}

// Conn is one client's connection, on the run's clock. Its callbacks run one at a time on the
// connection's loop; the driver gives each family the transport it needs: a client.Transport
// for the ReadWrite family (the client's datacenter's replica), a tcc.Transport for the Causal
// family (every partition of the client's datacenter).
type Conn interface {
	// NowUs reads the client's clock: microseconds since the run began.
	NowUs() int64
	// After runs fn on the connection's loop after delayUs microseconds.
	After(delayUs int64, fn func())
}

// ClientInfo names one client of a run.
type ClientInfo struct {
	ID    txn.ClientID
	DC    int    // index of the client's datacenter in the topology
	Index int    // the client's number in its datacenter, from 0 (extra clients come last)
	Name  string // e.g. "V/3": the datacenter and the client's number there
	Conn  Conn
}

// Run is the client side of one run. NewClient is called before the run starts, Tick and
// Final from the driver's goroutine (in the simulator while no client callback runs; on a real
// cluster Tick runs beside the clients), Metrics once everything is over. Clients of different
// connections may run concurrently against a real cluster, so a Run's shared state must be
// safe for that.
type Run interface {
	// NewClient returns the driver of client c.
	NewClient(c ClientInfo) (Client, error)
	// Tick lets the workload read replica-side figures about once per second of the run (and
	// every 100 ms at quiescence in the simulator); nowUs is the run's time. In the simulator
	// replicas are the replicas themselves, in node order; on a real cluster they are
	// stand-ins carrying what the nodes report (tcc.VisibilityReporter events, on the run's
	// clock), one per node that answered.
	Tick(replicas []protocol.Replica, nowUs int64)
	// Final runs the workload's checks at quiescence, after the clients stopped and the
	// replicas converged, and returns the ids of the transactions the checker must hold to
	// seeing the final state (oracle C6); nil if the workload runs none.
	Final(s Settler) ([]txn.ID, error)
	// Metrics returns the workload's own figures, once the run is over.
	Metrics() Metrics
}

// Client is one closed-loop client's driver.
type Client interface {
	// Next starts the client's next transaction, drawing from rng, and calls done with its
	// outcome on the connection's loop.
	Next(rng *rand.Rand, done func(Outcome))
	// Retry re-runs the client's last transaction, which aborted: the same operations on the
	// same keys, as a new attempt (bench --retry); it calls done like Next. An interactive
	// workload (TPC-C, Bank) re-runs the same input from fresh reads, whose keys may differ.
	Retry(done func(Outcome))
	// Abandon is called at the end of the run, at time nowUs, if the client's last
	// transaction never finished: a workload that must account for it (a write that may have
	// been applied) records it.
	Abandon(nowUs int64)
}

// Outcome is what a client's transaction came to.
type Outcome struct {
	// Status is Committed, Aborted, or Unknown when the client lost the answer; an unknown
	// outcome counts neither as committed nor as aborted.
	Status txn.Status
	// Reason says why an aborted transaction aborted.
	Reason txn.AbortReason
	// LatencyUs is the latency the per-datacenter figures measure: the commit request's round
	// trip for T-YCSB (Chapters 3 and 4), the whole transaction for the TCC workload.
	LatencyUs int64
	// Ops is the number of operations of the transaction, for operations per second.
	Ops int
	// Err is set when a request failed (an unreachable node): the client pauses before it
	// starts its next transaction.
	Err error
	// OwnMetrics marks a transaction the workload measures itself (T-YCSB's read-only
	// transactions): the run's per-datacenter figures leave it out.
	OwnMetrics bool
}

// Settler is what a driver offers a workload at quiescence (Run.Final): fresh clients, and a
// way to wait for them.
type Settler interface {
	// Connect returns a new client of datacenter dc whose home node is home.
	Connect(dc int, home protocol.NodeID, name string) (ClientInfo, error)
	// Await runs start on c's loop and waits until start's transaction calls done (advancing
	// virtual time in the simulator), or a timeout passes.
	Await(c ClientInfo, start func(done func(error))) error
}

// Metrics are a workload's own figures in a run's result: bench writes them as the run's
// "workload_metrics" in JSON.
type Metrics interface {
	// Violations lists the workload's own invariant violations (for example a read whose
	// value is not what its version's writer wrote); empty if there are none. Any violation
	// makes the run fail, whatever the protocol's consistency.
	Violations() []string
}

// defaults lists every workload with its default settings: the one list a new workload joins.
var defaults = []Workload{DefaultTYCSB(), DefaultTCC(), DefaultMicro(), DefaultSocial(), DefaultTPCC(), DefaultBank()}

// Names lists the workloads' names.
func Names() []string {
	names := make([]string, len(defaults))
	for i, w := range defaults {
		names[i] = w.Name()
	}
	return names
}

// Lookup returns the workload called name, with its default settings.
func Lookup(name string) (Workload, error) {
	for _, w := range defaults {
		if w.Name() == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(Names(), ", "))
}

// ForFamily returns the workload the protocols of family f run by default, with its default
// settings.
func ForFamily(f registry.Family) (Workload, error) {
	for _, w := range defaults {
		if w.Family() == f {
			return w, nil
		}
	}
	return nil, fmt.Errorf("no workload runs %s protocols", f)
}
