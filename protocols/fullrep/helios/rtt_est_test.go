package helios

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// upperTriangle renders rtt as the value of rtt_est_ms.
func upperTriangle(rtt [][]float64) string {
	var parts []string
	for a := range rtt {
		for b := a + 1; b < len(rtt); b++ {
			parts = append(parts, fmt.Sprint(rtt[a][b]))
		}
	}
	return strings.Join(parts, ",")
}

func settingsFor(t *testing.T, topo *topology.Topology, f int, zero bool, params protocol.Params) settings {
	t.Helper()
	s, err := parseSettings(protocol.Config{Topology: topo, Params: params}, f, zero)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameOffsets(a, b [][]int64) bool {
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// TestRTTEstimatesEqualToTheTopology: estimates equal to the real RTTs change nothing, on every
// preset (aws-helios gives the offsets of spec §6.1.3).
func TestRTTEstimatesEqualToTheTopology(t *testing.T) {
	for _, name := range topology.PresetNames() {
		topo, _ := topology.Preset(name)
		want := settingsFor(t, topo, 0, false, nil).offsetsUs
		got := settingsFor(t, topo, 0, false, protocol.Params{ParamRTTEstimates: upperTriangle(topo.RTTMs)}).offsetsUs
		if !sameOffsets(got, want) {
			t.Errorf("%s: offsets with exact estimates %v, without %v", name, got, want)
		}
	}
}

// TestRTTEstimatesAllZeroIsHeliosB: with every estimate 0 the MAO latencies are 0 and so are
// the offsets: Helios-0 becomes Helios-B (spec E4.4, Est-2).
func TestRTTEstimatesAllZeroIsHeliosB(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	zeros := protocol.Params{ParamRTTEstimates: strings.TrimSuffix(strings.Repeat("0,", 10), ",")}
	got := settingsFor(t, topo, 0, false, zeros).offsetsUs
	want := settingsFor(t, topo, 0, true, nil).offsetsUs
	if !sameOffsets(got, want) {
		t.Errorf("offsets with zero estimates %v, Helios-B's %v", got, want)
	}
}

// TestRTTEstimatesShiftOffsets: an estimate 20 ms too high on one pair moves that pair's offsets
// by −10 ms each (Eq. 4.5) when the target latencies are fixed.
func TestRTTEstimatesShiftOffsets(t *testing.T) {
	topo, _ := topology.Preset("table4.1") // A, B, C; RTT A-B 30, A-C 20, B-C 40
	params := protocol.Params{ParamLatencies: "15,35,20", ParamRTTEstimates: "50,20,40"}
	got := settingsFor(t, topo, 0, false, params).offsetsUs
	base := settingsFor(t, topo, 0, false, protocol.Params{ParamLatencies: "15,35,20"}).offsetsUs
	if got[0][1] != base[0][1]-10_000 || got[1][0] != base[1][0]-10_000 || got[0][2] != base[0][2] || got[1][2] != base[1][2] {
		t.Errorf("offsets %v, want those of %v with A-B and B-A lowered by 10 ms", got, base)
	}
}

func TestRTTEstimatesInvalid(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	for _, tc := range []struct{ value, want string }{
		{"30,20", "has 2 values, topology table4.1 has 3 datacenter pairs (A-B,A-C,B-C)"},
		{"30,20,40,1", "has 4 values"},
		{"30,-5,40", "the estimate for A-C is -5, want a finite number ≥ 0"},
		{"30,NaN,40", "the estimate for A-C is NaN"},
		{"30,+Inf,40", "the estimate for A-C is +Inf"},
		{"30,x,40", `"x" is not a number`},
	} {
		_, err := parseSettings(protocol.Config{Topology: topo, Params: protocol.Params{ParamRTTEstimates: tc.value}}, 0, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "helios: ") {
			t.Errorf("rtt_est_ms=%s: error %v, want one containing %q", tc.value, err, tc.want)
		}
	}
	// Targets that the estimates make infeasible violate Rule 1: refused, never run unsafely.
	_, err := parseSettings(protocol.Config{Topology: topo, Params: protocol.Params{ParamLatencies: "5,25,15", ParamRTTEstimates: "60,20,40"}}, 0, false)
	if err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Errorf("infeasible targets for the estimates: error %v, want a Rule 1 refusal", err)
	}
}
