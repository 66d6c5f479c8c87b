package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
	"github.com/meridian-kv/meridian/tools/logbench"
)

// logOptions are the flags every `meridian log` command takes.
type logOptions struct {
	clusterFile, dc   string
	certFile, keyFile string
	timeout           time.Duration
}

// newLogCmd returns `meridian log`: append to, read and tail a shared log (flstore, chariots)
// running as real processes (`meridian cluster up --protocol chariots`).
func newLogCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	o := &logOptions{}
	cmd := &cobra.Command{
		Use:   "log (append | read | tail | bench) --cluster FILE [flags]",
		Short: "append to, read, tail or benchmark a shared log cluster (flstore, chariots)",
		Long: `Append to, read or tail a shared log (flstore, chariots) running as real processes
(meridian cluster up --protocol chariots). The log's client library runs in this process and
talks to the stage machines of one datacenter (--dc, default the first): appends go to its
batcher (Chariots) or maintainers (FLStore), reads to the maintainers owning the positions,
tag lookups to the tag's indexer. Each datacenter has its own log: the same records, in an
order that respects causality, at positions of its own.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				fmt.Fprint(stdout, cmd.UsageString())
				return usagef("log: missing command (append, read, tail or bench)")
			}
			return usagef("log: unknown command %q (want append, read, tail or bench)", args[0])
		},
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.clusterFile, "cluster", "", "cluster file of a log cluster (required)")
	f.StringVar(&o.dc, "dc", "", "datacenter whose log to use (default: the first)")
	f.StringVar(&o.certFile, "cert", "", "TLS: client certificate (PEM) for a cluster with mutual TLS; needs --key")
	f.StringVar(&o.keyFile, "key", "", "TLS: the client certificate's private key (PEM)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for each answer")
	cmd.AddCommand(newLogAppendCmd(o, stdin, stdout), newLogReadCmd(o, stdout), newLogTailCmd(o, stdout), newLogBenchCmd(o, stdout))
	return cmd
}

// newLogAppendCmd returns `meridian log append`.
func newLogAppendCmd(o *logOptions, stdin io.Reader, stdout io.Writer) *cobra.Command {
	var tags []string
	var deps string
	cmd := &cobra.Command{
		Use:   "append BODY [flags]",
		Short: "append a record (BODY, or - for standard input) and print its position",
		Long: `Append a record whose body is BODY (- reads it from standard input) with the tags given
(--tag NAME or --tag NAME=VALUE, repeatable), after the records --deps names (Chariots: one TOId
per datacenter, comma-separated: the record follows records 1..TOId of each datacenter).
Prints the record's position in the datacenter's log and its TOId once it is durable.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("log append: want exactly one BODY (or - for standard input), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			parsedTags, err := parseTags(tags)
			if err != nil {
				return err
			}
			parsedDeps, err := parseDeps(deps)
			if err != nil {
				return err
			}
			body := []byte(args[0])
			if args[0] == "-" {
				if body, err = io.ReadAll(io.LimitReader(stdin, wire.MaxValueLen+1)); err != nil {
					return fmt.Errorf("log append: reading standard input: %w", err)
				}
			}
			if len(body) > wire.MaxValueLen {
				return usagef("log append: a body of at most %d bytes", wire.MaxValueLen)
			}
			return withLog(o, func(ctx context.Context, s *logSession) error {
				if parsedDeps != nil && len(parsedDeps) != len(s.dcs) {
					return usagef("log append: --deps %s: one TOId per datacenter (%s), not %d", deps, strings.Join(s.dcs, ", "), len(parsedDeps))
				}
				res, err := s.c.Append(ctx, body, parsedTags, parsedDeps)
				if err != nil {
					return fmt.Errorf("log append: %s", describe(err))
				}
				fmt.Fprintf(stdout, "appended at position %d of datacenter %s (TOId %d)\n", res.LId, s.dc, res.TOId)
				return nil
			}, false)
		},
	}
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "tag NAME or NAME=VALUE, repeatable")
	cmd.Flags().StringVar(&deps, "deps", "", "Chariots: TOIds the record must follow, one per datacenter, comma-separated")
	return cmd
}

