package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsAfterArguments: flags may come before, between or after a command's arguments.
func TestFlagsAfterArguments(t *testing.T) {
	ep := startClientServer(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"client", "put", "k", "v", "--endpoint", ep}, "committed\n"},
		{[]string{"client", "get", "--endpoint=" + ep, "k", "--timeout", "5s"}, "k = v (version t1.1)\n"},
		{[]string{"client", "--endpoint", ep, "snapshot", "k"}, "k = v (version t1.1)\n"},
		{[]string{"client", "put", "--endpoint", ep, "--", "-k", "-v"}, "committed\n"},
		{[]string{"client", "get", "--endpoint", ep, "--", "-k"}, "-k = -v (version t4.1)\n"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != 0 || stdout != tc.want {
			t.Errorf("%q: exit %d, stdout %q, want %q (stderr %q)", tc.args, code, stdout, tc.want, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, "lowerbound", "--topology", "table4.1")
	if code != 0 || !strings.Contains(stdout, "average") {
		t.Errorf("lowerbound: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "repro", "list")
	if code != 0 || !strings.Contains(stdout, "table4.1") || !strings.Contains(stdout, "e4.1") {
		t.Errorf("repro list: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestHelp: --help, -h and 'meridian help COMMAND' print the command's help and flags on stdout
// and exit with status 0.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Available Commands:", "repro", "cluster", "completion"}},
		{[]string{"help"}, []string{"Available Commands:", "lowerbound"}},
		{[]string{"repro", "--help"}, []string{"meridian repro (NAME... | --all) [flags]", "--out", "--jitter-correlation", "list"}},
		{[]string{"help", "repro"}, []string{"--out", "--seed"}},
		{[]string{"repro", "e4.1", "-h"}, []string{"--quiet"}},
		{[]string{"client", "put", "--help"}, []string{"meridian client put K V", "--endpoint", "--timeout"}},
		{[]string{"help", "client", "txn"}, []string{"commit     commit the current transaction"}},
		{[]string{"client", "--help"}, []string{"Available Commands:", "session", "snapshot", "--cluster"}},
		{[]string{"cluster", "up", "-h"}, []string{"--base-port", "--set stringArray", "--tls"}},
		{[]string{"help", "cluster", "status"}, []string{"--dir"}},
		{[]string{"serve", "--help"}, []string{"--storage-log", "--log-level string", `(default "info")`}},
		{[]string{"lowerbound", "--help"}, []string{"--throughput-overhead-ms"}},
		{[]string{"help", "bench"}, []string{"meridian bench [flags]"}},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != 0 || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: help lacks %q:\n%s", tc.args, w, stdout)
			}
		}
	}
	code, stdout, stderr := runCLI(t, "bench", "--help")
	if code != 0 || !strings.Contains(stdout+stderr, "protocols") {
		t.Errorf("bench --help: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestCompletion: the completion command writes each shell's script, and the completions offer
// commands, experiment names and flag values.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, stdout, stderr := runCLI(t, "completion", shell)
		if code != 0 || !strings.Contains(stdout, "meridian") || stderr != "" {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, code, len(stdout), stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "cl"}, []string{"client", "cluster"}},
		{[]string{"__complete", "repro", "table"}, []string{"table4.1"}},
		{[]string{"__complete", "cluster", "up", "--protocol", "hel"}, []string{"helios-0", "helios-b"}},
		{[]string{"__complete", "lowerbound", "--topology", ""}, []string{"aws-helios", "table4.1"}},
		{[]string{"__complete", "serve", "--log-level", ""}, []string{"debug", "error"}},
		{[]string{"__complete", "client", "s"}, []string{"snapshot", "session"}},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: completions lack %q:\n%s", tc.args, w, stdout)
			}
		}
	}
}

