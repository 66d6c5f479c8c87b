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
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
)

// newClusterCmd returns the cluster command and its subcommands up, down and status.
func newClusterCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster (up | down | status | add) --dir DIR [flags]",
		Short: "start, stop, inspect or grow a local multi-datacenter cluster (up, down, status, add)",
		Long: `Start, stop or inspect a local multi-datacenter cluster: one server per datacenter (one per
partition and datacenter for a partitioned protocol) on 127.0.0.1, with the WAN emulated. The
cluster file, logs and pid files live in DIR (cluster.yaml, logs/, pids/). add makes a spare
stage of a running Chariots cluster join it under load.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				fmt.Fprint(stderr, cmd.UsageString())
				return usagef("cluster: missing command (up, down, status or add)")
			}
			return usagef("cluster: unknown command %q (want up, down, status or add)", args[0])
		},
	}
	cmd.AddCommand(
		newClusterUpCmd(stdout, stderr),
		newClusterAddCmd(stdout),
		newClusterDirCmd("down", "stop the cluster's servers", func(dir string) error {
			return cluster.Down(dir, stdout)
		}),
		newClusterDirCmd("status", "show each server's process, health and replication status", func(dir string) error {
			if _, err := os.Stat(filepath.Join(dir, "cluster.yaml")); err != nil {
				return usagef("cluster status: no cluster in %s (%v)", dir, err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return cluster.Status(ctx, dir, stdout)
		}),
	)
	return cmd
}

// newClusterDirCmd returns `meridian cluster NAME --dir DIR`, which runs run(DIR).
func newClusterDirCmd(name, short string, run func(dir string) error) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   name + " --dir DIR",
		Short: short,
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return usagef("cluster %s: --dir is required", name)
			}
			return run(dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the cluster's directory (required)")
	_ = cmd.MarkFlagDirname("dir")
	return cmd
}

// clusterUpOptions are the flags of `meridian cluster up`.
type clusterUpOptions struct {
	dir, topology, protocol string
	basePort, partitions    int
	replicas, nodesPerDC    int
	timeout                 time.Duration
	params                  []string
	tls, admin              bool
	checkpointBytes         int64
	recordVersions          bool
}

// newClusterUpCmd returns `meridian cluster up`.
func newClusterUpCmd(stdout, stderr io.Writer) *cobra.Command {
	var o clusterUpOptions
	cmd := &cobra.Command{
		Use:   "up --dir DIR --topology T --protocol P [flags]",
		Short: "start a local cluster: one server per datacenter on 127.0.0.1, WAN emulated",
		Long: `Start a local cluster: one server per datacenter on 127.0.0.1, with the topology's WAN delays
