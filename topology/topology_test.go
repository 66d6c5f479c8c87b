package topology

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func mustPreset(t *testing.T, name string) *Topology {
	t.Helper()
	topo, ok := Preset(name)
	if !ok {
		t.Fatalf("Preset(%q) not found", name)
	}
	return topo
}

func TestPresetNames(t *testing.T) {
	want := []string{"alvin-paper-7", "aws-3", "aws-5", "aws-7", "aws-helios", "aws-mf", "cop-fig6.1", "sdur-wan1", "sdur-wan2", "table4.1"}
	if got := PresetNames(); !slices.Equal(got, want) {
		t.Fatalf("PresetNames() = %v, want %v", got, want)
	}
	if _, ok := Preset("no-such-preset"); ok {
		t.Fatal(`Preset("no-such-preset") found`)
	}
}

func TestPresetDCOrder(t *testing.T) {
	for _, tc := range []struct {
		preset string
		dcs    []string
	}{
		{"table4.1", []string{"A", "B", "C"}},
		{"aws-mf", []string{"C", "O", "V", "I", "S"}},
		{"aws-helios", []string{"V", "O", "C", "I", "S"}},
	} {
		topo := mustPreset(t, tc.preset)
		if topo.Name != tc.preset || !slices.Equal(topo.DCs, tc.dcs) {
			t.Errorf("%s: Name %q DCs %v, want %q %v", tc.preset, topo.Name, topo.DCs, tc.preset, tc.dcs)
		}
		if topo.N() != len(tc.dcs) {
			t.Errorf("%s: N() = %d, want %d", tc.preset, topo.N(), len(tc.dcs))
		}
	}
}

// TestPresetPairs checks every pair of every preset, in both directions, against the spec's
// tables (§3.5, §6.1.1, §6.1.2).
func TestPresetPairs(t *testing.T) {
	for _, tc := range []struct {
		preset   string
		a, b     string
		rtt, std float64
	}{
		{"table4.1", "A", "B", 30, 0},
		{"table4.1", "A", "C", 20, 0},
		{"table4.1", "B", "C", 40, 0},

		{"aws-mf", "C", "O", 21, 0},
		{"aws-mf", "C", "V", 86, 0},
		{"aws-mf", "C", "I", 159, 0},
		{"aws-mf", "C", "S", 173, 0},
		{"aws-mf", "O", "V", 101, 0},
		{"aws-mf", "O", "I", 169, 0},
		{"aws-mf", "O", "S", 205, 0},
		{"aws-mf", "V", "I", 99, 0},
		{"aws-mf", "V", "S", 260, 0},
		{"aws-mf", "I", "S", 341, 0},

		{"aws-helios", "V", "O", 66, 11},
		{"aws-helios", "V", "C", 78, 10},
		{"aws-helios", "V", "I", 84, 9},
		{"aws-helios", "V", "S", 268, 7},
		{"aws-helios", "O", "C", 19, 1},
		{"aws-helios", "O", "I", 175, 7},
		{"aws-helios", "O", "S", 210, 4.4},
		{"aws-helios", "C", "I", 175, 6.5},
		{"aws-helios", "C", "S", 182, 6},
		{"aws-helios", "I", "S", 194, 4},
	} {
		topo := mustPreset(t, tc.preset)
		i, okA := topo.Index(tc.a)
		j, okB := topo.Index(tc.b)
		if !okA || !okB {
			t.Fatalf("%s: Index(%s), Index(%s) not found", tc.preset, tc.a, tc.b)
		}
		for _, d := range [][2]int{{i, j}, {j, i}} {
			if got := topo.RTTMs[d[0]][d[1]]; got != tc.rtt {
				t.Errorf("%s: RTT %s→%s = %g, want %g", tc.preset, topo.DCs[d[0]], topo.DCs[d[1]], got, tc.rtt)
			}
			if got := topo.StdDevMs[d[0]][d[1]]; got != tc.std {
				t.Errorf("%s: std dev %s→%s = %g, want %g", tc.preset, topo.DCs[d[0]], topo.DCs[d[1]], got, tc.std)
			}
		}
	}
}

func TestPresetMaxRTT(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   map[string]float64
	}{
		{"table4.1", map[string]float64{"A": 30, "B": 40, "C": 40}},
		// Spec §6.1.1 cross-check: RTT^C_max = 173, RTT^S_max = 341.
		{"aws-mf", map[string]float64{"C": 173, "O": 205, "V": 260, "I": 341, "S": 341}},
		{"aws-helios", map[string]float64{"V": 268, "O": 210, "C": 182, "I": 194, "S": 268}},
	} {
		topo := mustPreset(t, tc.preset)
		for dc, want := range tc.want {
			i, _ := topo.Index(dc)
			if got := topo.MaxRTTMs(i); got != want {
				t.Errorf("%s: MaxRTTMs(%s) = %g, want %g", tc.preset, dc, got, want)
			}
		}
	}
}

