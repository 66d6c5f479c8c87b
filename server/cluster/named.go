package cluster

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// GenerateNamed is Generate for a protocol whose nodes have roles (registry.Entry.Roles: the
// shared logs' stage machines): node i placed at nodes[i] and named DC-roles[i].
func GenerateNamed(topo *topology.Topology, topoRef, protocolName string, dir string, basePort int, nodes []protocol.Node, roles []string) *Config {
	c := newConfig(topo, topoRef, protocolName, dir)
	for i, nd := range nodes {
		c.addNode(fmt.Sprintf("%s-%s", topo.DCs[nd.DC], roles[i]), nd.DC, nd.Partition, basePort)
	}
	return c
}

// NodePid returns the process id of node name of the local cluster in dir (`cluster up`'s pid
// file), for tools that measure the node's process, such as its CPU time.
func NodePid(dir, name string) (int, error) { return readPid(pidFile(dir, name)) }
