package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server"
	"github.com/meridian-kv/meridian/server/cluster"
)

// serveOptions are the flags of `meridian serve`.
type serveOptions struct {
	config, node        string
	logFormat, logLevel string
	storageLog          bool
	cpuProfile          string
}

// logLevels are the values of serve's --log-level.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// newServeCmd returns the serve command, which logs to stderr.
func newServeCmd(stderr io.Writer) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve --config FILE --node NAME [flags]",
		Short: "run one node of a cluster (--config cluster.yaml --node NAME)",
		Long: `Run one node of a cluster until SIGINT or SIGTERM. The cluster file (format in
server/cluster/doc.go) names every node's datacenter, partition and addresses; the node logs to
stderr. The storage engine's (Pebble's) informational lines are left out unless --storage-log;
its errors are always logged. A pipeline's node (cop-geo) runs its protocol's own driver instead
of the server, with /healthz and /status on its metrics address.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runServe(o, stderr) },
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "cluster file (YAML)")
	f.StringVar(&o.node, "node", "", "name of this node in the cluster file")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "least severe level logged: debug, info, warn or error")
	f.StringVar(&o.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run, recovery included, to this file (go tool pprof) when the node stops")
	f.BoolVar(&o.storageLog, "storage-log", false, "also log the storage engine's (Pebble's) informational lines and events (WAL recovery, flushes, compactions), at info level")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// runServe runs one node of a cluster until SIGINT or SIGTERM.
func runServe(o serveOptions, stderr io.Writer) error {
	if o.config == "" || o.node == "" {
		return usagef("serve: --config and --node are required")
	}
	level, ok := logLevels[o.logLevel]
	if !ok {
		return usagef("serve: --log-level must be debug, info, warn or error, not %q", o.logLevel)
	}
	var handler slog.Handler
	switch ho := (&slog.HandlerOptions{Level: level}); o.logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, ho)
	case "json":
		handler = slog.NewJSONHandler(stderr, ho)
	default:
		return usagef("serve: --log-format must be text or json, not %q", o.logFormat)
	}
	cfg, err := cluster.Load(o.config)
	if err != nil {
		return usageError{err}
	}
	entry, err := registry.Lookup(cfg.Protocol)
	if err != nil {
		return usageError{err}
	}
	var run func(context.Context) error
	if entry.Family == registry.Pipeline { // its own driver (cop-geo)
		if _, _, err := cfg.Node(o.node); err != nil {
			return usageError{err}
		}
		run = func(ctx context.Context) error { return server.ServePipeline(ctx, cfg, o.node, stderr) }
	} else {
		node, err := server.New(cfg, o.node, slog.New(handler), server.Options{StorageLog: o.storageLog})
		if err != nil {
			return usageError{err}
		}
		run = node.Run
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx)
}
