package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
)

// newClientCmd returns the client command, with a subcommand for each of its commands, reading
// standard input from stdin.
func newClientCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var o clientOptions
	run := func(command string, args []string) error { return runClient(o, command, args, stdin, stdout) }
	cmd := &cobra.Command{
		Use:   "client COMMAND [ARG...] (--endpoint ADDR | --cluster FILE) [flags]",
		Short: "talk to a running cluster (get, put, snapshot, txn; read, write, session on a partitioned TCC cluster; put, get, get-txn of Hyksos on a shared log)",
		Long: `Talk to a running cluster.

With --endpoint ADDR, to one node of a Helios, MF, Ogre or baseline cluster: put, get, snapshot,
txn. On Ogre, snapshot is a read-only transaction of any size from the local RoT-Storage, with no
WAN message (serializable with the other snapshots of its datacenter); on a cluster with RoT unit
nodes (cluster up's default for Ogre), snapshot goes to a unit (DC-ro1), the rest to the replica.
Output, one line per result: "K = V (version t3.1)", "committed", "aborted: REASON". Keys and
values that are not printable text are shown Go-quoted. The exit status is 1 if a transaction
aborted (other than by an abort command) or a request failed, 2 for bad usage. The connection is
plaintext gRPC unless --ca is given (then TLS; --cert and --key add a client certificate, which
clusters with TLS require).

With --cluster FILE, to a partitioned transactional-causal cluster (fastccs, eiger, wren, ec,
fastccs-geo): read, write, session. The protocol's client library talks to every partition of
one datacenter (--dc, default the topology's first). Each invocation is a new client session:
causal guarantees (read your writes, monotonic reads) hold within one invocation, not across two,
as session state is not persisted; use session to chain transactions. --timeout bounds each
transaction; the exit status is 1 if one failed or its outcome is unknown. With TLS in the
cluster file, --cert and --key are required and the CA is the file's.

With --cluster FILE of a shared log (flstore, chariots), to Hyksos, the causally consistent
key-value store on the log: put K V (an append tagged with the key; prints its position in the
datacenter's log), get K (the latest put up to the head of the log), get-txn K... (the keys from
one snapshot, the source's GET_TXN: each key's latest put up to one head of the log). Each
datacenter (--dc) has its own log; concurrent puts to a key from two datacenters may be ordered
differently in each, which then disagree on it.

Flags may come anywhere; a key or value that starts with '-' goes after '--'
(meridian client --endpoint ADDR put -- -k -v).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return run("", nil)
			}
			return run(args[0], args[1:])
		},
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.endpoint, "endpoint", "", "address of a Meridian node's client API, host:port (or --cluster)")
	f.StringVar(&o.clusterFile, "cluster", "", "cluster file of a partitioned transactional-causal cluster (read, write, session) or of a shared log (put, get, get-txn of Hyksos) (or --endpoint)")
	f.StringVar(&o.dc, "dc", "", "with --cluster: the client's datacenter (default: the topology's first)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound on connecting and on each request")
	f.StringVar(&o.caFile, "ca", "", "TLS: verify the node against this CA certificate (PEM); without it, plaintext")
	f.StringVar(&o.certFile, "cert", "", "TLS: client certificate (PEM) for nodes that require one; needs --key, and --ca unless --cluster")
	f.StringVar(&o.keyFile, "key", "", "TLS: the client certificate's private key (PEM)")
	for _, sub := range []struct{ use, short, long string }{
		{"put K V", "write V to K in a one-operation transaction and commit it (--endpoint); a Hyksos put (--cluster of a shared log)", ""},
		{"get K", "read the latest version of K at the node: a local read, not a transaction (--endpoint); a Hyksos get (--cluster of a shared log)", ""},
		{"get-txn K...", "read the keys from one snapshot of Hyksos, its GET_TXN (--cluster of a shared log)", ""},
		{"snapshot K...", "read the keys from one consistent snapshot of the node (--endpoint)", ""},
		{"txn", "run transactions read from standard input, one command per line (--endpoint)", `Run transactions read from standard input, one command per line:
  get K      read K in the current transaction
  put K V    buffer a write; V is the rest of the line, verbatim
  commit     commit the current transaction (the next command starts another)
  abort      abandon the current transaction
Blank lines and lines starting with # are ignored. A malformed line stops the run with an error
naming the line (exit status 2); the transaction it was part of is never committed. End of input
aborts an open transaction.`},
		{"read K...", "a read-only transaction: \"K = V (writer t3.1)\" per key, then \"rounds: N\" (--cluster)", ""},
		{"write K=V...", "a write-only transaction of distinct keys (V may be empty): prints \"committed t5.1\" (--cluster)", ""},
		{"session", "run transactions from standard input, one per line, in one session (--cluster)", `Run transactions from standard input, one per line, "read K1 K2 ..." or "write K1=V1 ..."
(values without white space), all in one causal session. Blank lines and # comments are ignored;
a malformed line stops the run (exit status 2), and so does a failed transaction (exit status 1).`},
	} {
		name := strings.Fields(sub.use)[0]
		cmd.AddCommand(&cobra.Command{
			Use:   sub.use,
			Short: sub.short,
			Long:  sub.long,
			Args:  cobra.ArbitraryArgs, // runClient checks them, as it does without the subcommand
			RunE:  func(_ *cobra.Command, args []string) error { return run(name, args) },
		})
	}
	return cmd
}

// clientOptions are the flags of `meridian client`.
type clientOptions struct {
	endpoint, clusterFile, dc string
	timeout                   time.Duration
	caFile, certFile, keyFile string
}

// runClient runs `meridian client CMD REST...` (cmd "" if none was given).
func runClient(o clientOptions, cmd string, rest []string, stdin io.Reader, stdout io.Writer) error {
	switch {
	case o.endpoint != "" && o.clusterFile != "":
		return usagef("client: give --endpoint (one node) or --cluster (a partitioned TCC cluster), not both")
	case o.endpoint == "" && o.clusterFile == "":
		return usagef("client: --endpoint is required (or --cluster FILE for a partitioned TCC cluster)")
	case o.dc != "" && o.clusterFile == "":
		return usagef("client: --dc goes with --cluster")
	case o.timeout <= 0:
		return usagef("client: --timeout must be positive")
	}
	if o.clusterFile != "" {
		switch {
		case o.caFile != "":
			return usagef("client: --ca does not apply to --cluster: the CA comes from the cluster file")
		case (o.certFile == "") != (o.keyFile == ""):
			return usagef("client: --cert and --key go together")
		case isLogCluster(o.clusterFile):
			return runHyksosClient(o, cmd, rest, stdout)
		case cmd == "":
			return usagef("client: missing command (want %s)", tccCommands)
		}
		if err := checkTCCCommand(cmd, rest); err != nil {
			return err
		}
		t := tccClientOptions{clusterFile: o.clusterFile, dc: o.dc, certFile: o.certFile, keyFile: o.keyFile, timeout: o.timeout}
		return runTCCClient(t, cmd, rest, stdin, stdout)
	}
	if (o.certFile == "") != (o.keyFile == "") || (o.certFile != "" && o.caFile == "") {
		return usagef("client: --cert and --key go together, and with --ca")
	}
	if cmd == "" {
		return usagef("client: missing command (want put, get, snapshot or txn)")
	}
	switch {
	case cmd == "read" || cmd == "write" || cmd == "session":
		return usagef("client: %s is for partitioned TCC clusters: give --cluster FILE instead of --endpoint", cmd)
	case cmd == "get-txn":
		return usagef("client: get-txn is for Hyksos on a shared log: give --cluster FILE instead of --endpoint")
	case cmd == "put" && len(rest) != 2:
		return usagef("client: put takes a key and a value, got %d arguments", len(rest))
	case cmd == "get" && len(rest) != 1:
		return usagef("client: get takes one key, got %d arguments", len(rest))
	case cmd == "snapshot" && len(rest) == 0:
		return usagef("client: snapshot takes at least one key")
	case cmd == "txn" && len(rest) != 0:
		return usagef("client: txn takes no arguments (it reads commands from standard input)")
	case cmd != "put" && cmd != "get" && cmd != "snapshot" && cmd != "txn":
		return usagef("client: unknown command %q (want put, get, snapshot or txn)", cmd)
	}
	keys := rest
	if cmd == "put" {
		keys = rest[:1]
	}
	for _, k := range keys {
		if k == "" {
			return usagef("client: empty key")
		}
	}

	creds, err := clientCredentials(o.caFile, o.certFile, o.keyFile)
	if err != nil {
		return usageError{err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	c, err := rpc.DialClient(ctx, o.endpoint, grpc.WithTransportCredentials(creds))
	cancel()
	if err != nil {
		return fmt.Errorf("cannot register with %s: %s", o.endpoint, describe(err))
	}
	defer c.Close()
	s := &clientSession{c: c, out: stdout, timeout: o.timeout}

	switch cmd {
	case "put":
		tx := c.Begin()
		if err := tx.Put(rest[0], []byte(rest[1])); err != nil {
			return err
		}
		if err := s.commit(tx); err != nil {
			return err
		}
		return s.verdict()
	case "get":
		return s.get(c.Begin(), rest[0])
	case "snapshot":
		ctx, cancel := s.ctx()
		defer cancel()
		reads, err := c.ReadSnapshot(ctx, rest)
		if err != nil {
			return fmt.Errorf("snapshot: %s", describe(err))
		}
		for _, r := range reads {
			fmt.Fprintf(stdout, "%s = %s (version %s)\n", show(r.Key), show(string(r.Value)), r.Version)
		}
		return nil
	default:
		return s.script(stdin)
	}
}

// clientCredentials returns plaintext without a CA, TLS verifying the node with one, and
// mutual TLS with a client certificate too.
func clientCredentials(caFile, certFile, keyFile string) (credentials.TransportCredentials, error) {
	if caFile == "" {
		return insecure.NewCredentials(), nil
	}
	pool, err := cluster.LoadCA(caFile)
	if err != nil {
		return nil, fmt.Errorf("client: --ca: %w", err)
	}
	conf := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client: --cert/--key: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(conf), nil
}

// clientSession runs the client command's operations.
type clientSession struct {
	c       *rpc.Client
	out     io.Writer
	timeout time.Duration
	aborts  int // transactions the node aborted
	commits int // commit attempts
}

func (s *clientSession) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

func (s *clientSession) get(tx *rpc.Txn, key string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	v, ver, err := tx.GetVersion(ctx, key)
	if err != nil {
		return fmt.Errorf("get %s: %s", show(key), describe(err))
	}
	fmt.Fprintf(s.out, "%s = %s (version %s)\n", show(key), show(string(v)), ver)
	return nil
}

// commit commits tx and prints the outcome; an abort is counted, not returned.
func (s *clientSession) commit(tx *rpc.Txn) error {
	ctx, cancel := s.ctx()
	defer cancel()
	s.commits++
	res, err := tx.Commit(ctx)
	if err != nil {
		if c := status.Code(err); c == codes.InvalidArgument || c == codes.FailedPrecondition {
			return fmt.Errorf("commit of %s rejected: %s", tx.ID(), describe(err))
		}
		return fmt.Errorf("commit of %s: %s; its outcome is unknown", tx.ID(), describe(err))
	}
	if res.Status == txn.Committed {
		fmt.Fprintln(s.out, "committed")
		return nil
	}
	s.aborts++
	fmt.Fprintf(s.out, "aborted: %s\n", res.Reason)
	return nil
}

// verdict turns the aborts seen into the command's result.
func (s *clientSession) verdict() error {
	switch {
	case s.aborts == 0:
		return nil
	case s.commits == 1:
		return errors.New("transaction aborted")
	default:
		return fmt.Errorf("%d of %d transactions aborted", s.aborts, s.commits)
	}
}

// script runs the txn command's input.
func (s *clientSession) script(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 4<<20) // a line holds a value of up to the default 1 MiB limit
	var tx *rpc.Txn                        // the open transaction, if any
	ops := 0                               // its operations
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return usagef("stdin line %d: %s", n, fmt.Sprintf(format, args...))
		}
		cmd, rest := cutField(line)
		if tx == nil && (cmd == "get" || cmd == "put" || cmd == "commit") {
			tx, ops = s.c.Begin(), 0
		}
		switch cmd {
		case "get":
			key, extra := cutField(rest)
			if key == "" || extra != "" {
				return bad("want get K, got %q", line)
			}
			if err := s.get(tx, key); err != nil {
				return fmt.Errorf("stdin line %d: %w", n, err)
			}
			ops++
		case "put":
			key, value := cutField(rest)
			if key == "" || value == "" {
				return bad("want put K V, got %q", line)
			}
			if err := tx.Put(key, []byte(value)); err != nil {
				return fmt.Errorf("stdin line %d: %w", n, err)
			}
			ops++
		case "commit", "abort":
			if rest != "" {
				return bad("%s takes no arguments, got %q", cmd, line)
			}
			if cmd == "abort" {
				if tx != nil {
					tx.Abort()
				}
				fmt.Fprintln(s.out, "aborted: by client")
			} else if err := s.commit(tx); err != nil {
				return fmt.Errorf("stdin line %d: %w", n, err)
			}
			tx = nil
		default:
			return bad("unknown command %q (want get, put, commit or abort)", cmd)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading standard input: %w", err)
	}
	if tx != nil && ops > 0 {
		tx.Abort()
		s.aborts++
		s.commits++
		fmt.Fprintln(s.out, "aborted: end of input before commit")
	}
	return s.verdict()
}

// cutField splits s at its first run of white space.
func cutField(s string) (first, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeftFunc(s[i:], unicode.IsSpace)
}

// show prints a key or value as is if it is printable text, Go-quoted otherwise.
func show(s string) string {
	if s == "" || !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 ||
		strings.HasPrefix(s, `"`) {
		return strconv.Quote(s)
	}
	return s
}

// describe renders an error from package rpc: a gRPC status as its message and code.
func describe(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		if st := se.GRPCStatus(); st != nil {
			return fmt.Sprintf("%s (%s)", st.Message(), st.Code())
		}
	}
	return err.Error()
}
