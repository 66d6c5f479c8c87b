package main

import (
	"strings"
	"testing"
)

// TestBenchNodesPerDC: --nodes-per-dc 3 runs a full-replication protocol on three replicas per
// site (aws-3x3: VA_0 … TK_2), and is refused for the partitioned workloads.
func TestBenchNodesPerDC(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "--workload", "bank", "--protocols", "multipaxos-lo", "--topology", "aws-3",
		"--nodes-per-dc", "3", "--clients-per-dc", "1", "--audit-clients-per-dc", "0", "--duration", "2s", "--warmup", "500ms", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"multipaxos-lo on aws-3x3", "VA_0", "IE_1", "TK_2", "checker: ok"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	code, _, stderr = runCLI(t, "bench", "--workload", "micro", "--nodes-per-dc", "3", "--quiet")
	if code != 2 || !strings.Contains(stderr, "--nodes-per-dc is for full-replication protocols") {
		t.Errorf("micro with --nodes-per-dc: exit %d: %s", code, stderr)
	}
}

// TestClusterUpNodesPerDCRefusals: cluster up --nodes-per-dc refuses a partitioned protocol and
// a count the topology cannot take, before starting anything.
func TestClusterUpNodesPerDCRefusals(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "cluster", "up", "--dir", dir, "--topology", "aws-3", "--protocol", "fastccs", "--nodes-per-dc", "3")
	if code != 2 || !strings.Contains(stderr, "--nodes-per-dc is for full-replication protocols") {
		t.Errorf("fastccs: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "cluster", "up", "--dir", dir, "--topology", "aws-7", "--protocol", "alvin", "--nodes-per-dc", "10")
	if code != 2 || !strings.Contains(stderr, "exceed") {
		t.Errorf("7 sites × 10 nodes: exit %d: %s", code, stderr)
	}
}
