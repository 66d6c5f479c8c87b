package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

const clusterUsage = `usage: meridian cluster <command> --dir DIR [flags]

commands:
  up       start a local cluster: one server per datacenter on 127.0.0.1, WAN emulated
           (--topology NAME|FILE --protocol P [--partitions N] [--base-port 7100] [--set k=v ...]
           [--timeout 30s]); a partitioned protocol (fastccs, eiger, wren, ec) runs N servers
           per datacenter, one per partition
  down     stop the cluster's servers
  status   show each server's process, health and replication status
The cluster file, logs and pid files live in DIR (cluster.yaml, logs/, pids/).
`

// runCluster handles `meridian cluster up|down|status`.
func runCluster(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, clusterUsage)
		return usagef("cluster: missing command (up, down or status)")
	}
	switch args[0] {
	case "up":
		return runClusterUp(args[1:], stdout, stderr)
	case "down":
		dir, err := clusterDir("down", args[1:], stderr)
		if err != nil {
			return err
		}
		return cluster.Down(dir, stdout)
	case "status":
		dir, err := clusterDir("status", args[1:], stderr)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, "cluster.yaml")); err != nil {
			return usagef("cluster status: no cluster in %s (%v)", dir, err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return cluster.Status(ctx, dir, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, clusterUsage)
		return nil
	}
	return usagef("cluster: unknown command %q (want up, down or status)", args[0])
}

// clusterDir parses the flags of down and status: just --dir.
func clusterDir(cmd string, args []string, stderr io.Writer) (string, error) {
	fs := newFlagSet("cluster "+cmd, stderr)
	dir := fs.String("dir", "", "the cluster's directory (required)")
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if *dir == "" {
		return "", usagef("cluster %s: --dir is required", cmd)
	}
	return *dir, nil
}

func runClusterUp(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster up", stderr)
	dir := fs.String("dir", "", "directory for the cluster file, logs, pid files and data (required)")
	topoFlag := fs.String("topology", "", "topology preset ("+strings.Join(topology.PresetNames(), ", ")+") or YAML/JSON file (required)")
	proto := fs.String("protocol", "", "protocol ("+strings.Join(registry.Names(), ", ")+") (required)")
	basePort := fs.Int("base-port", 7100, "first TCP port; each node uses three consecutive ports (peer, client, metrics)")
	partitions := fs.Int("partitions", 1, "servers per datacenter, one per key-space partition (partitioned protocols only)")
	timeout := fs.Duration("timeout", cluster.DefaultStartTimeout, "how long to wait for every node's /healthz")
	var params listFlag
	fs.Var(&params, "set", "protocol parameter, repeatable: name=value (e.g. interval=10ms)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *dir == "":
		return usagef("cluster up: --dir is required")
	case *topoFlag == "":
		return usagef("cluster up: --topology is required")
	case *proto == "":
		return usagef("cluster up: --protocol is required (%s)", strings.Join(registry.Names(), ", "))
	case *timeout <= 0:
		return usagef("cluster up: --timeout %s: want a positive duration", *timeout)
	}
	entry, err := registry.Lookup(*proto)
	if err != nil {
		return usageError{err}
	}
	switch {
	case *partitions < 1:
		return usagef("cluster up: --partitions %d: want at least 1", *partitions)
	case *partitions > 1 && entry.NewClient == nil:
		return usagef("cluster up: --partitions %d: protocol %s is not partitioned (it runs one full replica per datacenter)", *partitions, *proto)
	}
	topo, err := loadTopology(*topoFlag, stderr)
	if err != nil {
		return err
	}
	nodes := topo.N() * *partitions
	if last := *basePort + 3*nodes - 1; *basePort < 1 || last > 65535 {
		return usagef("cluster up: --base-port %d: the %d nodes need ports %d..%d, want 1..65535",
			*basePort, nodes, *basePort, last)
	}
	p, err := parseParams(params)
	if err != nil {
		return usageError{err}
	}
	binary, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the meridian binary: %w", err)
	}
	cfg := cluster.GeneratePartitioned(topo, *topoFlag, *proto, *dir, *basePort, *partitions)
	cfg.Params = p
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := cluster.Up(ctx, cfg, *dir, binary, nil, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "status: meridian cluster status --dir %s\nstop:   meridian cluster down --dir %s\n", *dir, *dir)
	return nil
}