// TestUsageErrorsAreOneLine: unknown flags and commands, malformed flag values and wrong
// arguments exit with status 2 and print one line, "meridian: PROBLEM".
func TestUsageErrorsAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "meridian: unknown flag: --bogus"},
		{[]string{"nonsense"}, `meridian: unknown command "nonsense" (want bench, lowerbound`},
		{[]string{"repor"}, `meridian: unknown command "repor" (did you mean repro?)`},
		{[]string{"repro", "--bogus"}, "meridian: repro: unknown flag: --bogus"},
		{[]string{"repro", "table4.1", "--bogus"}, "meridian: repro: unknown flag: --bogus"},
		{[]string{"repro", "table4.1", "--seed", "-1"}, `meridian: repro: invalid argument "-1" for "--seed" flag`},
		{[]string{"repro", "nonsense"}, `meridian: repro: unknown experiment "nonsense"`},
		{[]string{"repro", "table4.1", "--all"}, "meridian: repro: give experiment names or --all, not both"},
		{[]string{"repro"}, "meridian: repro: name an experiment"},
		{[]string{"repro", "list", "extra"}, `meridian: repro list: unexpected argument "extra"`},
		{[]string{"lowerbound", "--bogus"}, "meridian: lowerbound: unknown flag: --bogus"},
		{[]string{"lowerbound", "stray"}, `meridian: lowerbound: unexpected argument "stray"`},
		{[]string{"lowerbound", "--throughput-overhead-ms", "x"}, `invalid argument "x" for "--throughput-overhead-ms"`},
		{[]string{"protocols", "x"}, `meridian: protocols: unexpected argument "x"`},
		{[]string{"serve", "--bogus"}, "meridian: serve: unknown flag: --bogus"},
		{[]string{"serve"}, "meridian: serve: --config and --node are required"},
		{[]string{"serve", "--config", "c.yaml", "--node", "A", "--log-level", "loud"}, `--log-level must be debug, info, warn or error, not "loud"`},
		{[]string{"serve", "--config", "c.yaml", "--node", "A", "--log-format", "xml"}, `--log-format must be text or json, not "xml"`},
		{[]string{"serve", "--config", "/nonexistent/c.yaml", "--node", "A"}, "meridian: "},
		{[]string{"cluster", "up", "--bogus"}, "meridian: cluster up: unknown flag: --bogus"},
		{[]string{"cluster", "up", "--dir", "d", "--topology", "table4.1"}, "meridian: cluster up: --protocol is required"},
		{[]string{"cluster", "down"}, "meridian: cluster down: --dir is required"},
		{[]string{"cluster", "status", "--dir"}, "meridian: cluster status: flag needs an argument: --dir"},
		{[]string{"cluster", "frob"}, `meridian: cluster: unknown command "frob" (want up, down, status or add)`},
		{[]string{"cluster", "add", "--dir", "d", "--dc", "A"}, "meridian: cluster add: --stage is required (batcher, filter, queue or maintainer)"},
		{[]string{"cluster", "add", "--dir", "d", "--dc", "A", "--stage", "sender"}, `meridian: no stage "sender" can join a running Chariots deployment (want queue, maintainer, batcher, filter)`},
		{[]string{"cluster", "add", "--dir", "/nonexistent", "--dc", "A", "--stage", "queue"}, "meridian: cluster file: open /nonexistent/cluster.yaml"},
		{[]string{"client", "get", "k", "--bogus"}, "meridian: client get: unknown flag: --bogus"},
		{[]string{"client", "--timeout", "soon", "get", "k"}, `meridian: client get: invalid argument "soon" for "--timeout"`},
		{[]string{"client", "get", "k"}, "meridian: client: --endpoint is required"},
		{[]string{"client", "put", "k", "-1", "--endpoint", "x"}, "meridian: client put: unknown shorthand flag: '1' in -1"},
		{[]string{"completion", "bogus"}, `meridian: unknown command "bogus" for "meridian completion"`},
		{[]string{"help", "nonsense"}, `meridian: help: unknown command "nonsense"`},
		{[]string{"help", "cluster", "frob"}, `meridian: help: unknown command "cluster frob"`},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "meridian: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want status 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
	// Without a command: the usage, then the problem.
	for _, args := range [][]string{{}, {"cluster"}, {"completion"}} {
		code, _, stderr := runCLI(t, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || !strings.Contains(stderr, "Usage:") || !strings.HasPrefix(lines[len(lines)-1], "meridian: ") {
			t.Errorf("%q: exit %d, stderr %q; want status 2, the usage and a last line naming the problem", args, code, stderr)
		}
	}
}

// TestRuntimeFailureExitsOne: a failure at run time is one line and status 1.
func TestRuntimeFailureExitsOne(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	code, _, stderr := runCLI(t, "client", "get", "k", "--endpoint", dead, "--timeout", "1s")
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "meridian: cannot register with "+dead) {
		t.Errorf("unreachable endpoint: exit %d, stderr %q", code, stderr)
	}
}

// TestIsTerminal: only a character device is a terminal; buffers, files and pipes are not.
func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a bytes.Buffer is a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) {
		t.Error("a pipe is a terminal")
	}
}
