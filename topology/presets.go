package topology

import (
	"maps"
	"slices"
)

// presets maps each preset name to a constructor; each call builds fresh slices, so callers may
// modify what Preset returns.
var presets = map[string]func() *Topology{
	// Dissertation Table 4.1 (spec §3.5): the three-DC worked example.
	"table4.1": func() *Topology {
		return &Topology{
			Name: "table4.1",
			DCs:  []string{"A", "B", "C"},
			RTTMs: [][]float64{
				{0, 30, 20},
				{30, 0, 40},
				{20, 40, 0},
			},
			StdDevMs: zeros(3),
		}
	},
	// Dissertation Table 3.1 as reconstructed in spec §6.1.1. The table has no standard
	// deviations, so jitter is zero.
	"aws-mf": func() *Topology {
		return &Topology{
			Name: "aws-mf",
			DCs:  []string{"C", "O", "V", "I", "S"},
			RTTMs: [][]float64{
				{0, 21, 86, 159, 173},
				{21, 0, 101, 169, 205},
				{86, 101, 0, 99, 260},
				{159, 169, 99, 0, 341},
				{173, 205, 260, 341, 0},
			},
			StdDevMs: zeros(5),
		}
	},
	// Dissertation Table 4.2 (= Table 5.1) as reconstructed in spec §6.1.2, with the spec's
	// resolution of the conflicting standard deviations: C–I 6.5, O–S 4.4.
	"aws-helios": func() *Topology {
		return &Topology{
			Name: "aws-helios",
			DCs:  []string{"V", "O", "C", "I", "S"},
			RTTMs: [][]float64{
				{0, 66, 78, 84, 268},
				{66, 0, 19, 175, 210},
				{78, 19, 0, 175, 182},
				{84, 175, 175, 0, 194},
				{268, 210, 182, 194, 0},
			},
			StdDevMs: [][]float64{
				{0, 11, 10, 9, 7},
				{11, 0, 1, 7, 4.4},
				{10, 1, 0, 6.5, 6},
				{9, 7, 6.5, 0, 4},
				{7, 4.4, 6, 4, 0},
			},
		}
	},
	// S-DUR's WAN 1 (spec sdur.md §4.1–4.2): regions EU and US-EAST, RTT 90 ms, each with two
	// availability zones 1 ms apart; jitter ±5% of the one-way delay (σ = RTT/85). US-WEST is
	// unused in WAN 1. partitioned.PlacementFor places the spec's replicas on it.
	"sdur-wan1": func() *Topology {
		return withJitter(&Topology{
			Name: "sdur-wan1",
			DCs:  []string{"eu-1", "eu-2", "use-1", "use-2"},
			RTTMs: [][]float64{
				{0, 1, 90, 90},
				{1, 0, 90, 90},
				{90, 90, 0, 1},
				{90, 90, 1, 0},
			},
		})
	},
	// S-DUR's WAN 2 (spec §4.1–4.2): one datacenter in each of EU, US-EAST and US-WEST, RTTs 90,
	// 170 and 100 ms; jitter as in sdur-wan1.
	"sdur-wan2": func() *Topology {
		return withJitter(&Topology{
			Name: "sdur-wan2",
			DCs:  []string{"eu", "use", "usw"},
			RTTMs: [][]float64{
				{0, 90, 170},
				{90, 0, 100},
				{170, 100, 0},
			},
		})
	},
}

// withJitter sets t's standard deviations to RTT/85: the simulator truncates a one-way jitter
// at ±3σ/√2, which is then ±5% of the one-way delay (spec sdur.md §4.2).
func withJitter(t *Topology) *Topology {
	t.StdDevMs = zeros(t.N())
	for a := range t.N() {
		for b := range t.N() {
			t.StdDevMs[a][b] = t.RTTMs[a][b] / 85
		}
	}
	return t
}

func zeros(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

// Preset returns a fresh copy of the named preset topology ("table4.1", "aws-mf", "aws-helios",
// "aws-3", "aws-5", "aws-7" or "alvin-paper-7"; see the package documentation), or false if
// there is no such preset.
func Preset(name string) (*Topology, bool) {
	build, ok := presets[name]
	if !ok {
		return nil, false
	}
	return build(), true
}

// PresetNames returns the names of all preset topologies, sorted.
func PresetNames() []string {
	return slices.Sorted(maps.Keys(presets))
}
