package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReproOut runs the fastest experiment with --out and --json after its name: the directory
// gets the experiment's page, claims, data and plot and the index page, and the JSON keeps its
// shape. Standard error is no terminal, so there is no progress line.
func TestReproOut(t *testing.T) {
	dir := t.TempDir()
	out, jsonFile := filepath.Join(dir, "out"), filepath.Join(dir, "claims.json")
	code, stdout, stderr := runCLI(t, "repro", "table4.1", "--out", out, "--json", jsonFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "table4.1: 0 claims, 0 match") { // its solver's outputs are unit tests
		t.Errorf("stdout lacks the claims:\n%s", stdout)
	}
	if stderr != "" {
		t.Errorf("stderr is not a terminal but got %q", stderr)
	}
	for _, f := range []string{"index.html", "table4.1/index.html", "table4.1/claims.csv", "table4.1/latency.csv", "table4.1/latency.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	data, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Experiments []map[string]json.RawMessage
		Summary     map[string]json.RawMessage
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Experiments) != 1 || got.Summary == nil {
		t.Fatalf("JSON = %s", data)
	}
	for key := range got.Experiments[0] {
		if key != "name" && key != "title" && key != "claims" && key != "summary" && key != "series" {
			t.Errorf("JSON experiment has field %q: %s", key, data)
		}
	}
}

// TestProgressLine checks the bar fills with the finished experiments and long steps are cut.
func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		done, n int
		step    string
		want    string
	}{
		{0, 4, "table4.1: solving", "[....................] 1/4 1m5s table4.1: solving"},
		{2, 4, "e4.1: helios-2, 60 virtual s", "[##########..........] 3/4 1m5s e4.1: helios-2, 60 virtual s"},
		{2, 3, strings.Repeat("x", 100), "[#############.......] 3/3 1m5s " + strings.Repeat("x", 69) + "…"},
	} {
		if got := progressLine(tc.done, tc.n, 65*time.Second, tc.step); got != tc.want {
			t.Errorf("progressLine(%d, %d, %q) = %q, want %q", tc.done, tc.n, tc.step, got, tc.want)
		}
	}
}

// TestReproDoc regenerates a document from a saved run, compared with another saved run.
func TestReproDoc(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run.json")
	src, out := filepath.Join(dir, "src.md"), filepath.Join(dir, "out.md")
	data := `{"experiments": [{"name": "x1", "title": "X", "claims": [{"claim": "c", "paper": "1 ms", "ours": "1.1 ms", "tolerance": "±0.2 ms", "verdict": "matches"}]}]}`
	if err := os.WriteFile(run, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("{{claims \"x1\"}}\nbefore: {{tally \"old\" \"x1\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "repro", "doc", "--json", run, "--source", src, "--out", out, "--compare", "old="+run); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| c | 1 ms | 1.1 ms | ±0.2 ms | matches |", "**x1: 1 claims, 1 match", "before: 1 of 1"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("document lacks %q:\n%s", want, got)
		}
	}
	if code, _, _ := runCLI(t, "repro", "doc", "--json", run, "--source", src, "--out", out, "--compare", "nolabel"); code == 0 {
		t.Error("--compare without LABEL= was accepted")
	}
}
