package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchEPaxos: `meridian bench --protocols epaxos` on the default workload (shortened) exits
// 0 with a clean checker, prints the ordering line under the table, and writes the ordering
// figures into the JSON.
func TestBenchEPaxos(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.json")
	code, stdout, stderr := runCLI(t, "bench", "--protocols", "epaxos", "--duration", "5s", "--quiet", "--json", file)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	if !strings.Contains(stdout, "ordering: fast path") || !strings.Contains(stdout, "checker: ok") {
		t.Fatalf("output lacks the ordering line or a clean verdict:\n%s", stdout)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Runs []struct {
			Ordering *struct {
				FastDecisions int     `json:"fast_decisions"`
				FastPathShare float64 `json:"fast_path_share"`
				Components    int     `json:"components"`
			} `json:"ordering"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || got.Runs[0].Ordering == nil || got.Runs[0].Ordering.FastDecisions == 0 || got.Runs[0].Ordering.Components == 0 {
		t.Fatalf("JSON runs %+v: want one run with ordering figures", got.Runs)
	}
}
