package multipaxos

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/verify/history"
)

// TestPropertySafety runs both variants over the swarm's random seeds (skew, jitter, contention,
// outages that sometimes take the leader, partitions, slow links, lossy, duplicating and
// reordering networks, random leases short enough to trigger fail-overs) and requires the checker
// to find no anomaly and every transaction to finish once the faults end.
func TestPropertySafety(t *testing.T) {
	for _, proto := range []string{"multipaxos-lo", "multipaxos-hi"} {
		t.Run(proto, func(t *testing.T) {
			swarm.Run(t, proto, "go test ./protocols/smr/multipaxos -run 'TestPropertySafety/"+proto+"$'")
		})
	}
}

// TestSimulationIsDeterministic runs one faulty, chaotic, batched swarm configuration of each
// variant twice and requires byte-identical histories and identical simulator counters; another
// seed must give another history.
func TestSimulationIsDeterministic(t *testing.T) {
	for _, proto := range []string{"multipaxos-lo", "multipaxos-hi"} {
		opts := swarm.Options(proto, 4)
		opts.KeepHistory = true
		opts.Params[batch.ParamWindow] = "15"
		opts.Chaos = sim.Chaos{LossProb: 0.05, DuplicateProb: 0.1, Reorder: true, ExtraDelayMaxUs: 100_000}
		first, second := runJSONL(t, opts, proto), runJSONL(t, opts, proto)
		if !bytes.Equal(first, second) {
			t.Fatalf("%s: two runs of one configuration differ (%d vs %d history bytes)", proto, len(first), len(second))
		}
		opts.Seed++
		if bytes.Equal(first, runJSONL(t, opts, proto)) {
			t.Fatalf("%s: a different seed produced the same history", proto)
		}
	}
}

func runJSONL(t *testing.T, opts bench.Options, proto string) []byte {
	t.Helper()
	res, err := bench.Run(opts, proto)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := history.WriteJSONL(&buf, res.History); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&buf, "%+v", res.Sim)
	return buf.Bytes()
}
