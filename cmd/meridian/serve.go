package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/meridian-kv/meridian/server"
	"github.com/meridian-kv/meridian/server/cluster"
)

// runServe runs one node of a cluster until SIGINT or SIGTERM.
func runServe(args []string, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	config := fs.String("config", "", "cluster file (YAML)")
	name := fs.String("node", "", "name of this node in the cluster file")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *config == "" || *name == "" {
		return usagef("serve: --config and --node are required")
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, nil)
	case "json":
		handler = slog.NewJSONHandler(stderr, nil)
	default:
		return usagef("serve: --log-format must be text or json, not %q", *logFormat)
	}
	cfg, err := cluster.Load(*config)
	if err != nil {
		return usageError{err}
	}
	node, err := server.New(cfg, *name, slog.New(handler))
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return node.Run(ctx)
}
