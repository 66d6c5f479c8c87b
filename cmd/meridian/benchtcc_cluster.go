package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/tools/bench"
)

// runTCCCluster runs the TCC workload of opts against the running partitioned cluster of
// clusterFile, for `meridian bench --workload tcc --cluster FILE`: the cluster's protocol,
// topology, partitions and parameters replace those of opts (the simulator's faults do not
// apply); certFile and keyFile are the client certificate of a cluster with mutual TLS.
// Interrupting the command stops the run.
func runTCCCluster(opts bench.TCCOptions, clusterFile, certFile, keyFile string) (*bench.TCCResult, *cluster.Config, error) {
	cfg, err := cluster.Load(clusterFile)
	if err != nil {
		return nil, nil, usageError{err}
	}
	switch {
	case len(opts.Faults) > 0:
		return nil, nil, usagef("bench: --fault applies to the simulator, not to --cluster")
	case len(opts.Params) > 0:
		return nil, nil, usagef("bench: --set does not apply to --cluster: the parameters of %s configure its nodes and clients", cfg.Path)
	}
	opts.Params = cfg.Params
	creds, err := clusterCredentials(cfg, certFile, keyFile)
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.RunTCCCluster(ctx, opts, cfg, grpc.WithTransportCredentials(creds))
	return res, cfg, err
}

// clusterCredentials returns the transport credentials for benchmark clients of cfg: plain
// connections, or mutual TLS with the client certificate certFile/keyFile.
func clusterCredentials(cfg *cluster.Config, certFile, keyFile string) (credentials.TransportCredentials, error) {
	if cfg.TLS == nil {
		return insecure.NewCredentials(), nil
	}
	if certFile == "" || keyFile == "" {
		return nil, usagef("bench: cluster %s uses mutual TLS: give --cert and --key of a client certificate signed by %s", cfg.Path, cfg.TLS.CA)
	}
	creds, err := clientCredentials(cfg.TLS.CA, certFile, keyFile)
	if err != nil {
		return nil, usageError{err}
	}
	return creds, nil
}
