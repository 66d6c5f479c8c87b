package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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

// Running reports whether node name of the local cluster in dir runs.
func Running(dir, name string) bool { return slices.Contains(runningNodes(dir), name) }

// addedFile lists the spare nodes that joined the cluster in dir, one name a line.
func addedFile(dir string) string { return filepath.Join(dir, "added") }

// Added returns the spare nodes that joined the local cluster in dir (RecordAdded), in the
// order they joined; none if the file does not exist.
func Added(dir string) ([]string, error) {
	f, err := os.Open(addedFile(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name := strings.TrimSpace(sc.Text()); name != "" {
			out = append(out, name)
		}
	}
	return out, sc.Err()
}

// RecordAdded notes that spare node name joined the local cluster in dir.
func RecordAdded(dir, name string) error {
	added, err := Added(dir)
	if err != nil || slices.Contains(added, name) {
		return err
	}
	return writeFileAtomic(addedFile(dir), []byte(strings.Join(append(added, name), "\n")+"\n"), 0o644)
}
