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

// TestGeneratePerSite: ALVIN with 3 nodes per site of aws-3 is nine nodes VA_0 … TK_2 on the
// topology file it wrote in the cluster's directory, and parses back with that topology; with 1
// node per site it is Generate on the preset; too many nodes are refused.
func TestGeneratePerSite(t *testing.T) {
	topo, _ := topology.Preset("aws-3")
	dir := filepath.Join(t.TempDir(), "a3")
	c, err := GeneratePerSite(topo, "aws-3", "alvin", dir, 9000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 9 || c.Nodes[0].Name != "VA_0" || c.Nodes[4].DC != "IE_1" || c.Nodes[8].Name != "TK_2" ||
		c.TopologyRef != filepath.Join(dir, PerSiteTopologyFile) {
		t.Fatalf("nodes %+v, topology %s", c.Nodes, c.TopologyRef)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(c.Path, data)
	if err != nil {
		t.Fatalf("Parse(Marshal(GeneratePerSite)): %v\n%s", err, data)
	}
	if back.Topology.N() != 9 || back.Topology.RTTMs[0][1] != topology.IntraSiteRTTMs || back.Topology.RTTMs[0][3] != topo.RTTMs[0][1] {
		t.Fatalf("topology read back: %+v", back.Topology)
	}
	if one, err := GeneratePerSite(topo, "aws-3", "alvin", dir, 9000, 1); err != nil || one.TopologyRef != "aws-3" || len(one.Nodes) != 3 {
		t.Fatalf("1 node per site: %v, %+v", err, one)
	}
	if _, err := GeneratePerSite(topo, "aws-3", "alvin", dir, 9000, 22); err == nil {
		t.Error("66 datacenters were accepted")
	}
}
