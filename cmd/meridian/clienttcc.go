package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
)

// The client command against a partitioned transactional-causal cluster (--cluster FILE): the
// protocol's client library runs in this process and talks to every partition of one datacenter,
// as one session for the whole invocation.

// tccCommands are the commands of `meridian client --cluster`.
const tccCommands = "read, write or session"

// checkTCCCommand checks the command line of `meridian client --cluster` before anything is
// loaded or dialled.
func checkTCCCommand(cmd string, rest []string) error {
	switch cmd {
	case "read":
		_, err := parseReadKeys(rest)
		return err
	case "write":
		_, err := parseWrites(rest)
		return err
	case "session":
		if len(rest) != 0 {
			return usagef("client: session takes no arguments (it reads transactions from standard input)")
		}
		return nil
	case "put", "get", "snapshot", "txn":
		return usagef("client: %s is for --endpoint (Helios, MF and the baselines); a TCC cluster takes %s", cmd, tccCommands)
	}
	return usagef("client: unknown command %q for --cluster (want %s)", cmd, tccCommands)
}

// parseReadKeys checks the keys of a read: at least one, none empty. A key may repeat.
func parseReadKeys(keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, usagef("client: read takes at least one key")
	}
	if slices.Contains(keys, "") {
		return nil, usagef("client: read: empty key")
	}
	return keys, nil
}

// parseWrites parses the K=V arguments of a write (V is everything after the first '=' and may
// be empty): at least one, keys non-empty and distinct.
func parseWrites(args []string) ([]txn.Write, error) {
	if len(args) == 0 {
		return nil, usagef("client: write takes at least one K=V")
	}
	writes := make([]txn.Write, 0, len(args))
	seen := make(map[string]bool, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		switch {
		case !ok || k == "":
			return nil, usagef("client: write: malformed %s (want K=V with a non-empty key)", show(a))
		case seen[k]:
			return nil, usagef("client: write: key %s given twice (a write-only transaction writes each key once)", show(k))
		}
		seen[k] = true
		writes = append(writes, txn.Write{Key: k, Value: []byte(v)})
	}
	return writes, nil
}

// tccClientOptions are the flags of `meridian client --cluster`.
type tccClientOptions struct {
	clusterFile, dc   string
	certFile, keyFile string
	timeout           time.Duration
}

// runTCCClient runs cmd (checked by checkTCCCommand) against the cluster of o.clusterFile.
func runTCCClient(o tccClientOptions, cmd string, rest []string, stdin io.Reader, stdout io.Writer) error {
	cfg, err := cluster.Load(o.clusterFile)
	if err != nil {
		return usageError{err}
	}
	entry, err := registry.Lookup(cfg.Protocol)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", cfg.Path, err)}
	}
	if entry.NewClient == nil {
		return usagef("client: cluster %s runs %s, not a transactional-causal protocol: use --endpoint ADDR of one of its nodes (put, get, snapshot, txn)", cfg.Path, cfg.Protocol)
	}
	dc := 0
	if o.dc != "" {
		if dc = slices.Index(cfg.Topology.DCs, o.dc); dc < 0 {
			return usagef("client: --dc %s: cluster %s has no such datacenter (it has %s)", o.dc, cfg.Path, strings.Join(cfg.Topology.DCs, ", "))
		}
	}
	layout, err := tcc.NewLayout(cfg.Placements(), cfg.Topology.N())
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", cfg.Path, err)}
	}
	creds := insecure.NewCredentials()
	switch {
	case cfg.TLS != nil && o.certFile == "":
		return usagef("client: cluster %s uses mutual TLS: give --cert and --key of a client certificate signed by %s", cfg.Path, cfg.TLS.CA)
	case cfg.TLS == nil && o.certFile != "":
		return usagef("client: cluster %s does not use TLS: drop --cert and --key", cfg.Path)
	case cfg.TLS != nil:
		if creds, err = clientCredentials(cfg.TLS.CA, o.certFile, o.keyFile); err != nil {
			return usageError{err}
		}
	}

	// The library talks to the partitions of its own datacenter only.
	addrs := make(map[protocol.NodeID]string, layout.Partitions())
	for _, id := range layout.Node[dc] {
		addrs[id] = cfg.Nodes[id].ClientAddr
	}
	conns, err := rpc.DialNodes(addrs, entry.Codec, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conns.Close()
	conns.SetCallTimeout(o.timeout)
	tr, err := registerTCC(conns, layout.Node[dc], o.timeout)
	if err != nil {
		return fmt.Errorf("cannot register with datacenter %s of %s: %s", cfg.Topology.DCs[dc], cfg.Path, describe(err))
	}
	id := tr.ClientID()
	lib, err := entry.NewClient(tcc.ClientConfig{ID: id, DC: dc, Layout: layout, Transport: tr,
		Rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(id))), Params: cfg.Params})
	if err != nil {
		return usageError{fmt.Errorf("%s: %s: %w", cfg.Path, cfg.Protocol, err)}
	}
	s := &tccSession{
		sess:    tcc.NewSession(lib, tr, id, cfg.Topology.DCs[dc], fmt.Sprintf("%s/client-%d", cfg.Topology.DCs[dc], id), nil),
		tr:      tr,
		out:     stdout,
		timeout: o.timeout,
	}
	switch cmd {
	case "read":
		return s.read(rest)
	case "write":
		writes, _ := parseWrites(rest)
		return s.write(writes)
	default:
		return s.script(stdin)
	}
}

