package epaxos

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/verify/history"
)

// TestSimulationIsDeterministic: a faulty, skewed, jittery seed with crashes aimed at recovery
// (recovery draws on the replicas' seeded randomness) run twice gives byte-identical histories
// and identical simulator counters, so a failing swarm seed replays exactly.
func TestSimulationIsDeterministic(t *testing.T) {
	run := func() ([]byte, *bench.Result) {
		opts := swarm.Options("epaxos", 15)
		crashDuringRecovery(15, &opts)
		opts.KeepHistory = true
		res, err := bench.Run(opts, "epaxos")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := history.WriteJSONL(&buf, res.History); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), res
	}
	a, first := run()
	b, second := run()
	if !bytes.Equal(a, b) || first.Sim != second.Sim || !reflect.DeepEqual(first.Ordering, second.Ordering) {
		t.Fatalf("two runs of one configuration differ (%d vs %d history bytes, stats %+v vs %+v)", len(a), len(b), first.Sim, second.Sim)
	}
}
