package topology

import (
	"fmt"
	"strconv"
)

// IntraSiteRTTMs is the round trip between two nodes of one site in PerSite's topologies: the
// ALVIN spec's 0.5 ms (alvin.md §7.1).
const IntraSiteRTTMs = 0.5

// PerSite returns t with each of its datacenters (sites) split into nodes datacenters that
// share the site's RTTs (and standard deviations) to every other site and lie IntraSiteRTTMs
// apart, without jitter, from each other. It is how a full-replication protocol, which runs one
// replica per datacenter, runs several full replicas per site (the ALVIN evaluation's 3 nodes
// per site, spec A17): node k of site S is called "S_k", and the nodes of a site are listed
// together, node 0 first, so a leader chosen by mean RTT (Multi-Paxos) lands on node 0 of its
// site as the spec asks (the nodes of a site have equal means, and ties go to the first listed).
// With nodes = 1 it returns t itself. It fails if t is invalid, nodes is below 1, or the result
// would exceed MaxDatacenters.
func PerSite(t *Topology, nodes int) (*Topology, error) {
	if _, err := t.Validate(); err != nil {
		return nil, fmt.Errorf("nodes per site of %s: %w", t.Name, err)
	}
	switch {
	case nodes < 1:
		return nil, fmt.Errorf("nodes per site of %s: %d, want at least 1", t.Name, nodes)
	case nodes == 1:
		return t, nil
	case t.N()*nodes > MaxDatacenters:
		return nil, fmt.Errorf("nodes per site of %s: %d sites × %d nodes exceed %d datacenters", t.Name, t.N(), nodes, MaxDatacenters)
	}
	n := t.N() * nodes
	out := &Topology{Name: t.Name + "x" + strconv.Itoa(nodes), DCs: make([]string, n), RTTMs: make([][]float64, n), StdDevMs: make([][]float64, n)}
	for i := range n {
		out.DCs[i] = t.DCs[i/nodes] + "_" + strconv.Itoa(i%nodes)
		out.RTTMs[i], out.StdDevMs[i] = make([]float64, n), make([]float64, n)
		for j := range n {
			switch a, b := i/nodes, j/nodes; {
			case i == j:
			case a == b:
				out.RTTMs[i][j] = IntraSiteRTTMs
			default:
				out.RTTMs[i][j], out.StdDevMs[i][j] = t.RTTMs[a][b], t.StdDevMs[a][b]
			}
		}
	}
	return out, nil
}
