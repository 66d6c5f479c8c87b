package topology

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// writeFile writes content to a file called name in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadYAMLAndJSONAgree(t *testing.T) {
	want := &Topology{
		Name:     "three-dcs",
		DCs:      []string{"A", "B", "C"},
		RTTMs:    [][]float64{{0, 30, 20}, {30, 0, 40}, {20, 40, 0}},
		StdDevMs: [][]float64{{0, 1.5, 0}, {1.5, 0, 0}, {0, 0, 0}},
	}
	for _, path := range []string{"testdata/three-dcs.yaml", "testdata/three-dcs.json"} {
		got, warnings, err := Load(path)
		if err != nil {
			t.Fatalf("Load(%s): %v", path, err)
		}
		if len(warnings) != 0 {
			t.Errorf("Load(%s): unexpected warnings %q", path, warnings)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Load(%s) = %+v, want %+v", path, got, want)
		}
	}
}

func TestLoadPreset(t *testing.T) {
	for _, name := range PresetNames() {
		got, warnings, err := Load(name)
		if err != nil {
			t.Fatalf("Load(%s): %v", name, err)
		}
		want, _ := Preset(name)
		wantWarnings, _ := want.Validate()
		if !reflect.DeepEqual(got, want) || !slices.Equal(warnings, wantWarnings) {
			t.Errorf("Load(%s) = %+v, %q; want the preset and %q", name, got, warnings, wantWarnings)
		}
	}
}

func TestLoadOptionalFields(t *testing.T) {
	for _, tc := range []struct {
		file, content string
		wantName      string
	}{
		{"single.yml", "datacenters: [Solo]\n", "single"},
		{"named.YAML", "name: lab\ndatacenters: [a-1, b_2]\nrtt_ms: {b_2: {a-1: 0.25}}\n", "lab"},
		{"pair.json", `{"name": "", "datacenters": ["X", "Y"], "rtt_ms": {"X": {"Y": 5}, "Y": {"X": 5}}}`, "pair"},
	} {
		topo, _, err := Load(writeFile(t, tc.file, tc.content))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if topo.Name != tc.wantName {
			t.Errorf("%s: Name = %q, want %q", tc.file, topo.Name, tc.wantName)
		}
		for i := range topo.N() {
			for j := range topo.N() {
				if topo.StdDevMs[i][j] != 0 {
					t.Errorf("%s: std dev %d→%d = %g, want 0", tc.file, i, j, topo.StdDevMs[i][j])
				}
			}
		}
	}
}

func TestLoadTriangleWarning(t *testing.T) {
	path := writeFile(t, "skewed.yaml", "datacenters: [A, B, C]\nrtt_ms: {A: {B: 10, C: 30}, B: {C: 10}}\n")
	topo, warnings, err := Load(path)
	if err != nil || topo == nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{"triangle inequality violated: RTT(A,C)=30 > RTT(A,B)+RTT(B,C)=10+10"}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings = %q, want %q", warnings, want)
	}

	// Equality, or an excess within the 1e-9 tolerance, is not a violation.
	path = writeFile(t, "flat.yaml", "datacenters: [A, B, C]\nrtt_ms: {A: {B: 0.1, C: 0.30000000000000004}, B: {C: 0.2}}\n")
	if _, warnings, err := Load(path); err != nil || len(warnings) != 0 {
		t.Errorf("flat triangle: warnings %q, err %v", warnings, err)
	}
}

const header = "datacenters: [A, B, C]\n"

