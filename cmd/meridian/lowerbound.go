package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/topology/lowerbound"
)

// loadTopology loads a preset or file and prints a file's warnings to stderr. The presets are
// measured matrices whose triangle-inequality violations are known and expected.
func loadTopology(nameOrPath string, stderr io.Writer) (*topology.Topology, error) {
	topo, warnings, err := topology.Load(nameOrPath)
	if err != nil {
		return nil, usageError{err}
	}
	if _, preset := topology.Preset(nameOrPath); preset {
		return topo, nil
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "meridian: warning:", w)
	}
	return topo, nil
}

type lowerBoundJSON struct {
	Topology    string        `json:"topology"`
	Datacenters []dcBoundJSON `json:"datacenters"`
	AverageMs   float64       `json:"average_ms"`
	OffsetsMs   [][]float64   `json:"commit_offsets_ms"`
	Throughput  []dcBoundJSON `json:"throughput_vertex,omitempty"`
}

type dcBoundJSON struct {
	Name      string  `json:"name"`
	LatencyMs float64 `json:"latency_ms"`
}

// lowerBoundOptions are the flags of `meridian lowerbound`.
type lowerBoundOptions struct {
	topology   string
	jsonFile   string
	overheadMs float64
}

// newLowerBoundCmd returns the lowerbound command.
func newLowerBoundCmd(stdout, stderr io.Writer) *cobra.Command {
	var o lowerBoundOptions
	cmd := &cobra.Command{
		Use:   "lowerbound [flags]",
		Short: "print each datacenter's optimal commit latency and the commit offsets",
		Long: `Print each datacenter's minimum-average-optimal commit latency on a topology (the lower bound
L_A + L_B >= RTT(A,B) for every pair) and Helios's commit offsets.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runLowerBound(o, stdout, stderr) },
	}
	f := cmd.Flags()
	f.StringVar(&o.topology, "topology", "aws-helios", topologyUsage)
	f.StringVar(&o.jsonFile, "json", "", "also write the result as JSON to this file")
	f.Float64Var(&o.overheadMs, "throughput-overhead-ms", 0, "if > 0, also solve the throughput variant max Σ 1/(L+c) with this c")
	completeTopology(cmd, "topology")
	return cmd
}

// topologyUsage describes a --topology flag.
var topologyUsage = "topology preset (" + strings.Join(topology.PresetNames(), ", ") + ") or YAML/JSON file"

// completeTopology completes flag name of cmd with the topology presets, or a file.
func completeTopology(cmd *cobra.Command, name string) {
	_ = cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return topology.PresetNames(), cobra.ShellCompDirectiveDefault
	})
}

// runLowerBound runs `meridian lowerbound`.
func runLowerBound(o lowerBoundOptions, stdout, stderr io.Writer) error {
	topo, err := loadTopology(o.topology, stderr)
	if err != nil {
		return err
	}
	sol, err := lowerbound.MAO(topo.RTTMs)
	if err != nil {
		return err
	}
	offsets := lowerbound.Offsets(lowerbound.RoundUp(sol.LatencyMs), topo.RTTMs)
	out := lowerBoundJSON{Topology: topo.Name, AverageMs: sol.AverageMs, OffsetsMs: offsets}
	for i, dc := range topo.DCs {
		out.Datacenters = append(out.Datacenters, dcBoundJSON{Name: dc, LatencyMs: sol.LatencyMs[i]})
	}
	if o.overheadMs > 0 {
		tp, err := lowerbound.Throughput(topo.RTTMs, o.overheadMs)
		if err != nil {
			return err
		}
		for i, dc := range topo.DCs {
			out.Throughput = append(out.Throughput, dcBoundJSON{Name: dc, LatencyMs: tp.LatencyMs[i]})
		}
	}
	printLowerBound(stdout, topo, out)
	if o.jsonFile != "" {
		return writeJSON(o.jsonFile, out)
	}
	return nil
}

func printLowerBound(w io.Writer, topo *topology.Topology, out lowerBoundJSON) {
	fmt.Fprintf(w, "Minimum-average-optimal commit latencies on %s (L_A + L_B ≥ RTT(A,B) for every pair)\n\n", topo.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DC\tlatency ms\t")
	for _, d := range out.Datacenters {
		fmt.Fprintf(tw, "%s\t%.2f\t\n", d.Name, d.LatencyMs)
	}
	fmt.Fprintf(tw, "average\t%.2f\t\n", out.AverageMs)
	tw.Flush()
	if out.Throughput != nil {
		fmt.Fprintln(w, "\nThroughput-optimal vertex (max Σ 1/(L+c)):")
		for _, d := range out.Throughput {
			fmt.Fprintf(w, "  %s %.2f ms\n", d.Name, d.LatencyMs)
		}
	}
	fmt.Fprintln(w, "\nHelios commit offsets co[A][B] in ms (Eq. 4.5 from the latencies rounded up; row A, column B):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "A\\B\t")
	for _, dc := range topo.DCs {
		fmt.Fprintf(tw, "%s\t", dc)
	}
	fmt.Fprintln(tw)
	for a, row := range out.OffsetsMs {
		fmt.Fprintf(tw, "%s\t", topo.DCs[a])
		for _, v := range row {
			fmt.Fprintf(tw, "%g\t", v)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return usageError{fmt.Errorf("cannot write %s: %w", path, err)}
	}
	return nil
}

// newProtocolsCmd returns the protocols command.
func newProtocolsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "protocols",
		Short: "list the registered protocols",
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return runProtocols(stdout) },
	}
}

// runProtocols prints every registered protocol's name and description.
func runProtocols(stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, name := range registry.Names() {
		e, _ := registry.Lookup(name)
		fmt.Fprintf(tw, "%s\t%s\n", name, e.Description)
	}
	return tw.Flush()
}
