package nemesis

import (
	"strings"
	"testing"

	_ "github.com/meridian-kv/meridian/protocols/all" // cluster files name protocols
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

// TestParseSchedule: every kind parses, node names with dashes split where the nodes exist,
// each fault prints back as it was written, and malformed items are refused.
func TestParseSchedule(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	cfg := cluster.GeneratePartitioned(topo, "table4.1", "fastccs", t.TempDir(), 7100, 2) // nodes A-p0, A-p1, …
	const schedule = "kill:A-p0@1s-2s,pause:B-p1@3s-4s,cut:A-p0-C-p1@1s-3s,skew:C-p0-50ms@2s-5s,skew:B-p0+1.5s@0s-1s"
	faults, err := ParseSchedule(schedule, cfg, 10_000_000)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{Kind: Kill, Node: "A-p0", StartUs: 1e6, EndUs: 2e6},
		{Kind: Pause, Node: "B-p1", StartUs: 3e6, EndUs: 4e6},
		{Kind: Cut, Node: "A-p0", Peer: "C-p1", StartUs: 1e6, EndUs: 3e6},
		{Kind: Skew, Node: "C-p0", SkewUs: -50_000, StartUs: 2e6, EndUs: 5e6},
		{Kind: Skew, Node: "B-p0", SkewUs: 1_500_000, StartUs: 0, EndUs: 1e6},
	}
	var printed []string
	for i, f := range faults {
		if f != want[i] {
			t.Errorf("fault %d: %+v, want %+v", i, f, want[i])
		}
		printed = append(printed, f.String())
	}
	if again, err := ParseSchedule(strings.Join(printed, ","), cfg, 10_000_000); err != nil || len(again) != len(faults) {
		t.Errorf("printed schedule %v does not parse back: %v", printed, err)
	}
	for _, bad := range []string{"cut:A-p0-A-p0@1s-2s", "cut:A-p0-Z@1s-2s", "skew:A-p0@1s-2s", "kill:A-p0@1s-11s", "kill:A-p0@-1s-2s"} {
		if _, err := ParseSchedule(bad, cfg, 10_000_000); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
