package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/dashboard"
)

// newDashboardCmd returns `meridian dashboard --cluster FILE`.
func newDashboardCmd(stdout io.Writer) *cobra.Command {
	var clusterFile, listen, certFile, keyFile string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "dashboard --cluster FILE [--listen ADDR]",
		Short: "serve a live page of a running cluster: latency against the lower bound, throughput, aborts, links",
		Long: `dashboard reads every node's /metrics and /status once a second and serves a page that shows,
per datacenter, the node-side mean commit latency beside the datacenter's lower bound, commits
and aborts per second, the abort rate by reason, and the state of every link, updating live
(run a bench --cluster against the same cluster to see it move). /api/state serves the same
figures as JSON. On a TLS cluster give --cert and --key of a client certificate.`,
		Example: `  meridian dashboard --cluster /tmp/mc/cluster.yaml --listen 127.0.0.1:8080`,
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			if clusterFile == "" {
				return usagef("dashboard: --cluster is required")
			}
			if interval < 100*time.Millisecond {
				return usagef("dashboard: --interval must be at least 100ms")
			}
			cfg, err := cluster.Load(clusterFile)
			if err != nil {
				return usageError{err}
			}
			cert, err := clusterCertificate(cfg, certFile, keyFile)
			if err != nil {
				return err
			}
			c, err := dashboard.NewCollector(cfg, cert)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usagef("dashboard: --listen: %v", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go c.Run(ctx, interval)
			srv := &http.Server{Handler: dashboard.Handler(c), ReadHeaderTimeout: 5 * time.Second}
			go func() {
				<-ctx.Done()
				srv.Close()
			}()
			fmt.Fprintf(stdout, "dashboard of %s (%s): http://%s/\n", cfg.Name, cfg.Protocol, ln.Addr())
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&clusterFile, "cluster", "", "the running cluster's file (required)")
	f.StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve the page on")
	f.DurationVar(&interval, "interval", time.Second, "how often to read the nodes")
	f.StringVar(&certFile, "cert", "", "on a TLS cluster: client certificate (PEM) signed by the cluster CA")
	f.StringVar(&keyFile, "key", "", "on a TLS cluster: the client certificate's key (PEM)")
	return cmd
}