func TestPresetsValidate(t *testing.T) {
	for _, name := range PresetNames() {
		topo := mustPreset(t, name)
		warnings, err := topo.Validate()
		if err != nil {
			t.Errorf("%s: Validate: %v", name, err)
		}
		if name == "table4.1" && len(warnings) != 0 {
			t.Errorf("table4.1: unexpected warnings %q", warnings)
		}
	}
	// Measured RTTs break the triangle inequality; the warning for V–S via C must be among them.
	warnings, _ := mustPreset(t, "aws-helios").Validate()
	want := "triangle inequality violated: RTT(V,S)=268 > RTT(V,C)+RTT(C,S)=78+182"
	if !slices.Contains(warnings, want) {
		t.Errorf("aws-helios warnings %q lack %q", warnings, want)
	}
}

func TestPresetIsFreshCopy(t *testing.T) {
	for _, name := range PresetNames() {
		a := mustPreset(t, name)
		a.DCs[0] = "X"
		a.RTTMs[0][1] = -1
		a.StdDevMs[1][0] = -1
		if b := mustPreset(t, name); reflect.DeepEqual(a, b) || b.DCs[0] == "X" {
			t.Errorf("%s: modifying one Preset result changed another", name)
		}
	}
}

func TestIndex(t *testing.T) {
	topo := mustPreset(t, "aws-helios")
	for _, tc := range []struct {
		name string
		want int
		ok   bool
	}{{"V", 0, true}, {"S", 4, true}, {"C", 2, true}, {"X", 0, false}, {"", 0, false}, {"v", 0, false}} {
		if got, ok := topo.Index(tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("Index(%q) = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestValidateInMemory covers the checks that only topologies built in code can fail (matrix
// shape, diagonal); the rest are exercised through files in TestLoadErrors.
func TestValidateInMemory(t *testing.T) {
	valid := func() *Topology {
		return &Topology{
			Name:     "two",
			DCs:      []string{"A", "B"},
			RTTMs:    [][]float64{{0, 10}, {10, 0}},
			StdDevMs: [][]float64{{0, 1}, {1, 0}},
		}
	}
	for _, tc := range []struct {
		name   string
		modify func(*Topology)
		want   string
	}{
		{"no DCs", func(t *Topology) { t.DCs = nil }, "datacenters: no datacenters"},
		{"bad name", func(t *Topology) { t.DCs[1] = "B.1" }, `datacenters[1]: invalid name "B.1"`},
		{"missing rows", func(t *Topology) { t.RTTMs = t.RTTMs[:1] }, "rtt_ms: 1 rows for 2 datacenters"},
		{"nil std dev", func(t *Topology) { t.StdDevMs = nil }, "stddev_ms: 0 rows for 2 datacenters"},
		{"short row", func(t *Topology) { t.StdDevMs[1] = []float64{1} }, "stddev_ms: row B has 1 entries for 2 datacenters"},
		{"diagonal", func(t *Topology) { t.RTTMs[1][1] = 3 }, "rtt_ms: B→B is 3, want 0"},
		{"asymmetric", func(t *Topology) { t.RTTMs[1][0] = 11 }, "rtt_ms: asymmetric RTT A→B 10 vs B→A 11"},
		{"negative", func(t *Topology) { t.RTTMs[1][0] = -1 }, "rtt_ms: RTT between A and B is -1, want a number in [0, 60000] (ms)"},
		{"NaN std dev", func(t *Topology) { t.StdDevMs[0][1] = math.NaN() }, "stddev_ms: std dev between A and B is NaN"},
	} {
		topo := valid()
		tc.modify(topo)
		_, err := topo.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want error containing %q", tc.name, err, tc.want)
		}
	}
	if warnings, err := valid().Validate(); err != nil || len(warnings) != 0 {
		t.Errorf("valid topology: Validate() = %q, %v", warnings, err)
	}
}

func TestSubset(t *testing.T) {
	mf := mustPreset(t, "aws-mf")
	// Spec §6.1.1: RTT^i_max per DC in each MF scenario.
	for _, tc := range []struct {
		dcs    []string
		maxRTT []float64
	}{
		{[]string{"C", "O"}, []float64{21, 21}},
		{[]string{"C", "O", "V"}, []float64{86, 101, 101}},
		{[]string{"C", "O", "V", "I"}, []float64{159, 169, 101, 169}},
		{[]string{"C", "O", "V", "I", "S"}, []float64{173, 205, 260, 341, 341}},
		{[]string{"S", "C"}, []float64{173, 173}},
	} {
		sub, err := Subset(mf, tc.dcs)
		if err != nil {
			t.Fatalf("Subset(%v): %v", tc.dcs, err)
		}
		if _, err := sub.Validate(); err != nil {
			t.Errorf("Subset(%v) invalid: %v", tc.dcs, err)
		}
		if want := "aws-mf[" + strings.Join(tc.dcs, ",") + "]"; sub.Name != want {
			t.Errorf("Subset(%v).Name = %q, want %q", tc.dcs, sub.Name, want)
		}
		if !slices.Equal(sub.DCs, tc.dcs) {
			t.Errorf("Subset(%v).DCs = %v", tc.dcs, sub.DCs)
		}
		for i, a := range sub.DCs {
			if got := sub.MaxRTTMs(i); got != tc.maxRTT[i] {
				t.Errorf("Subset(%v): MaxRTTMs(%s) = %g, want %g", tc.dcs, a, got, tc.maxRTT[i])
			}
			for j, b := range sub.DCs {
				oi, _ := mf.Index(a)
				oj, _ := mf.Index(b)
				if sub.RTTMs[i][j] != mf.RTTMs[oi][oj] || sub.StdDevMs[i][j] != mf.StdDevMs[oi][oj] {
					t.Errorf("Subset(%v): %s→%s differs from the original", tc.dcs, a, b)
				}
			}
		}
	}

	helios := mustPreset(t, "aws-helios")
	sub, err := Subset(helios, []string{"I", "C"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.RTTMs[0][1] != 175 || sub.StdDevMs[1][0] != 6.5 {
		t.Errorf("Subset(aws-helios, I C) = %v / %v", sub.RTTMs, sub.StdDevMs)
	}
	sub.RTTMs[0][1], sub.DCs[0] = 1, "X"
	if i, _ := helios.Index("I"); helios.RTTMs[i][2] != 175 || helios.DCs[i] != "I" {
		t.Error("modifying a subset changed the original")
	}

	for _, tc := range []struct {
		dcs  []string
		want string
	}{
		{nil, "subset of aws-helios: no datacenters"},
		{[]string{"V", "X"}, `subset of aws-helios: unknown datacenter "X"`},
		{[]string{"V", "O", "V"}, `subset of aws-helios: duplicate datacenter "V"`},
	} {
		if _, err := Subset(helios, tc.dcs); err == nil || err.Error() != tc.want {
			t.Errorf("Subset(%v) error = %v, want %q", tc.dcs, err, tc.want)
		}
	}
	broken := mustPreset(t, "table4.1")
	broken.RTTMs[0][1] = -3
	if _, err := Subset(broken, []string{"A"}); err == nil || !strings.HasPrefix(err.Error(), "subset of table4.1: rtt_ms:") {
		t.Errorf("Subset of an invalid topology: error = %v", err)
	}
}

// TestLimits: too many datacenters (the lower bound's linear program would not fit in memory)
// and RTTs beyond a minute (which overflow as microseconds) are refused with the limit named.
func TestLimits(t *testing.T) {
	many := &Topology{Name: "many"}
	for i := range MaxDatacenters + 1 {
		many.DCs = append(many.DCs, fmt.Sprintf("d%d", i))
	}
	many.RTTMs, many.StdDevMs = square(len(many.DCs), 10), square(len(many.DCs), 0)
	if _, err := many.Validate(); err == nil || !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("%d datacenters: %v", len(many.DCs), err)
	}
	far := &Topology{Name: "far", DCs: []string{"A", "B"}, RTTMs: [][]float64{{0, 1e17}, {1e17, 0}}, StdDevMs: square(2, 0)}
	if _, err := far.Validate(); err == nil || !strings.Contains(err.Error(), "60000") {
		t.Errorf("an RTT of 1e17 ms: %v", err)
	}
	ok := &Topology{Name: "ok", DCs: []string{"A", "B"}, RTTMs: [][]float64{{0, MaxRTTMs}, {MaxRTTMs, 0}}, StdDevMs: square(2, 0)}
	if _, err := ok.Validate(); err != nil {
		t.Errorf("an RTT of exactly the limit: %v", err)
	}
}

// square is an n×n matrix with v off the diagonal.
func square(n int, v float64) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
		for j := range m[i] {
			if i != j {
				m[i][j] = v
			}
		}
	}
	return m
}
