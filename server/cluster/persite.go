package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/meridian-kv/meridian/topology"
)

// PerSiteTopologyFile is the name, in a cluster's directory, of the topology file
// GeneratePerSite writes.
const PerSiteTopologyFile = "topology.json"

// GeneratePerSite is Generate for a full-replication protocol with nodes full replicas per site
// of topo (`cluster up --nodes-per-dc`, the ALVIN evaluation's 3 nodes per site): the nodes run
// on topology.PerSite(topo, nodes), one per datacenter of it (node k of site S is called S_k),
// which it writes to dir/PerSiteTopologyFile for the cluster file to name, since the servers read
// their topology from a preset or a file. With nodes = 1 it is Generate. It fails if PerSite does,
// a cluster is running in dir (whose restarted nodes would read the new file), or the file cannot
// be written.
func GeneratePerSite(topo *topology.Topology, topoRef, protocolName string, dir string, basePort, nodes int) (*Config, error) {
	if nodes == 1 {
		return Generate(topo, topoRef, protocolName, dir, basePort), nil
	}
	sites, err := topology.PerSite(topo, nodes)
	if err != nil {
		return nil, err
	}
	data, err := sites.MarshalJSONFile()
	if err != nil {
		return nil, err
	}
	if err := checkNotRunning(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, PerSiteTopologyFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := writeFileAtomic(path, data, 0o644); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return Generate(sites, path, protocolName, dir, basePort), nil
}
