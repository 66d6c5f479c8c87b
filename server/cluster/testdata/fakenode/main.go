// Command fakenode stands in for `meridian serve` in the cluster package's tests: it reads the
// cluster file like the real server and serves /healthz and /status on the node's metrics
// address (HTTPS with the node's certificate on a cluster with TLS, like the real server) until
// SIGTERM or SIGINT.
//
//	fakenode serve --config FILE --node NAME
//
// Environment: FAKENODE_FAIL=NAME makes node NAME exit with status 1 at once;
// FAKENODE_UNHEALTHY=NAME makes its /healthz answer 503; FAKENODE_IGNORE_TERM=1 ignores SIGTERM.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/meridian-kv/meridian/protocols/all"
	"github.com/meridian-kv/meridian/server/cluster"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: fakenode serve --config FILE --node NAME")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	config := fs.String("config", "", "cluster file")
	node := fs.String("node", "", "node name")
	fs.Parse(os.Args[2:])
	cfg, err := cluster.Load(*config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakenode:", err)
		os.Exit(2)
	}
	id, n, err := cfg.Node(*node)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakenode:", err)
		os.Exit(2)
	}
	if os.Getenv("FAKENODE_FAIL") == n.Name {
		fmt.Fprintf(os.Stderr, "fakenode: node %s failing on purpose\n", n.Name)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	if os.Getenv("FAKENODE_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
		signal.Notify(sigs, os.Interrupt)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if os.Getenv("FAKENODE_UNHEALTHY") == n.Name {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "node %s (id %d, dc %s) of %s\n", n.Name, id, n.DC, cfg.Name)
		for _, peer := range cfg.Nodes {
			if peer.Name != n.Name {
				fmt.Fprintf(w, "peer %s lag 0\n", peer.Name)
			}
		}
	})
	srv := &http.Server{Addr: n.MetricsAddr, Handler: mux}
	go func() {
		serve := srv.ListenAndServe
		if cfg.TLS != nil {
			serve = func() error { return srv.ListenAndServeTLS(n.Cert, n.Key) }
		}
		if err := serve(); err != http.ErrServerClosed {
			fmt.Fprintln(os.Stderr, "fakenode:", err)
			os.Exit(1)
		}
	}()
	fmt.Printf("fakenode %s serving on %s\n", n.Name, n.MetricsAddr)
	s := <-sigs
	fmt.Printf("fakenode %s: %v, exiting\n", n.Name, s)
	srv.Close()
}