emulated, and wait until every node is healthy. A partitioned protocol (fastccs, eiger, wren, ec,
fastccs-geo) runs --partitions servers per datacenter, one per partition. DIR receives the
cluster file (cluster.yaml), the nodes' logs (logs/), pid files (pids/) and data. With --tls the
nodes use mutual TLS: DIR/tls receives a new certificate authority (ca.pem), a certificate per
node naming it (node-NAME.pem, node-NAME-key.pem) and a client certificate for benches and
clients (client.pem, client-key.pem).`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runClusterUp(o, stdout, stderr) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "directory for the cluster file, logs, pid files and data (required)")
	f.StringVar(&o.topology, "topology", "", topologyUsage+" (required)")
	f.StringVar(&o.protocol, "protocol", "", "protocol ("+strings.Join(registry.Names(), ", ")+") (required)")
	f.IntVar(&o.basePort, "base-port", 7100, "first TCP port; each node uses three consecutive ports (peer, client, metrics)")
	f.IntVar(&o.partitions, "partitions", 1, "servers per datacenter, one per key-space partition (partitioned protocols only); partitioned read-write protocols (sdur): partitions in all")
	f.IntVar(&o.replicas, "replicas", 3, "partitioned read-write protocols (sdur): replicas of every partition, placed as the spec on sdur-wan1/sdur-wan2, round robin elsewhere")
	f.IntVar(&o.nodesPerDC, "nodes-per-dc", 1, "full-replication protocols: full replicas per site of --topology, 0.5 ms apart (site S's node k is datacenter and node S_k; the topology goes to DIR/"+cluster.PerSiteTopologyFile+"; ALVIN spec's 1 or 3)")
	f.DurationVar(&o.timeout, "timeout", cluster.DefaultStartTimeout, "how long to wait for every node's /healthz")
	f.StringArrayVar(&o.params, "set", nil, "protocol parameter, repeatable: name=value (e.g. interval=10ms)")
	f.BoolVar(&o.tls, "tls", false, "mutual TLS between nodes and with clients: generate a CA and certificates in DIR/tls")
	f.Int64Var(&o.checkpointBytes, "checkpoint-bytes", 0, "input a node logs between two checkpoints of its replica, at least (0: the default, 1 MiB; -1: never checkpoint, keep the whole input log)")
	f.BoolVar(&o.recordVersions, "record-versions", true, "causal (TCC) protocols: record every version's order on the nodes' disks for /versions, which `bench --cluster` and `nemesis` check runs with; it grows with the run (a small key per version written), so a cluster left running unchecked may switch it off with --record-versions=false (old versions are pruned either way)")
	f.BoolVar(&o.admin, "admin", false, "serve the nemesis's fault-injection endpoints (/admin/cut, /admin/heal, /admin/skew) on the metrics ports")
	_ = cmd.MarkFlagDirname("dir")
	completeTopology(cmd, "topology")
	_ = cmd.RegisterFlagCompletionFunc("protocol", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return registry.Names(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// runClusterUp runs `meridian cluster up`.
func runClusterUp(o clusterUpOptions, stdout, stderr io.Writer) error {
	switch {
	case o.dir == "":
		return usagef("cluster up: --dir is required")
	case o.topology == "":
		return usagef("cluster up: --topology is required")
	case o.protocol == "":
		return usagef("cluster up: --protocol is required (%s)", strings.Join(registry.Names(), ", "))
	case o.timeout <= 0:
		return usagef("cluster up: --timeout %s: want a positive duration", o.timeout)
	}
	entry, err := registry.Lookup(o.protocol)
	if err != nil {
		return usageError{err}
	}
	switch {
	case o.partitions < 1:
		return usagef("cluster up: --partitions %d: want at least 1", o.partitions)
	case o.partitions > 1 && entry.NewClient == nil && entry.NewPartitionedClient == nil:
		return usagef("cluster up: --partitions %d: protocol %s is not partitioned (it runs one full replica per datacenter)", o.partitions, o.protocol)
	case o.tls && entry.Family == registry.Pipeline:
		return usagef("cluster up: --tls: protocol %s does not support tls (its sites speak plain TCP)", o.protocol)
	case o.nodesPerDC != 1 && (entry.NewClient != nil || entry.NewPartitionedClient != nil || entry.Nodes != nil):
		return usagef("cluster up: --nodes-per-dc is for full-replication protocols with one node per replica; %s is not one", o.protocol)
	}
	topo, err := loadTopology(o.topology, stderr)
	if err != nil {
		return err
	}
	topoRef := o.topology
	if o.nodesPerDC != 1 {
		cfg, err := cluster.GeneratePerSite(topo, o.topology, o.protocol, o.dir, o.basePort, o.nodesPerDC)
		if err != nil {
			return usageError{err}
		}
		topo, topoRef = cfg.Topology, cfg.TopologyRef
	}
	var placement *partitioned.Placement
	if entry.NewPartitionedClient != nil {
		if placement, err = partitioned.PlacementFor(topo, o.partitions, o.replicas); err != nil {
			return usageError{err}
		}
	}
	p, err := parseParams(o.params)
	if err != nil {
		return usageError{err}
	}
	for k, v := range entry.DeployParams {
		if _, set := p[k]; !set {
			if p == nil {
				p = protocol.Params{}
			}
			p[k] = v
		}
	}
	var readOnlyNodes []protocol.Node // a replica per datacenter and read-only nodes (Ogre's RoT units)
	if entry.Nodes != nil {
		if readOnlyNodes, err = entry.Nodes(p, topo.N()); err != nil {
			return usageError{err}
		}
	}
	nodes := topo.N() * o.partitions
	switch {
	case placement != nil:
		nodes = len(placement.DC)
	case readOnlyNodes != nil:
		nodes = len(readOnlyNodes)
	}
	if last := o.basePort + 3*nodes - 1; o.basePort < 1 || last > 65535 {
		return usagef("cluster up: --base-port %d: the %d nodes need ports %d..%d, want 1..65535",
			o.basePort, nodes, o.basePort, last)
	}
	binary, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the meridian binary: %w", err)
	}
	cfg := cluster.GeneratePartitioned(topo, topoRef, o.protocol, o.dir, o.basePort, o.partitions)
	switch {
	case placement != nil:
		cfg = cluster.GeneratePlaced(topo, topoRef, o.protocol, o.dir, o.basePort, placement)
	case readOnlyNodes != nil && entry.Roles != nil: // stage machines with roles (the shared logs)
		roles, err := entry.Roles(p, topo.N())
		if err != nil {
			return usageError{err}
		}
		cfg = cluster.GenerateNamed(topo, topoRef, o.protocol, o.dir, o.basePort, readOnlyNodes, roles)
	case readOnlyNodes != nil:
		cfg = cluster.GenerateNodes(topo, topoRef, o.protocol, o.dir, o.basePort, readOnlyNodes)
	}
	cfg.Params = p
	cfg.Admin = o.admin
	cfg.CheckpointBytes = o.checkpointBytes
	cfg.NoVersionRecord = !o.recordVersions
	var clientCert, clientKey string
	if o.tls {
		if clientCert, clientKey, err = cluster.GenerateTLS(cfg, o.dir); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := cluster.Up(ctx, cfg, o.dir, binary, nil, stdout); err != nil {
		return err
	}
	if o.tls {
		fmt.Fprintf(stdout, "client certificate: --cert %s --key %s (CA %s)\n", clientCert, clientKey, cfg.TLS.CA)
		fmt.Fprintf(stdout, "bench:  meridian bench --cluster %s --cert %s --key %s\n", cfg.Path, clientCert, clientKey)
	}
	fmt.Fprintf(stdout, "status: meridian cluster status --dir %s\nstop:   meridian cluster down --dir %s\n", o.dir, o.dir)
	return nil
}

// clusterAddOptions are the flags of `meridian cluster add`.
type clusterAddOptions struct {
	dir, stage, dc, host string
	certFile, keyFile    string
	timeout              time.Duration
	splitAhead           uint64
}

// newClusterAddCmd returns `meridian cluster add`.
func newClusterAddCmd(stdout io.Writer) *cobra.Command {
	var o clusterAddOptions
	cmd := &cobra.Command{
		Use:   "add --dir DIR --stage batcher|filter|queue|maintainer --dc DC [flags]",
		Short: "make a spare stage of a running Chariots cluster join it (live elasticity)",
		Long: `Make a spare stage machine of a running Chariots cluster join its datacenter's pipeline
