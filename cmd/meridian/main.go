// Command meridian runs Meridian's simulated benchmarks and tools.
//
//	meridian bench                       the main job: five protocols on aws-helios, 60 virtual s
//	meridian bench --protocols helios-0 --duration 10s --json out.json
//	meridian lowerbound --topology aws-helios
//	meridian protocols                   list the registered protocols
//	meridian cluster up --topology table4.1 --protocol helios-0 --dir /tmp/c
//	meridian client --endpoint 127.0.0.1:7201 put k v
//
// Bad flags or files print one line on stderr and exit with status 2.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// usageError marks errors caused by the command line or its input files (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const topUsage = `usage: meridian <command> [flags]

commands:
  bench        run the T-YCSB benchmark in the simulator (no flags: the main job)
  lowerbound   print each datacenter's optimal commit latency and the commit offsets
  protocols    list the registered protocols
  serve        run one node of a cluster (--config cluster.yaml --node NAME)
  cluster      start, stop or inspect a local multi-datacenter cluster (up, down, status)
  client       talk to a running cluster (get, put, snapshot, txn; read, write, session on a partitioned TCC cluster)
  repro        reproduce the papers' experiments and compare with their claims (list, NAME, --all, --out DIR)
Run 'meridian <command> --help' for a command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "lowerbound":
		err = runLowerBound(args[1:], stdout)
	case "protocols":
		err = runProtocols(stdout)
	case "serve":
		err = runServe(args[1:], stderr)
	case "cluster":
		err = runCluster(args[1:], stdout, stderr)
	case "client":
		err = runClient(args[1:], os.Stdin, stdout, stderr)
	case "repro":
		err = runRepro(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, topUsage)
		return 0
	default:
		err = usagef("unknown command %q (want bench, lowerbound, protocols, serve, cluster, client or repro)", args[0])
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "meridian:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "meridian:", err)
		return 1
	}
}

// newFlagSet returns a flag set that reports errors to the caller instead of exiting; the
// flag package prints the problem and the usage to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("meridian "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and rejects stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}
