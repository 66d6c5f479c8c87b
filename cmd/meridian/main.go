// Command meridian runs Meridian's simulated benchmarks, its servers and tools.
//
//	meridian bench                       the main job: five protocols on aws-helios, 60 virtual s
//	meridian bench --protocols helios-0 --duration 10s --json out.json
//	meridian lowerbound --topology aws-helios
//	meridian protocols                   list the registered protocols
//	meridian cluster up --topology table4.1 --protocol helios-0 --dir /tmp/c
//	meridian client put k v --endpoint 127.0.0.1:7201
//	meridian repro e4.1 --out repro-out
//	meridian completion bash             a shell completion script (also zsh, fish, powershell)
//
// Flags may come before or after a command's arguments. 'meridian help COMMAND' or
// 'meridian COMMAND --help' shows a command's flags. Bad flags, arguments or files print one
// line on stderr and exit with status 2; a failure at run time exits with status 1.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// usageError marks errors caused by the command line or its input files (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args, reading os.Stdin, and returns the exit status: 0, 1 for a
// failure at run time, 2 for a usage error (the problem is printed as one line on stderr).
func run(args []string, stdout, stderr io.Writer) int {
	err := execute(newRootCmd(os.Stdin, stdout, stderr), args)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "meridian:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// execute runs the command line args on root and returns its error. An error cobra raises
// before any command runs (an unknown command, a wrong number of arguments) is a usage error.
func execute(root *cobra.Command, args []string) error {
	started := false
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	if args == nil {
		args = []string{} // cobra would read os.Args instead
	}
	root.SetArgs(args)
	err := root.Execute()
	var ue usageError
	if err != nil && !started && !errors.As(err, &ue) {
		err = usageError{err}
	}
	return err
}

// commands names the root's commands in its usage errors.
const commands = "bench, lowerbound, protocols, serve, cluster, client, repro or ml"

// newRootCmd returns the meridian command with all its subcommands, reading stdin and writing
// stdout and stderr.
func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "meridian",
		Short: "Meridian: commit protocols for geo-replicated transactional storage",
		Long: `Meridian runs the commit protocols of a geo-replicated transactional key-value store in a
discrete-event WAN simulator (bench, repro) and as real servers (serve, cluster, client), and
checks every run for anomalies.

Flags may come before or after a command's arguments. Bad flags, arguments or files print one
line on stderr and exit with status 2; a failure at run time exits with status 1.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				return usagef("unknown command %q (did you mean %s?)", args[0], strings.Join(s, " or "))
			}
			return usagef("unknown command %q (want %s)", args[0], commands)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(stderr, cmd.UsageString())
			return usagef("missing command (want %s)", commands)
		},
		SilenceErrors:              true, // run prints the error, in one line
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if cmd.HasParent() {
			return usagef("%s: %w", commandName(cmd), err)
		}
		return usageError{err}
	})
	root.AddCommand(
		newBenchCmd(stdout, stderr),
		newLowerBoundCmd(stdout, stderr),
		newProtocolsCmd(stdout),
		newServeCmd(stderr),
		newClusterCmd(stdout, stderr),
		newClientCmd(stdin, stdout),
		newReproCmd(stdout, stderr),
		newMLCmd(stdout, stderr),
		newSwarmCmd(stdout, stderr),
		newNemesisCmd(stdout, stderr),
		newDashboardCmd(stdout),
		newLogCmd(stdin, stdout),
	)
	// Cobra's help and completion commands (completion bash, zsh, fish, powershell), added now
	// rather than when the root runs, so that an unknown command to help, or a missing or unknown
	// shell, is a usage error rather than the root's or completion's help.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			showHelp := c.Run
			c.Run = nil
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if _, rest, err := root.Find(args); err != nil || len(rest) > 0 {
					return usagef("help: unknown command %q", strings.Join(args, " "))
				}
				showHelp(cmd, args)
				return nil
			}
		case "completion":
			c.RunE = func(cmd *cobra.Command, _ []string) error {
				fmt.Fprint(stderr, cmd.UsageString())
				return usagef("completion: missing shell (bash, zsh, fish or powershell)")
			}
		}
	}
	return root
}

// commandName is cmd's path without the root's name: "cluster up".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// noArgs is the Args of a command that takes no positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s: unexpected argument %q", commandName(cmd), args[0])
	}
	return nil
}

// isTerminal reports whether w is a terminal (an *os.File that is a character device), where a
// progress line can redraw itself in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
