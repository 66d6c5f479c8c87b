// Package flstore is FLStore, the Fractal Log Store (seed 000 chapter 7, spec
// chariots-flstore.md §3): one datacenter's shared log spread over log maintainers that own
// deterministic, round-robin ranges of positions under an epoch journal, with post-assigned
// positions (no sequencer), a head of the log that never exposes a gap (both the exact rule and
// the source's rule), indexers for tags, and explicit order requests (MinLId).
//
// # The log family
//
// A shared log is a different shape from Meridian's transaction protocols: not one replica per
// datacenter or per partition serving Get and Commit, but a pipeline of stage machines
// (maintainers, indexers, and in Chariots batchers, filters, queues, senders and receivers),
// each role scaled out on its own. We keep the sans-IO contract unchanged: every stage is a
// protocol.Replica driven through protocol.Env (time, timers, sends, replies), and a node's role
// comes from a Layout that every node computes from the run's parameters ("maintainers=3",
// "spare_queues=1", ...; roles placed in a fixed order inside each datacenter). So the
// simulator runs a deployment unchanged (sim.Config{Nodes: layout.Nodes, Factory: Factory}),
// and so will the network server. Clients speak protocol.Operation requests whose Op is one of
// this package's operations (AppendOp, HLQuery, ReadOp, LookupOp). A maintainer's records live
// on its Disk (protocol.Disk: the node's Pebble on a real server, written with the input that
// brought them; in memory in the simulator), not in protocol/store, whose versions are
// transactions', nor in its memory or checkpoints, which hold its metadata only.
//
// The two protocols, `flstore` (this package: one datacenter, standalone appends) and
// `chariots` (package chariots: the geo-replicated pipeline, whose maintainers are this
// package's maintainers in Chariots mode), are registered in protocols/registry as the Log
// family (register.go), which the transactional tools (swarms, checker, transactional
// workloads) skip: the simulator side is protocols/log/logsim, and real nodes (server/, `cluster
// up`) run the stages from the entry's Nodes, the Operate RPC carrying the operations.
//
// Choices where the spec leaves room: a standalone client sends each append to one maintainer
// over the driver's request channel, which delivers requests (the simulator defers, never drops,
// them), so standalone appends need no deduplication; the no-op fill of idle maintainers (A6)
// is on by default after 50 ms of lagging by more than a range.
package flstore

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
)

// DefaultB is the range size (records per range; the paper's example, spec 5.11).
const DefaultB = 1000

// Roles are the roles of a standalone FLStore deployment.
var Roles = []Role{Maintainer, Indexer}

// standaloneCounts are the active nodes of each role of a standalone deployment by default.
var standaloneCounts = map[Role]int{Maintainer: 3, Indexer: 1}

// params are the standalone protocol's parameters besides the layout's.
var params = []string{"b", "hl", "gossip", "noop_after"}

// ParseHLRule reads the "hl" parameter: exact (default) or source.
func ParseHLRule(p protocol.Params) (HLRule, error) {
	switch p["hl"] {
	case "", "exact":
		return Exact, nil
	case "source":
		return SourceRule, nil
	}
	return 0, fmt.Errorf("flstore: parameter hl: %q is neither exact nor source", p["hl"])
}

// Factory builds one node of a standalone FLStore deployment: one datacenter (the first), with
// "maintainers" (default 3) and "indexers" (default 1), range size "b" (default 1000), head of
// log rule "hl", gossip period "gossip" (default 1ms) and no-op fill delay "noop_after"
// (default 50ms, 0: off).
func Factory(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
	p := cfg.Params
	if err := p.CheckKnown(append(LayoutParams(Roles), params...), nil); err != nil {
		return nil, err
	}
	l, err := LayoutFromParams(1, Roles, p, standaloneCounts)
	if err != nil {
		return nil, err
	}
	if err := l.Check(cfg.Nodes); err != nil {
		return nil, err
	}
	mc, err := MaintainerConfigFromParams(p, l, cfg.Self, false)
	if err != nil {
		return nil, err
	}
	if mc.NoOpAfterUs, err = p.Duration("noop_after", 50_000); err != nil {
		return nil, err
	}
	if l.Role[cfg.Self] == Indexer {
		return NewIndexer(env), nil
	}
	return NewMaintainer(mc, env), nil
}

// MaintainerConfigFromParams builds the configuration of maintainer self of layout l from the
// parameters both protocols share: "b", "hl" and "gossip".
func MaintainerConfigFromParams(p protocol.Params, l *Layout, self protocol.NodeID, chariots bool) (MaintainerConfig, error) {
	dc := l.Nodes[self].DC
	b, err := p.Int("b", DefaultB)
	if err != nil || b < 1 {
		return MaintainerConfig{}, fmt.Errorf("flstore: parameter b must be a positive integer")
	}
	rule, err := ParseHLRule(p)
	if err != nil {
		return MaintainerConfig{}, err
	}
	gossipUs, err := p.Duration("gossip", 1000)
	if err != nil || gossipUs <= 0 {
		return MaintainerConfig{}, fmt.Errorf("flstore: parameter gossip must be a positive duration")
	}
	return MaintainerConfig{Self: self, DC: dc, Journal: Journal{{StartLId: 1, Maintainers: l.Active(dc, Maintainer), B: uint64(b)}},
		Peers: l.All(dc, Maintainer), Indexers: l.Active(dc, Indexer), Rule: rule, Chariots: chariots, GossipUs: gossipUs}, nil
}
