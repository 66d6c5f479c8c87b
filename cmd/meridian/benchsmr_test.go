package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchTPCCAndBank runs both workloads briefly from the command line: the per-type table
// and the audits are printed, retries are on by default (the end-to-end columns), and the JSON
// carries the workload's figures.
func TestBenchTPCCAndBank(t *testing.T) {
	dir := t.TempDir()
	jsonFile := filepath.Join(dir, "out.json")
	code, stdout, stderr := runCLI(t, "bench", "--workload", "tpcc", "--protocols", "2pc-paxos", "--topology", "table4.1",
		"--duration", "3s", "--warmup", "1s", "--clients-per-dc", "3", "--districts", "2", "--customers", "20", "--items", "100",
		"--mix", "ro50", "--json", jsonFile, "--quiet")
	if code != 0 {
		t.Fatalf("tpcc: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"e2e mean ms", "TPC-C ro50 mix, 3 warehouses", "new_order", "stock_level", "checker: ok"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tpcc table lacks %q:\n%s", want, stdout)
		}
	}
	var got struct {
		Runs []struct {
			Workload string `json:"workload"`
			Metrics  struct {
				Types map[string]struct {
					Committed int `json:"committed"`
				} `json:"types"`
				Checked struct {
					Orders int `json:"orders"`
				} `json:"checked"`
				Consistency []string `json:"consistency_violations"`
			} `json:"workload_metrics"`
		} `json:"runs"`
	}
	data, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if r := got.Runs[0]; r.Workload != "tpcc" || len(r.Metrics.Types) != 5 || r.Metrics.Checked.Orders == 0 || r.Metrics.Consistency == nil {
		t.Fatalf("run = %+v\n%s", r, data)
	}

	code, stdout, stderr = runCLI(t, "bench", "--workload", "bank", "--protocols", "helios-1", "--topology", "table4.1",
		"--duration", "3s", "--warmup", "1s", "--clients-per-dc", "3", "--accounts", "300", "--audit-interval", "1s", "--quiet")
	if code != 0 || !strings.Contains(stdout, "Bank: 300 accounts;") || !strings.Contains(stdout, "audit at quiescence: true") {
		t.Fatalf("bank: exit %d:\n%s%s", code, stdout, stderr)
	}
}

// TestBenchTPCCAndBankUsage: the other workloads' flags are refused, and bad settings exit 2.
func TestBenchTPCCAndBankUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--workload", "tpcc", "--accounts", "10"},
		{"bench", "--workload", "bank", "--mix", "write"},
		{"bench", "--workload", "tycsb", "--districts", "2"},
		{"bench", "--workload", "tpcc", "--keys", "10"},
		{"bench", "--workload", "tpcc", "--mix", "ro101"},
		{"bench", "--workload", "tpcc", "--items", "3"},
		{"bench", "--workload", "bank", "--accounts", "1"},
		{"bench", "--workload", "bank", "--protocols", "fastccs"},
		{"bench", "--workload", "bank", "--retry=false", "--retry-backoff", "1ms"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
	}
}
