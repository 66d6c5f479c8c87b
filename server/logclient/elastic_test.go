package logclient

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

// elasticCluster is a two-datacenter Chariots cluster file in a temporary directory with a
// spare of every role that can join, and its layout.
func elasticCluster(t *testing.T) (*cluster.Config, *flstore.Layout) {
	t.Helper()
	topo, ok := topology.Preset("table4.1")
	if !ok {
		t.Fatal("no preset table4.1")
	}
	p := protocol.Params{}
	for _, r := range chariots.Elastic {
		p["spare_"+r.String()] = "1"
	}
	l, err := chariots.LayoutOf(p, topo.N())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := cluster.GenerateNamed(topo, "table4.1", "chariots", dir, 7100, l.Nodes, l.RoleNames())
	cfg.Params, cfg.Path = p, filepath.Join(dir, "cluster.yaml")
	return cfg, l
}

// TestNextSpareAndJoinedBatchers: the spares are taken in order until none is left, and a
// client appends through the active batchers, then the joined ones, its home (via) first.
func TestNextSpareAndJoinedBatchers(t *testing.T) {
	cfg, l := elasticCluster(t)
	dc, name := cfg.Topology.DCs[1], cfg.Topology.DCs[1]+"-spare-batcher1"
	got, err := NextSpare(cfg, dc, flstore.Batcher, nil)
	if err != nil || got != name {
		t.Fatalf("next spare batcher of %s: %q, %v", dc, got, err)
	}
	if _, err := NextSpare(cfg, dc, flstore.Batcher, []string{name}); err == nil || !strings.Contains(err.Error(), "no spare batcher left") {
		t.Fatalf("with the spare joined: %v", err)
	}
	if _, err := NextSpare(cfg, "nowhere", flstore.Batcher, nil); err == nil {
		t.Fatal("an unknown datacenter was accepted")
	}
	if err := cluster.RecordAdded(filepath.Dir(cfg.Path), name); err != nil {
		t.Fatal(err)
	}
	active := l.Active(1, flstore.Batcher)
	spare, _, _ := cfg.Node(name)
	for via, want := range map[string][]protocol.NodeID{
		"":   append(slices.Clone(active), protocol.NodeID(spare)),
		name: append([]protocol.NodeID{protocol.NodeID(spare)}, active...),
	} {
		got, err := withJoined(cfg, l, 1, active, via)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("via %q: %v, %v; want %v", via, got, err, want)
		}
	}
	if _, err := withJoined(cfg, l, 0, l.Active(0, flstore.Batcher), name); err == nil {
		t.Fatal("a batcher of another datacenter was taken as home")
	}
	if _, err := StageRole("sender"); err == nil {
		t.Fatal("a sender cannot join")
	}
	if r, err := StageRole("queue"); err != nil || r != flstore.Queue {
		t.Fatalf("queue: %v, %v", r, err)
	}
}
