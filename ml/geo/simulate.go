package geo

import (
	"fmt"

	"github.com/meridian-kv/meridian/ml/dataset"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// SimConfig is one simulated run of the pipeline on Fig. 6.1's topology.
type SimConfig struct {
	// Shares are the sources' samples (Shares splits a dataset).
	Shares       []*dataset.Dataset
	BatchSamples int
	// CollectUs and ResendUs are every source's (SourceConfig).
	CollectUs, ResendUs int64
	Seed                uint64
	// Chaos perturbs the WAN: lost, duplicated and reordered shipments.
	Chaos sim.Chaos
	// Faults are scheduled on the topology's datacenters and nodes (the centre is node 0).
	Faults []sim.Fault
	// RestartCentreUs, if positive, restarts the central site at that time: it recovers from
	// its admission log and loses what waited for its turn (Centre.Restart).
	RestartCentreUs int64
	// LimitUs ends a run that has not completed (0: 10 virtual minutes).
	LimitUs int64
}

// SimResult is a simulated run's outcome.
type SimResult struct {
	Centre *Centre
	// CompletedUs is when the centre admitted the last batch (virtual time).
	CompletedUs int64
	Stats       sim.Stats
}

// Simulate runs the pipeline in the simulator until the centre has admitted every batch and
// every source has its acknowledgements, or until the limit (an error).
func Simulate(cfg SimConfig) (*SimResult, error) {
	if len(cfg.Shares) == 0 || len(cfg.Shares) >= len(Topology().DCs) {
		return nil, fmt.Errorf("geo: %d sources on a topology of %d datacenters", len(cfg.Shares), len(Topology().DCs))
	}
	topo := topologyFor(len(cfg.Shares))
	var nodes []protocol.Node
	for dc := range topo.DCs {
		nodes = append(nodes, protocol.Node{ID: protocol.NodeID(dc), DC: dc})
	}
	factory := func(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
		if pc.Self == CentreNode {
			return NewCentre(CentreConfig{Sources: len(cfg.Shares)}, env)
		}
		s := int(pc.Self) - 1
		return NewSource(SourceConfig{Index: s, Share: cfg.Shares[s], BatchSamples: cfg.BatchSamples,
			CollectUs: cfg.CollectUs, ResendUs: cfg.ResendUs}, env)
	}
	s, err := sim.New(sim.Config{Topology: topo, Nodes: nodes, Factory: factory, Seed: cfg.Seed, Chaos: cfg.Chaos, Faults: cfg.Faults})
	if err != nil {
		return nil, err
	}
	centre := s.Replica(CentreNode).(*Centre)
	var restartErr error
	if cfg.RestartCentreUs > 0 {
		s.After(0, cfg.RestartCentreUs, func() { restartErr = centre.Restart() })
	}
	limit := cfg.LimitUs
	if limit <= 0 {
		limit = 600_000_000
	}
	done := func() bool {
		for i := range cfg.Shares {
			if !s.Replica(SourceNode(i)).(*Source).Done() {
				return false
			}
		}
		return centre.Complete()
	}
	const stepUs = 10_000
	for !done() {
		if s.NowUs() >= limit {
			return nil, fmt.Errorf("geo: not complete after %d virtual ms (%d batches admitted)", limit/1000, len(centre.Admitted()))
		}
		s.RunUntil(s.NowUs() + stepUs)
	}
	for i := range cfg.Shares {
		if err := s.Replica(SourceNode(i)).(*Source).Err(); err != nil {
			return nil, err
		}
	}
	if restartErr != nil {
		return nil, restartErr
	}
	return &SimResult{Centre: centre, CompletedUs: centre.CompletedUs, Stats: s.Stats()}, nil
}

// topologyFor returns the centre and the first n collection sites of Topology.
func topologyFor(n int) *topology.Topology {
	t := Topology()
	t.DCs = t.DCs[:n+1]
	for _, m := range []*[][]float64{&t.RTTMs, &t.StdDevMs} {
		*m = (*m)[:n+1]
		for i := range *m {
			(*m)[i] = (*m)[i][:n+1]
		}
	}
	return t
}