// newLogReadCmd returns `meridian log read`.
func newLogReadCmd(o *logOptions, stdout io.Writer) *cobra.Command {
	var tag, op string
	var limit int
	var recent bool
	cmd := &cobra.Command{
		Use:   "read (FROM[-TO] | --tag NAME[=VALUE]) [flags]",
		Short: "print the records at positions FROM..TO (FROM- : to the head), or those with a tag",
		Long: `Print the records at positions FROM to TO of the datacenter's log (FROM alone: one record;
FROM-: up to the head of the log), never beyond the head of the log, one per line: position,
host datacenter/TOId, dependencies, tags, body. With --tag, print the records carrying the tag
instead (--tag NAME=VALUE: whose value compares to VALUE by --op, byte-wise), at most --limit of
them, the most recent first with --recent.`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case tag == "" && len(args) != 1:
				return usagef("log read: want one position range FROM[-TO] (or --tag NAME), got %d arguments", len(args))
			case tag != "" && len(args) != 0:
				return usagef("log read: --tag takes no position range")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if tag != "" {
				name, value, cmp, err := parseTagQuery(tag, op)
				if err != nil {
					return err
				}
				if limit < 0 {
					return usagef("log read: --limit %d: want 0 (all) or more", limit)
				}
				return withLog(o, func(ctx context.Context, s *logSession) error {
					recs, err := s.c.ReadTag(ctx, name, cmp, value, limit, recent)
					if err != nil {
						return fmt.Errorf("log read: %s", describe(err))
					}
					s.print(stdout, recs)
					return nil
				}, false)
			}
			if op != "" || limit != 0 || recent {
				return usagef("log read: --op, --limit and --recent go with --tag")
			}
			from, to, err := parseRange(args[0])
			if err != nil {
				return err
			}
			return withLog(o, func(ctx context.Context, s *logSession) error {
				recs, err := s.c.Read(ctx, from, to)
				if err != nil {
					return fmt.Errorf("log read: %s", describe(err))
				}
				s.print(stdout, recs)
				return nil
			}, false)
		},
	}
	cmd.Flags().StringVar(&tag, "tag", "", "read by tag: NAME (any value) or NAME=VALUE")
	cmd.Flags().StringVar(&op, "op", "", "with --tag NAME=VALUE: eq (default), lt, le, gt or ge")
	cmd.Flags().IntVar(&limit, "limit", 0, "with --tag: at most this many records (0: all)")
	cmd.Flags().BoolVar(&recent, "recent", false, "with --tag: the most recent first")
	return cmd
}

// newLogTailCmd returns `meridian log tail`.
func newLogTailCmd(o *logOptions, stdout io.Writer) *cobra.Command {
	var n int
	var follow bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "tail [flags]",
		Short: "print the head of the log and its last records (--follow: then every new one)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usagef("log tail: takes no arguments (got %q)", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			switch {
			case n < 0:
				return usagef("log tail: -n %d: want 0 or more", n)
			case every <= 0:
				return usagef("log tail: --every %s: want a positive duration", every)
			}
			return withLog(o, func(ctx context.Context, s *logSession) error {
				h, err := s.c.Head(ctx)
				if err != nil {
					return fmt.Errorf("log tail: %s", describe(err))
				}
				fmt.Fprintf(stdout, "head of log of datacenter %s: %d\n", s.dc, h.HL)
				from := uint64(1)
				if h.HL > uint64(n) {
					from = h.HL - uint64(n) + 1
				}
				for {
					if from <= h.HL {
						recs, err := s.c.Read(ctx, from, h.HL)
						if err != nil {
							return fmt.Errorf("log tail: %s", describe(err))
						}
						s.print(stdout, recs)
						from = h.HL + 1
					}
					if !follow {
						return nil
					}
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(every):
					}
					if h, err = s.c.Head(ctx); err != nil {
						return fmt.Errorf("log tail: %s", describe(err))
					}
				}
			}, follow)
		},
	}
	cmd.Flags().IntVarP(&n, "lines", "n", 10, "how many of the last records to print")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "then print new records as the head of the log moves, until interrupted")
	cmd.Flags().DurationVar(&every, "every", 200*time.Millisecond, "with --follow: how often to ask for the head of the log")
	return cmd
}

// logSession is one `meridian log` invocation's client.
type logSession struct {
	c        *logclient.Client
	cfg      *cluster.Config
	dialOpts []grpc.DialOption
	dcs      []string // the cluster's datacenters
	dc       string   // the client's
}