under load (spec 5.12): take the next spare of the stage in datacenter --dc (cluster up --set
spare_batchers=N, spare_filters, spare_queues, spare_maintainers deploys them, running idle as in
the simulator; add starts its process again if it is not running) and tell the running stages,
through the same requests the simulator's elasticity events send
(chariots.AddSpare): a batcher to the receivers (and to log clients that dial afterwards), a
queue to the active queues and the filters (the token holder puts it in the ring), a maintainer
to the first queue (which starts a new epoch of the journal from the next position when it
holds the token), a filter to the batchers and filters (it takes the even TOIds
of --host's records from a boundary ahead of the log). The joined spares are listed in
DIR/added, which log clients read when they dial (a joined batcher is one they fail over to).`,
		Example: `  meridian cluster up --dir ch --topology two-dc.json --protocol chariots --set spare_batchers=1 --set spare_maintainers=1
  meridian cluster add --dir ch --stage maintainer --dc east
  meridian cluster add --dir ch --stage filter --dc east --host west`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runClusterAdd(o, stdout) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "the cluster's directory (required)")
	f.StringVar(&o.stage, "stage", "", "the stage to add: batcher, filter, queue or maintainer (required)")
	f.StringVar(&o.dc, "dc", "", "the datacenter it joins (required)")
	f.StringVar(&o.host, "host", "", "filter: the datacenter whose records it splits with the first filter (default: the next datacenter)")
	f.Uint64Var(&o.splitAhead, "split-ahead", logclient.DefaultSplitAheadTOIds, "filter: how many TOIds past --host's last logged record the split starts (room for the batchers to learn it)")
	f.StringVar(&o.certFile, "cert", "", "TLS: client certificate (PEM) for a cluster with mutual TLS; needs --key")
	f.StringVar(&o.keyFile, "key", "", "TLS: the client certificate's private key (PEM)")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the spare to start and the stages to answer")
	_ = cmd.MarkFlagDirname("dir")
	return cmd
}

// runClusterAdd runs `meridian cluster add`.
func runClusterAdd(o clusterAddOptions, stdout io.Writer) error {
	switch {
	case o.dir == "":
		return usagef("cluster add: --dir is required")
	case o.stage == "":
		return usagef("cluster add: --stage is required (batcher, filter, queue or maintainer)")
	case o.dc == "":
		return usagef("cluster add: --dc is required")
	case o.timeout <= 0:
		return usagef("cluster add: --timeout %s: want a positive duration", o.timeout)
	}
	role, err := logclient.StageRole(o.stage)
	if err != nil {
		return usageError{err}
	}
	cfg, err := cluster.Load(filepath.Join(o.dir, "cluster.yaml"))
	if err != nil {
		return usageError{err}
	}
	creds, err := clusterCredentials("cluster add", cfg, o.certFile, o.keyFile)
	if err != nil {
		return err
	}
	added, err := cluster.Added(o.dir)
	if err != nil {
		return err
	}
	name, err := logclient.NextSpare(cfg, o.dc, role, added)
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if !cluster.Running(o.dir, name) {
		binary, err := os.Executable()
		if err != nil {
			return fmt.Errorf("cannot find the meridian binary: %w", err)
		}
		if err := cluster.StartNode(ctx, o.dir, binary, name); err != nil {
			return fmt.Errorf("cluster add: %w", err)
		}
	}
	j, err := logclient.AddStage(ctx, cfg, name, o.host, o.splitAhead, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("cluster add: %s is running but has not joined (told %s; run the same command again): %w",
			name, strings.Join(j.Told, ", "), err)
	}
	if err := cluster.RecordAdded(o.dir, name); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s joined datacenter %s (told %s)\n", name, o.dc, strings.Join(j.Told, ", "))
	if j.SplitHost != "" {
		fmt.Fprintf(stdout, "it takes the even TOIds of %s's records from TOId %d\n", j.SplitHost, j.FromTOId)
	}
	return nil
}