// TestLoadErrors checks every file-level validation error: it must be one line and name the file
// and the entry.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		content string
		want    string
	}{
		{"empty file", "t.yaml", "", "datacenters: no datacenters"},
		{"no datacenters", "t.yaml", "datacenters: []\nrtt_ms: {}\n", "datacenters: no datacenters"},
		{"empty name", "t.yaml", `datacenters: [A, ""]`, "datacenters[1]: empty name"},
		{"duplicate name", "t.yaml", "datacenters: [A, B, A]", `datacenters[2]: duplicate name "A"`},
		{"invalid name", "t.yaml", `datacenters: [A, "us east"]`, `datacenters[1]: invalid name "us east"`},
		{"unknown outer DC", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}, D: {A: 4}}",
			`rtt_ms: unknown datacenter "D"`},
		{"unknown inner DC", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2, E: 9}, B: {C: 3}}",
			`rtt_ms: A: unknown datacenter "E"`},
		{"unknown std dev DC", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}}\nstddev_ms: {Z: {A: 1}}",
			`stddev_ms: unknown datacenter "Z"`},
		{"self RTT", "t.yaml", header + "rtt_ms: {A: {A: 0, B: 1, C: 2}, B: {C: 3}}",
			"rtt_ms: A→A: a datacenter has no RTT to itself"},
		{"self std dev", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}}\nstddev_ms: {C: {C: 1}}",
			"stddev_ms: C→C: a datacenter has no std dev to itself"},
		{"missing pair", "t.yaml", header + "rtt_ms: {A: {B: 30}, B: {C: 40}}",
			"rtt_ms: missing RTT between A and C"},
		{"no rtt_ms", "t.yaml", "datacenters: [A, B]", "rtt_ms: missing RTT between A and B"},
		{"null RTT", "t.yaml", header + "rtt_ms: {A: {B: 1, C: ~}, B: {C: 3}}", "rtt_ms: A→C: missing value"},
		{"negative RTT", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2}, C: {B: -3}}",
			"rtt_ms: RTT between B and C is -3, want a number in [0, 60000] (ms)"},
		{"NaN RTT", "t.yaml", header + "rtt_ms: {A: {B: .nan, C: 2}, B: {C: 3}}",
			"rtt_ms: RTT between A and B is NaN, want a number in [0, 60000] (ms)"},
		{"infinite RTT", "t.yaml", header + "rtt_ms: {A: {B: 1, C: .inf}, B: {C: 3}}",
			"rtt_ms: RTT between A and C is +Inf, want a number in [0, 60000] (ms)"},
		{"negative std dev", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}}\nstddev_ms: {A: {C: -0.5}}",
			"stddev_ms: std dev between A and C is -0.5, want a number in [0, 60000] (ms)"},
		{"infinite std dev", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}}\nstddev_ms: {B: {A: -.inf}}",
			"stddev_ms: std dev between A and B is -Inf, want a number in [0, 60000] (ms)"},
		{"asymmetric RTT", "t.yaml", header + "rtt_ms: {A: {B: 30, C: 20}, B: {A: 31, C: 40}}",
			"rtt_ms: asymmetric RTT A→B 30 vs B→A 31"},
		{"asymmetric std dev", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}}\nstddev_ms: {C: {B: 2}, B: {C: 1.5}}",
			"stddev_ms: asymmetric std dev B→C 1.5 vs C→B 2"},
		{"unknown field", "t.yaml", header + "rtt: {A: {B: 1}}", "yaml: line 2: field rtt not found"},
		{"duplicate key", "t.yaml", header + "rtt_ms: {A: {B: 1, C: 2, B: 3}, B: {C: 3}}", `mapping key "B" already defined`},
		{"wrong type", "t.yml", header + "rtt_ms: {A: {B: 30ms}}", "yaml: line 2: cannot unmarshal !!str `30ms`"},
		{"syntax", "t.yaml", "datacenters: [A, B\n", "yaml: line"},
		{"two documents", "t.yaml", header + "---\n" + header, "yaml: more than one document"},

		{"JSON empty", "t.json", "", "json: empty file"},
		{"JSON truncated", "t.json", `{"datacenters": ["A"`, "json: unexpected end of file"},
		{"JSON syntax", "t.json", "{\n\"datacenters\": [\"A\",]}", "json: line 2: invalid character ']'"},
		{"JSON unknown field", "t.json", `{"datacenters": ["A"], "jitter": 1}`, `json: unknown field "jitter"`},
		{"JSON wrong type", "t.json", "{\"datacenters\": [\"A\", \"B\"],\n\"rtt_ms\": {\"A\": {\"B\": \"30\"}}}", "json: line 2: cannot unmarshal string"},
		{"JSON duplicate inner key", "t.json", `{"datacenters": ["A", "B"], "rtt_ms": {"A": {"B": 30, "B": 31}}}`,
			`json: duplicate key "B" in rtt_ms.A`},
		{"JSON duplicate top-level key", "t.json", `{"datacenters": ["A"], "datacenters": ["A", "B"]}`,
			`json: duplicate key "datacenters"`},
		{"JSON trailing data", "t.json", `{"datacenters": ["A"]} {}`, "json: unexpected data after the top-level object"},
		{"JSON null RTT", "t.json", `{"datacenters": ["A", "B"], "rtt_ms": {"A": {"B": null}}}`, "rtt_ms: A→B: missing value"},
		{"JSON asymmetric RTT", "t.json", `{"datacenters": ["A", "B"], "rtt_ms": {"A": {"B": 30}, "B": {"A": 31}}}`,
			"rtt_ms: asymmetric RTT A→B 30 vs B→A 31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, tc.content)
			topo, warnings, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded: %+v, warnings %q", topo, warnings)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "topology "+path+": ") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want %q prefixed by the path %s", msg, tc.want, path)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			if topo != nil || warnings != nil {
				t.Errorf("failed Load returned %+v, %q", topo, warnings)
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	_, _, err := Load(missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(%s) error = %v, want a not-exist error naming the path", missing, err)
	}

	dir := filepath.Join(t.TempDir(), "dir.json")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Load(%s) error = %v, want an error naming the path", dir, err)
	}

	_, _, err = Load("topo.toml")
	if err == nil || !strings.Contains(err.Error(), `"topo.toml": not a preset (alvin-paper-7, aws-3, aws-5, aws-7, aws-helios, aws-mf, cop-fig6.1, sdur-wan1, sdur-wan2, table4.1)`) {
		t.Errorf(`Load("topo.toml") error = %v`, err)
	}
}

// FuzzLoadYAML feeds arbitrary bytes to the YAML loader: it must never panic, and whatever it
// accepts must be a valid, symmetric topology.
func FuzzLoadYAML(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"~",
		"datacenters: [A]",
		header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}}\nstddev_ms: {A: {B: .nan}}",
		header + "rtt_ms: {A: {B: 1, C: 2}, B: {C: 3}, C: {A: 2}}",
		"datacenters: [A, B]\nrtt_ms: {A: {B: &x 5}, B: {A: *x}}",
		"datacenters: !!map {}",
		"rtt_ms: [1, 2]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, _, err := parseFile("fuzz.yaml", data)
		if err != nil {
			if topo != nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q with topology %+v", err, topo)
			}
			return
		}
		if _, err := topo.Validate(); err != nil {
			t.Fatalf("accepted an invalid topology %+v: %v", topo, err)
		}
		for i := range topo.N() {
			for j := range topo.N() {
				if topo.RTTMs[i][j] != topo.RTTMs[j][i] || topo.StdDevMs[i][j] != topo.StdDevMs[j][i] {
					t.Fatalf("accepted an asymmetric topology %+v", topo)
				}
			}
		}
	})
}
