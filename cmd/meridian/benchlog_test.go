package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocols/log/logsim"
)

// TestBenchLog runs `meridian bench --workload log` briefly and reads its JSON (per-stage series)
// and history (every datacenter's log, per-host TOIds in order).
func TestBenchLog(t *testing.T) {
	dir := t.TempDir()
	js, hist := filepath.Join(dir, "log.json"), filepath.Join(dir, "log.jsonl")
	code, out, errOut := runCLI(t, "bench", "--workload", "log", "--duration", "300ms", "--clients-per-dc", "2",
		"--set", "batchers=2", "--json", js, "--history", hist)
	if code != 0 || !strings.Contains(out, "checks passed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep logsim.Report
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &rep) != nil || rep.Appends == 0 || len(rep.Stages) == 0 || len(rep.Stages[0].Records) != 3 {
		t.Fatalf("report: %v %+v", err, rep)
	}
	f, err := os.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	next := map[[2]int]uint64{}
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var h logsim.HistoryLine
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		k := [2]int{h.DC, h.Host}
		if next[k]++; h.TOId != next[k] {
			t.Fatalf("datacenter %d: host %d's TOId %d where %d was due", h.DC, h.Host, h.TOId, next[k])
		}
	}
	if want := 3 * rep.Appends; lines != want {
		t.Fatalf("history holds %d records, want %d (every append in three logs)", lines, want)
	}
	if code, _, _ := runCLI(t, "bench", "--workload", "log", "--protocols", "helios-1"); code != 2 {
		t.Fatalf("--workload log on helios-1 exits %d, want 2", code)
	}
}

// TestBenchHyksos runs `meridian bench --workload hyksos` briefly: puts, gets and GET_TXNs,
// every read checked (CH-I9); --rate does not apply (closed loop).
func TestBenchHyksos(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "--workload", "hyksos", "--duration", "300ms", "--clients-per-dc", "2", "--keys", "20")
	if code != 0 || !strings.Contains(out, "checks passed") || !strings.Contains(out, "CH-I9") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "bench", "--workload", "hyksos", "--rate", "10"); code != 2 {
		t.Fatalf("--workload hyksos --rate exits %d, want 2", code)
	}
}