// registerTCC registers a client with the first node of nodes (a datacenter's partitions, in
// order) that answers, each within timeout; if none does, the error is the first node's.
func registerTCC(conns *rpc.NodeConns, nodes []protocol.NodeID, timeout time.Duration) (*rpc.TCCTransport, error) {
	var first error
	for _, home := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		tr, err := conns.NewTransport(ctx, home)
		cancel()
		if err == nil {
			return tr, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// tccSession runs the transactions of one invocation, one at a time, as one causal session.
type tccSession struct {
	sess    *tcc.Session
	tr      *rpc.TCCTransport
	out     io.Writer
	timeout time.Duration
}

// await starts a transaction on the library's event loop (the transport's callback goroutine,
// where the library's callbacks run) and waits up to the timeout for its result.
func await[R any](s *tccSession, start func(done func(R))) (R, bool) {
	ch := make(chan R, 1)
	s.tr.After(0, func() { start(func(r R) { ch <- r }) })
	select {
	case r := <-ch:
		return r, true
	case <-time.After(s.timeout):
		var zero R
		return zero, false
	}
}

// read runs a ROT over keys and prints each key's value and writer, then the rounds it took.
func (s *tccSession) read(keys []string) error {
	id := s.sess.NextID()
	r, ok := await(s, func(done func(tcc.ReadResult)) { s.sess.Read(keys, done) })
	switch {
	case !ok:
		return fmt.Errorf("read %s: no answer within %s", id, s.timeout)
	case r.Err != nil:
		return fmt.Errorf("read %s: %s", id, describe(r.Err))
	}
	for _, rd := range r.Reads {
		fmt.Fprintf(s.out, "%s = %s (writer %s)\n", show(rd.Key), show(string(rd.Value)), rd.Version)
	}
	rounds := fmt.Sprintf("rounds: %d", r.Rounds)
	if r.CommitChecks > 0 {
		rounds += fmt.Sprintf(" (%d commit checks)", r.CommitChecks)
	}
	fmt.Fprintln(s.out, rounds)
	return nil
}

// write runs a WOT of writes and prints its outcome; one that did not commit is an error.
func (s *tccSession) write(writes []txn.Write) error {
	id := s.sess.NextID()
	r, ok := await(s, func(done func(tcc.WriteResult)) { s.sess.Write(writes, done) })
	switch {
	case !ok:
		fmt.Fprintf(s.out, "unknown %s\n", id)
		return fmt.Errorf("write %s: no answer within %s; its outcome is unknown", id, s.timeout)
	case r.Status == txn.Committed:
		fmt.Fprintf(s.out, "committed %s\n", id)
		return nil
	}
	fmt.Fprintf(s.out, "%s %s\n", r.Status, id)
	if r.Err != nil {
		return fmt.Errorf("write %s %s: %s", id, r.Status, describe(r.Err))
	}
	return fmt.Errorf("write %s %s", id, r.Status)
}

// script runs the session command's input: one transaction per line.
func (s *tccSession) script(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		var err error
		switch fields[0] {
		case "read":
			var keys []string
			if keys, err = parseReadKeys(fields[1:]); err == nil {
				err = s.read(keys)
			}
		case "write":
			var writes []txn.Write
			if writes, err = parseWrites(fields[1:]); err == nil {
				err = s.write(writes)
			}
		default:
			err = usagef("unknown command %q (want read or write)", fields[0])
		}
		if err != nil {
			var ue usageError
			if errors.As(err, &ue) {
				return usagef("stdin line %d: %s", n, strings.TrimPrefix(err.Error(), "client: "))
			}
			return fmt.Errorf("stdin line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading standard input: %w", err)
	}
	return nil
}
