package main

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newNemesisCmd returns `meridian nemesis`: bench --cluster with --nemesis, under a name of its
// own. It takes every flag of bench, with --schedule for --nemesis.
func newNemesisCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := newBenchCmd(stdout, stderr)
	cmd.Use = "nemesis --cluster FILE --schedule S [bench flags]"
	cmd.Short = "run a bench against a running cluster while killing, pausing, cutting and skewing its nodes"
	cmd.Long = `nemesis runs a bench against a running local cluster (meridian cluster up) while it injects the
faults of its schedule, then checks the run's history and that every commit a client saw
acknowledged is installed. The schedule is comma-separated KIND:TARGET@START-END, times from
the start of the bench:

  kill:A@2s-4s        SIGKILL node A at 2 s, restart it from its data at 4 s
  pause:B@5s-6s       SIGSTOP node B, SIGCONT it
  cut:A-B@1s-3s       drop every message between A and B, both ways, then heal
  skew:C+200ms@2s-5s  move C's clock 200 ms ahead (or C-50ms back: it holds until caught up)

cut and skew go through the nodes' admin endpoints: start the cluster with cluster up --admin.
Every fault must be over before the bench ends. It takes every flag of bench; it is the same
as bench --cluster FILE --nemesis S.`
	cmd.Example = `  meridian cluster up --dir /tmp/mc --topology table4.1 --protocol helios-1 --admin
  meridian nemesis --cluster /tmp/mc/cluster.yaml --duration 12s \
    --schedule kill:C@1s-3s,pause:B@4s-5s,cut:A-B@6s-8s,skew:A+150ms@2s-9s`
	fs := cmd.Flags()
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "schedule" {
			name = "nemesis"
		}
		return pflag.NormalizedName(name)
	})
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !c.Flags().Changed("cluster") || !c.Flags().Changed("nemesis") {
			return usagef("nemesis: --cluster and --schedule are required")
		}
		return run(c, args)
	}
	return cmd
}
