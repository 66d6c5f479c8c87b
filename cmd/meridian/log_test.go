package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

// TestLogCommandErrors: `meridian log` names the problem with bad input, with exit status 2,
// before dialling anything.
func TestLogCommandErrors(t *testing.T) {
	dir := t.TempDir()
	topo, _ := topology.Preset("table4.1")
	data, err := cluster.Generate(topo, "table4.1", "helios-0", dir, 7100).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	helios := filepath.Join(dir, "helios.yaml")
	if err := os.WriteFile(helios, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"log"}, "log: missing command"},
		{[]string{"log", "push"}, `unknown command "push"`},
		{[]string{"log", "append", "--cluster", "c.yaml"}, "want exactly one BODY"},
		{[]string{"log", "append", "--cluster", "c.yaml", "--tag", "=v", "x"}, "empty tag name"},
		{[]string{"log", "append", "--cluster", "c.yaml", "--deps", "1,x", "x"}, "x is not a TOId"},
		{[]string{"log", "append", "x"}, "--cluster FILE is required"},
		{[]string{"log", "read", "--cluster", "c.yaml", "0"}, "positions from 1"},
		{[]string{"log", "read", "--cluster", "c.yaml", "7-3"}, "ends before it starts"},
		{[]string{"log", "read", "--cluster", "c.yaml", "a-b"}, "want FROM, FROM- or FROM-TO"},
		{[]string{"log", "read", "--cluster", "c.yaml"}, "want one position range"},
		{[]string{"log", "read", "--cluster", "c.yaml", "--tag", "k", "1"}, "--tag takes no position range"},
		{[]string{"log", "read", "--cluster", "c.yaml", "--tag", "k=v", "--op", "like"}, "--op like: want eq, lt, le, gt or ge"},
		{[]string{"log", "read", "--cluster", "c.yaml", "--tag", "k", "--op", "lt"}, "give --tag NAME=VALUE"},
		{[]string{"log", "read", "--cluster", "c.yaml", "--limit", "3", "1-2"}, "go with --tag"},
		{[]string{"log", "tail", "--cluster", "c.yaml", "-n", "-1"}, "want 0 or more"},
		{[]string{"log", "tail", "--cluster", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		{[]string{"log", "tail", "--cluster", helios}, "runs helios-0, not a shared log"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want it to contain %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestHyksosClientErrors: `meridian client --cluster` on a shared-log cluster takes Hyksos's
// commands and names the problem with bad ones, with exit status 2, before dialling anything.
func TestHyksosClientErrors(t *testing.T) {
	dir := t.TempDir()
	topo, _ := topology.Preset("table4.1")
	e, err := registry.Lookup("chariots")
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := e.Nodes(nil, topo.N())
	roles, _ := e.Roles(nil, topo.N())
	data, err := cluster.GenerateNamed(topo, "table4.1", "chariots", dir, 7100, nodes, roles).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "chariots.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"client", "--cluster", file}, "missing command (want put, get or get-txn on a shared-log cluster)"},
		{[]string{"client", "--cluster", file, "put", "k"}, "put takes a key and a value, got 1"},
		{[]string{"client", "--cluster", file, "get", "a", "b"}, "get takes one key, got 2"},
		{[]string{"client", "--cluster", file, "get-txn"}, "get-txn takes at least one key"},
		{[]string{"client", "--cluster", file, "get-txn", "a", ""}, "a key of 1 to"},
		{[]string{"client", "--cluster", file, "read", "k"}, `unknown command "read" for a shared-log cluster`},
		{[]string{"client", "--endpoint", "x:1", "get-txn", "k"}, "get-txn is for Hyksos on a shared log"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want it to contain %q", tc.args, code, stderr, tc.want)
		}
	}
}
