package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/verify/history"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestLowerBoundCommand checks the acceptance values and the JSON contract.
func TestLowerBoundCommand(t *testing.T) {
	for _, tc := range []struct {
		topology string
		want     map[string]float64
		avg      float64
	}{
		{"table4.1", map[string]float64{"A": 5, "B": 25, "C": 15}, 15},
		{"aws-helios", map[string]float64{"V": 69, "O": 10, "C": 10, "I": 166, "S": 200}, 91},
	} {
		t.Run(tc.topology, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "lb.json")
			code, stdout, stderr := runCLI(t, "lowerbound", "--topology", tc.topology, "--json", file)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "average") || !strings.Contains(stdout, "offsets") {
				t.Errorf("output lacks the average or the offset matrix:\n%s", stdout)
			}
			var got struct {
				Datacenters []struct {
					Name      string  `json:"name"`
					LatencyMs float64 `json:"latency_ms"`
				} `json:"datacenters"`
				AverageMs float64 `json:"average_ms"`
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Datacenters) != len(tc.want) {
				t.Fatalf("%d datacenters in JSON, want %d", len(got.Datacenters), len(tc.want))
			}
			for _, dc := range got.Datacenters {
				if d := dc.LatencyMs - tc.want[dc.Name]; d > 0 || d < -1 {
					t.Errorf("%s: %.2f ms, want within 1 ms below %.0f", dc.Name, dc.LatencyMs, tc.want[dc.Name])
				}
			}
			if d := got.AverageMs - tc.avg; d > 0 || d < -1 {
				t.Errorf("average %.2f, want within 1 ms below %.0f", got.AverageMs, tc.avg)
			}
		})
	}
}

// TestBadInputExitsTwo checks that bad flags and files give one line on stderr and status 2.
func TestBadInputExitsTwo(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("datacenters: [A, B]\nrtt_ms:\n  A: {B: -3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"nonsense"},
		{"bench", "--clients-per-dc", "zero"},
		{"bench", "--protocols", "paxos-9"},
		{"bench", "--topology", "nowhere"},
		{"bench", "--topology", bad},
		{"bench", "--duration", "-1s"},
		{"bench", "--fault", "crash:Q@1s-2s"},
		{"bench", "--fault", "melt:V"},
		{"bench", "--skew", "V=fast"},
		{"bench", "--set", "gt"},
		{"bench", "--protocols", "helios-0", "--set", "bogus=1"},
		{"bench", "--workload", "tcc", "--keys", "10"},
		{"bench", "--protocols", "helios-0,fastccs"},
		{"bench", "--workload", "tcc", "--protocols", "helios-0"},
		{"bench", "--cluster", "no-such-cluster.yaml"},
		{"bench", "--keys", "0"},
		{"bench", "stray"},
		{"lowerbound", "--topology", bad},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr)
			continue
		}
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); !strings.HasPrefix(lines[len(lines)-1], "meridian") {
			t.Errorf("%v: last stderr line %q does not name the problem", args, lines[len(lines)-1])
		}
	}
}

