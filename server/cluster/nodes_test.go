package cluster

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/topology"
)

// TestGenerateNodes: an Ogre cluster with its deployment parameters (a RoT unit per datacenter)
// has a replica named after each datacenter, then a unit DC-ro1 each, and parses back; the same
// nodes without the parameter, or the parameter without the unit nodes, are refused.
func TestGenerateNodes(t *testing.T) {
	entry, err := registry.Lookup("ogre")
	if err != nil {
		t.Fatal(err)
	}
	topo, _ := topology.Preset("aws-helios")
	nodes, err := entry.Nodes(entry.DeployParams, topo.N())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ogre")
	c := GenerateNodes(topo, "aws-helios", "ogre", dir, 9000, nodes)
	c.Params = entry.DeployParams
	if len(c.Nodes) != 10 || c.Nodes[0].Name != "V" || c.Nodes[5].Name != "V-ro1" || c.Nodes[9].Name != "S-ro1" || c.Nodes[9].Partition != 1 {
		t.Fatalf("nodes: %+v", c.Nodes)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(c.Path, data); err != nil {
		t.Fatalf("Parse(Marshal(GenerateNodes)): %v\n%s", err, data)
	}
	c.Params = nil
	if data, err = c.Marshal(); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(c.Path, data); err == nil || !strings.Contains(err.Error(), "partition 1") {
		t.Errorf("unit nodes without rot_units: %v", err)
	}
	c = Generate(topo, "aws-helios", "ogre", dir, 9000)
	c.Params = protocol.Params{"rot_units": "1"}
	if data, err = c.Marshal(); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(c.Path, data); err == nil || !strings.Contains(err.Error(), "read-only nodes") {
		t.Errorf("rot_units without unit nodes: %v", err)
	}
}