// newLogBenchCmd returns `meridian log bench`.
func newLogBenchCmd(o *logOptions, stdout io.Writer) *cobra.Command {
	var clients, bodyBytes, tags int
	var duration time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "closed-loop appends: appends/s, latency and each node's CPU per append",
		Long: `Append records of --bytes bytes closed loop from --clients clients in every datacenter (in
--dc only, if given) for --duration, and print appends per second, the append latency and, for
a local cluster (cluster up: its pid files), every node's CPU time over the run and per append
acknowledged: the per-record CPU cost of each stage machine as a process.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usagef("log bench: takes no arguments (got %q)", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			switch {
			case clients < 1:
				return usagef("log bench: --clients %d: want at least 1", clients)
			case duration <= 0:
				return usagef("log bench: --duration %s: want a positive duration", duration)
			case bodyBytes < 0 || bodyBytes > wire.MaxValueLen:
				return usagef("log bench: --bytes %d: want 0 to %d", bodyBytes, wire.MaxValueLen)
			case tags < 0 || tags > flstore.MaxTags:
				return usagef("log bench: --tags %d: want 0 to %d", tags, flstore.MaxTags)
			}
			return withLog(o, func(ctx context.Context, s *logSession) error {
				opts := logbench.Options{Cluster: s.cfg, Clients: clients, Duration: duration, BodyBytes: bodyBytes, Tags: tags,
					Timeout: o.timeout, DialOpts: s.dialOpts}
				if o.dc != "" {
					opts.DCs = []string{o.dc}
				}
				res, err := logbench.Run(ctx, opts)
				if err != nil {
					return fmt.Errorf("log bench: %s", describe(err))
				}
				if asJSON {
					enc := json.NewEncoder(stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(res)
				}
				fmt.Fprintf(stdout, "%s: %d clients per datacenter, %d-byte records, %d tags, %.1f s: %d appends (%d errors), %.0f appends/s, latency p50 %.2f ms p99 %.2f ms\n",
					s.cfg.Protocol, clients, bodyBytes, tags, res.Seconds, res.Appends, res.Errors, res.AppendsPerSec, res.P50Ms, res.P99Ms)
				if len(res.Nodes) > 0 {
					tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
					fmt.Fprintln(tw, "node\tcpu s\tcpu µs/append")
					for _, n := range res.Nodes {
						fmt.Fprintf(tw, "%s\t%.2f\t%.1f\n", n.Name, n.CPUSeconds, n.UsPerAppend)
					}
					return tw.Flush()
				}
				return nil
			}, true)
		},
	}
	f := cmd.Flags()
	f.IntVar(&clients, "clients", 8, "closed-loop clients per datacenter, one append in flight each")
	f.DurationVar(&duration, "duration", 10*time.Second, "how long to append")
	f.IntVar(&bodyBytes, "bytes", 512, "record body size")
	f.IntVar(&tags, "tags", 0, "tags per record")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// withLog loads the cluster file, dials a log client in the chosen datacenter and runs f with
// it under the timeout (or, if long, until it returns or is interrupted).
func withLog(o *logOptions, f func(ctx context.Context, s *logSession) error, long bool) error {
	if o.clusterFile == "" {
		return usagef("log: --cluster FILE is required (the cluster file `meridian cluster up` wrote)")
	}
	if o.timeout <= 0 {
		return usagef("log: --timeout %s: want a positive duration", o.timeout)
	}
	cfg, err := cluster.Load(o.clusterFile)
	if err != nil {
		return usageError{err}
	}
	creds, err := clusterCredentials("log", cfg, o.certFile, o.keyFile)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dialCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	dialOpts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	c, err := logclient.Dial(dialCtx, cfg, o.dc, dialOpts...)
	if err != nil {
		return fmt.Errorf("log: %s", describe(err))
	}
	defer c.Close()
	c.SetCallTimeout(o.timeout)
	dc := o.dc
	if dc == "" {
		dc = cfg.Topology.DCs[0]
	}
	s := &logSession{c: c, cfg: cfg, dialOpts: dialOpts, dcs: cfg.Topology.DCs, dc: dc}
	if long {
		return f(ctx, s)
	}
	return f(dialCtx, s)
}

// parseTags parses --tag values: NAME or NAME=VALUE, names non-empty and at most
// wire.MaxKeyLen bytes, at most flstore.MaxTags of them.
func parseTags(specs []string) ([]flstore.Tag, error) {
	if len(specs) > flstore.MaxTags {
		return nil, usagef("log append: %d tags, at most %d", len(specs), flstore.MaxTags)
	}
	var tags []flstore.Tag
	for _, s := range specs {
		name, value, hasValue := strings.Cut(s, "=")
		switch {
		case name == "":
			return nil, usagef("log append: --tag %s: empty tag name (want NAME or NAME=VALUE)", show(s))
		case len(name) > wire.MaxKeyLen || len(value) > wire.MaxValueLen:
			return nil, usagef("log append: --tag %s: a name of at most %d bytes and a value of at most %d", show(name), wire.MaxKeyLen, wire.MaxValueLen)
		}
		t := flstore.Tag{Name: name}
		if hasValue {
			t.Value = []byte(value)
		}
		tags = append(tags, t)
	}
	return tags, nil
}

// parseDeps parses --deps: comma-separated TOIds ("" for none).
func parseDeps(s string) ([]uint64, error) {
	if s == "" {
		return nil, nil
	}
	var deps []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, usagef("log append: --deps %s: %s is not a TOId (want one non-negative integer per datacenter, comma-separated)", show(s), show(f))
		}
		deps = append(deps, v)
	}
	return deps, nil
}

// parseRange parses FROM, FROM- or FROM-TO (positions from 1).
func parseRange(s string) (from, to uint64, err error) {
	a, b, isRange := strings.Cut(s, "-")
	bad := func() (uint64, uint64, error) {
		return 0, 0, usagef("log read: position range %s: want FROM, FROM- or FROM-TO with positions from 1", show(s))
	}
	if from, err = strconv.ParseUint(a, 10, 64); err != nil || from == 0 {
		return bad()
	}
	switch {
	case !isRange:
		return from, from, nil
	case b == "":
		return from, flstore.None, nil
	}
	if to, err = strconv.ParseUint(b, 10, 64); err != nil {
		return bad()
	}
	if to < from {
		return 0, 0, usagef("log read: position range %s ends before it starts", show(s))
	}
	return from, to, nil
}

// compares names the predicates of --op.
var compares = map[string]flstore.Compare{"eq": flstore.Eq, "lt": flstore.Lt, "le": flstore.Le, "gt": flstore.Gt, "ge": flstore.Ge}

// parseTagQuery parses --tag NAME[=VALUE] and --op into a lookup.
func parseTagQuery(tag, op string) (string, []byte, flstore.Compare, error) {
	name, value, hasValue := strings.Cut(tag, "=")
	if name == "" || len(name) > wire.MaxKeyLen {
		return "", nil, 0, usagef("log read: --tag %s: want NAME or NAME=VALUE with a name of 1 to %d bytes", show(tag), wire.MaxKeyLen)
	}
	if !hasValue {
		if op != "" {
			return "", nil, 0, usagef("log read: --op %s compares values: give --tag NAME=VALUE", show(op))
		}
		return name, nil, flstore.Any, nil
	}
	if op == "" {
		op = "eq"
	}
	cmp, ok := compares[op]
	if !ok {
		return "", nil, 0, usagef("log read: --op %s: want eq, lt, le, gt or ge", show(op))
	}
	return name, []byte(value), cmp, nil
}

// print prints one line per record: position, host datacenter/TOId, dependencies, tags and
// body.
func (s *logSession) print(w io.Writer, recs []*flstore.Record) {
	for _, r := range recs {
		host := strconv.Itoa(r.Host)
		if r.Host >= 0 && r.Host < len(s.dcs) {
			host = s.dcs[r.Host]
		}
		var tags []string
		for _, t := range r.Tags {
			if t.Value == nil {
				tags = append(tags, show(t.Name))
			} else {
				tags = append(tags, show(t.Name)+"="+show(string(t.Value)))
			}
		}
		body := show(string(r.Body))
		if r.Collected {
			body = "(collected)"
		}
		fmt.Fprintf(w, "%d\t%s/%d\tdeps=%v\ttags=[%s]\t%s\n", r.LId, host, r.TOId, r.Deps, strings.Join(tags, " "), body)
	}
}

// clusterCredentials returns the transport credentials of command cmd's clients of cluster cfg:
// the client certificate certFile and its key keyFile for a cluster with mutual TLS, none
// otherwise; a usage error if the flags do not match the cluster.
func clusterCredentials(cmd string, cfg *cluster.Config, certFile, keyFile string) (credentials.TransportCredentials, error) {
	switch {
	case (certFile == "") != (keyFile == ""):
		return nil, usagef("%s: --cert and --key go together", cmd)
	case cfg.TLS != nil && certFile == "":
		return nil, usagef("%s: cluster %s uses mutual TLS: give --cert and --key of a client certificate signed by %s", cmd, cfg.Path, cfg.TLS.CA)
	case cfg.TLS == nil && certFile != "":
		return nil, usagef("%s: cluster %s does not use TLS: drop --cert and --key", cmd, cfg.Path)
	case cfg.TLS != nil:
		creds, err := clientCredentials(cfg.TLS.CA, certFile, keyFile)
		if err != nil {
			return nil, usageError{err}
		}
		return creds, nil
	}
	return insecure.NewCredentials(), nil
}
