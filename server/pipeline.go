package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
)

// ServePipeline runs node name of a cluster whose protocol is a Pipeline (registry.Entry.Serve:
// COP's global-scale training, cop-geo) until ctx ends. Such a node runs its protocol's own
// driver, not the server's event loop and input log; ServePipeline gives it what `cluster up`,
// `cluster status` and `cluster down` expect of every node: /healthz (200 while the node
// runs) and /status (the node's latest one-line report) on its metrics address, its data
// directory, and its place in the cluster. Its progress lines go to log.
func ServePipeline(ctx context.Context, cfg *cluster.Config, name string, log io.Writer) error {
	i, node, err := cfg.Node(name)
	if err != nil {
		return err
	}
	entry, err := registry.Lookup(cfg.Protocol)
	if err != nil {
		return err
	}
	if entry.Serve == nil {
		return fmt.Errorf("protocol %s is not a pipeline: its nodes run the server (server.New)", cfg.Protocol)
	}
	if cfg.TLS != nil {
		return fmt.Errorf("protocol %s does not support tls: its sites speak plain TCP", cfg.Protocol)
	}
	dir := cfg.NodeDataDir(i)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var status atomic.Value
	status.Store("starting")
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, status.Load()) })
	ln, err := net.Listen("tcp", node.MetricsAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	defer srv.Shutdown(context.Background())
	peers := make([]string, len(cfg.Nodes))
	for j, n := range cfg.Nodes {
		peers[j] = n.PeerAddr
	}
	err = entry.Serve(ctx, registry.ServeConfig{
		Config:    protocol.Config{Self: protocol.NodeID(i), Nodes: cfg.Placements(), Topology: cfg.Topology, Params: cfg.Params},
		PeerAddrs: peers,
		DataDir:   dir,
		Log:       log,
		Report: func(s string) {
			if status.Swap(s) == s {
				return
			}
			fmt.Fprintf(log, "%s status: %s\n", time.Now().UTC().Format(time.RFC3339), s)
		},
	})
	if errors.Is(err, context.Canceled) {
		return nil // SIGTERM: a clean stop
	}
	return err
}
