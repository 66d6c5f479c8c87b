package main

import (
	"context"
	"fmt"
	"io"

	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/log/hyksos"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
)

// The client command against a shared-log cluster (--cluster FILE of a flstore or chariots
// cluster): Hyksos, the causally consistent key-value store on the log (spec 6.1), through the
// log's client library in this process (server/logclient), in one datacenter (--dc).

// hyksosCommands are the commands of `meridian client --cluster` on a shared-log cluster.
const hyksosCommands = "put, get or get-txn"

// checkHyksosCommand checks the command line of a Hyksos command before anything is dialled.
func checkHyksosCommand(cmd string, rest []string) error {
	switch {
	case cmd == "":
		return usagef("client: missing command (want %s on a shared-log cluster)", hyksosCommands)
	case cmd == "put" && len(rest) != 2:
		return usagef("client: put takes a key and a value, got %d arguments", len(rest))
	case cmd == "put" && len(rest[1]) > wire.MaxValueLen:
		return usagef("client: put: a value of at most %d bytes", wire.MaxValueLen)
	case cmd == "get" && len(rest) != 1:
		return usagef("client: get takes one key, got %d arguments", len(rest))
	case cmd == "get-txn" && len(rest) == 0:
		return usagef("client: get-txn takes at least one key")
	case cmd != "put" && cmd != "get" && cmd != "get-txn":
		return usagef("client: unknown command %q for a shared-log cluster (want %s)", cmd, hyksosCommands)
	}
	keys := rest
	if cmd == "put" {
		keys = rest[:1]
	}
	for _, k := range keys {
		// A key is a tag name "k:"+key, which the log bounds like any key.
		if k == "" || len(hyksos.Tag(k)) > wire.MaxKeyLen {
			return usagef("client: a key of 1 to %d bytes, got %d", wire.MaxKeyLen-len(hyksos.Tag("")), len(k))
		}
	}
	return nil
}

// isLogCluster reports whether file is a readable cluster file of a shared log (the registry's
// Log family); errors in it are reported by the command that loads it.
func isLogCluster(file string) bool {
	cfg, err := cluster.Load(file)
	if err != nil {
		return false
	}
	e, err := registry.Lookup(cfg.Protocol)
	return err == nil && e.Family == registry.Log
}

// runHyksosClient runs cmd (put K V, get K, get-txn K...) on the shared-log cluster o names,
// printing "put K at position L of datacenter DC (TOId T)" for a put, and for reads one line
// per key, "K = V (position L)" or "K: no put", after "snapshot: head of log H of datacenter
// DC" for get-txn.
func runHyksosClient(o clientOptions, cmd string, rest []string, stdout io.Writer) error {
	if err := checkHyksosCommand(cmd, rest); err != nil {
		return err
	}
	lo := &logOptions{clusterFile: o.clusterFile, dc: o.dc, certFile: o.certFile, keyFile: o.keyFile, timeout: o.timeout}
	return withLog(lo, func(ctx context.Context, s *logSession) error {
		if cmd == "put" {
			res, err := s.c.Put(ctx, rest[0], []byte(rest[1]))
			if err != nil {
				return fmt.Errorf("put %s: %s", show(rest[0]), describe(err))
			}
			fmt.Fprintf(stdout, "put %s at position %d of datacenter %s (TOId %d)\n", show(rest[0]), res.LId, s.dc, res.TOId)
			return nil
		}
		snap, err := s.c.GetTxn(ctx, rest)
		if err != nil {
			return fmt.Errorf("%s %s: %s", cmd, show(rest[0]), describe(err))
		}
		if cmd == "get-txn" {
			fmt.Fprintf(stdout, "snapshot: head of log %d of datacenter %s\n", snap.HL, s.dc)
		}
		for i, k := range rest {
			if r := snap.Reads[i]; r.LId > 0 {
				fmt.Fprintf(stdout, "%s = %s (position %d)\n", show(k), show(string(r.Value)), r.LId)
			} else {
				fmt.Fprintf(stdout, "%s: no put\n", show(k))
			}
		}
		return nil
	}, false)
}
