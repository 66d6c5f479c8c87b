package protocol

import (
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/topology"
)

func threeDCs() *topology.Topology {
	return &topology.Topology{Name: "t3", DCs: []string{"V", "O", "C"},
		RTTMs:    [][]float64{{0, 1, 2}, {1, 0, 3}, {2, 3, 0}},
		StdDevMs: [][]float64{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}}
}

func TestFullReplicas(t *testing.T) {
	topo := threeDCs()
	// Replicas placed out of datacenter order.
	nodes := []Node{{ID: 0, DC: 2}, {ID: 1, DC: 0}, {ID: 2, DC: 1}}
	for self, wantDC := range []int{2, 0, 1} {
		cfg := Config{Self: NodeID(self), Nodes: nodes, Topology: topo}
		nodeOfDC, selfDC, err := FullReplicas(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(nodeOfDC, []NodeID{1, 2, 0}) || selfDC != wantDC {
			t.Fatalf("self %d: nodeOfDC %v selfDC %d, want [1 2 0] and %d", self, nodeOfDC, selfDC, wantDC)
		}
		if cfg.SelfNode() != nodes[self] {
			t.Fatalf("SelfNode = %+v", cfg.SelfNode())
		}
	}
	for _, c := range []struct {
		name  string
		self  NodeID
		nodes []Node
		want  string
	}{
		{"two replicas in one datacenter", 0, []Node{{ID: 0, DC: 0}, {ID: 1, DC: 1}, {ID: 2, DC: 1}, {ID: 3, DC: 2}}, "datacenter O has more than one replica"},
		{"a datacenter without a replica", 0, []Node{{ID: 0, DC: 0}, {ID: 1, DC: 2}}, "datacenter O has no replica"},
		{"no nodes", 0, nil, "datacenter V has no replica"},
		{"node id out of place", 0, []Node{{ID: 0, DC: 0}, {ID: 2, DC: 1}, {ID: 1, DC: 2}}, "node 1: malformed placement"},
		{"datacenter out of range", 0, []Node{{ID: 0, DC: 0}, {ID: 1, DC: 3}, {ID: 2, DC: 1}}, "node 1: malformed placement"},
		{"negative datacenter", 0, []Node{{ID: 0, DC: -1}}, "node 0: malformed placement"},
		{"self out of range", 3, []Node{{ID: 0, DC: 0}, {ID: 1, DC: 1}, {ID: 2, DC: 2}}, "self node 3 out of range"},
		{"negative self", -1, []Node{{ID: 0, DC: 0}, {ID: 1, DC: 1}, {ID: 2, DC: 2}}, "self node -1 out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			nodeOfDC, _, err := FullReplicas(Config{Self: c.self, Nodes: c.nodes, Topology: topo})
			if err == nil || nodeOfDC != nil {
				t.Fatalf("FullReplicas accepted it: %v", nodeOfDC)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}