// TestBenchJSONAndHistory runs a short bench and checks the --json contract and that the
// --history file reads back and names every transaction.
func TestBenchJSONAndHistory(t *testing.T) {
	dir := t.TempDir()
	jsonFile, histFile := filepath.Join(dir, "out.json"), filepath.Join(dir, "h.jsonl")
	code, stdout, stderr := runCLI(t, "bench", "--topology", "table4.1", "--protocols", "helios-0",
		"--duration", "2s", "--warmup", "500ms", "--clients-per-dc", "2", "--keys", "100", "--seed", "3",
		"--json", jsonFile, "--history", histFile, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"helios-0 on table4.1", "mean ms", "bound ms", "checker: ok"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	var got struct {
		Runs []struct {
			Protocol    string `json:"protocol"`
			Topology    string `json:"topology"`
			Seed        uint64 `json:"seed"`
			Datacenters []struct {
				Name          string             `json:"name"`
				CommitLatency map[string]float64 `json:"commit_latency_ms"`
				LowerBoundMs  *float64           `json:"lower_bound_ms"`
				CommittedTPS  *float64           `json:"committed_tps"`
				OpsPerSec     *float64           `json:"ops_per_s"`
				AbortRate     *float64           `json:"abort_rate"`
			} `json:"datacenters"`
			Checker struct {
				OK        bool `json:"ok"`
				Anomalies *int `json:"anomalies"`
			} `json:"checker"`
		} `json:"runs"`
	}
	data, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || got.Runs[0].Protocol != "helios-0" || got.Runs[0].Topology != "table4.1" || got.Runs[0].Seed != 3 {
		t.Fatalf("runs = %+v", got.Runs)
	}
	r := got.Runs[0]
	if len(r.Datacenters) != 3 || !r.Checker.OK || r.Checker.Anomalies == nil {
		t.Fatalf("run = %+v", r)
	}
	for _, dc := range r.Datacenters {
		if dc.LowerBoundMs == nil || dc.CommittedTPS == nil || dc.OpsPerSec == nil || dc.AbortRate == nil || len(dc.CommitLatency) != 3 {
			t.Errorf("%s: missing fields in %s", dc.Name, data)
		}
	}
	f, err := os.Open(histFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.ReadJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Txns) == 0 || len(h.Replicas) != 1 {
		t.Fatalf("history has %d transactions and %d version orders", len(h.Txns), len(h.Replicas))
	}
}

// TestBenchTCCJSONAndHistory runs the TCC workload on two protocols (picked by their family,
// without --workload) and checks the one JSON shape (a datacenters entry for the single
// datacenter, the workload's figures) and one history file per protocol, each with its
// read-only and write-only transactions and the version order of every partition's keys.
func TestBenchTCCJSONAndHistory(t *testing.T) {
	dir := t.TempDir()
	jsonFile, histFile := filepath.Join(dir, "out.json"), filepath.Join(dir, "h.jsonl")
	code, stdout, stderr := runCLI(t, "bench", "--protocols", "fastccs,ec", "--partitions", "2", "--clients-per-dc", "4",
		"--duration", "2s", "--warmup", "500ms", "--cooldown", "500ms", "--json", jsonFile, "--history", histFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "TCC workload on one datacenter: 2 partitions") {
		t.Errorf("table:\n%s", stdout)
	}
	var got struct {
		Runs []struct {
			Protocol    string `json:"protocol"`
			Workload    string `json:"workload"`
			Partitions  int    `json:"partitions"`
			Datacenters []struct {
				Name         string  `json:"name"`
				CommittedTPS float64 `json:"committed_tps"`
			} `json:"datacenters"`
			Metrics struct {
				RotRounds map[string]int `json:"rot_rounds"`
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
	if len(got.Runs) != 2 {
		t.Fatalf("runs = %+v", got.Runs)
	}
	for _, r := range got.Runs {
		if r.Workload != "tcc" || r.Partitions != 2 || len(r.Datacenters) != 1 || r.Datacenters[0].CommittedTPS <= 0 || len(r.Metrics.RotRounds) != 3 {
			t.Errorf("run = %+v", r)
		}
		f, err := os.Open(filepath.Join(dir, "h."+r.Protocol+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		h, err := history.ReadJSONL(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		reads, writes := 0, 0
		for _, tx := range h.Txns {
			reads += len(tx.Reads)
			writes += len(tx.Writes)
		}
		if reads == 0 || writes == 0 || len(h.Replicas) != 1 {
			t.Fatalf("%s: %d reads, %d writes, %d version orders", r.Protocol, reads, writes, len(h.Replicas))
		}
		for _, tx := range h.Txns {
			for _, k := range tx.Writes {
				if tx.Status == txn.Committed && !slices.Contains(h.Replicas[0].VersionOrder[k], tx.ID) {
					t.Fatalf("%s: the version order of %s lacks %s, which committed a write to it", r.Protocol, k, tx.ID)
				}
			}
		}
	}
}

// TestRunInOrder: results are reported in index order whatever order the runs finish in, and
// the first error in index order is returned after the results before it.
func TestRunInOrder(t *testing.T) {
	for _, parallel := range []int{1, 2, 5} {
		var got []string
		err := runInOrder(5, parallel, func(i int) (*bench.Result, error) {
			time.Sleep(time.Duration(5-i) * time.Millisecond) // later runs finish first
			if i == 3 {
				return nil, errors.New("run 3 failed")
			}
			return &bench.Result{Protocol: strconv.Itoa(i)}, nil
		}, func(r *bench.Result) { got = append(got, r.Protocol) })
		if err == nil || err.Error() != "run 3 failed" || strings.Join(got, ",") != "0,1,2" {
			t.Errorf("parallel %d: reported %v, error %v; want 0,1,2 then run 3's error", parallel, got, err)
		}
	}
}
