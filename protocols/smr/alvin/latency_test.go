package alvin

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// slowPath is ALVIN with fast decisions on whose leaders always take the classic path after a
// fast quorum answered: the "ALVIN-F slow path" row of spec §7.1, registered for the tests only.
const slowPath = "alvin-test-slow-path"

func init() {
	e, _ := registry.Lookup("alvin")
	e.New = batch.Wrap(func(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
		r, err := New(cfg, env, true)
		if r != nil {
			r.forceSlow = true
		}
		return r, err
	})
	registry.Register(slowPath, e)
}

// paper7 is spec §7.1's assumed RTT table of the seven sites.
func paper7() *topology.Topology {
	t, ok := topology.Preset("alvin-paper-7")
	if !ok {
		panic("no preset alvin-paper-7")
	}
	return t
}

// zeroLoadMs is §3.10's origin latency per datacenter, from topo's RTTs: with r_k the k-th
// smallest RTT from the origin, r_{FQ−1} on the fast path, r_{FQ−1} + r_{CQ−1} on the slow path,
// 2·r_{CQ−1} without fast decisions.
func zeroLoadMs(topo *topology.Topology, path string) map[string]float64 {
	n := topo.N()
	cq, fq := Quorums(n, true)
	out := map[string]float64{}
	for o, name := range topo.DCs {
		r := slices.Clone(topo.RTTMs[o])
		slices.Sort(r) // r[0] is the origin's own 0, so r[k] is r_k
		switch path {
		case "fast":
			out[name] = r[fq-1]
		case "slow":
			out[name] = r[fq-1] + r[cq-1]
		default:
			out[name] = 2 * r[cq-1]
		}
	}
	return out
}

// TestS12ZeroLoadLatencyPaperTable is spec S12 on §7.1's seven sites: the formulas reproduce the
// spec's analytic table, and the simulated origin latencies of ALVIN-F (fast and slow path) and
// ALVIN-NF match them within 1 ms. The analytic latencies leave out network batching (on by
// default, §5.3), so these runs turn it off.
func TestS12ZeroLoadLatencyPaperTable(t *testing.T) {
	topo := paper7()
	spec := map[string][]float64{ // §7.1: F fast, NF, F slow
		"VA": {160, 240, 280}, "OR": {170, 320, 330}, "IE": {190, 360, 370}, "SP": {260, 380, 450},
		"TK": {160, 220, 270}, "SG": {180, 340, 350}, "SY": {210, 340, 380},
	}
	for i, path := range []string{"fast", "nf", "slow"} {
		for dc, want := range zeroLoadMs(topo, path) {
			if spec[dc][i] != want {
				t.Errorf("%s %s: formula gives %.0f ms, the spec's table %.0f", path, dc, want, spec[dc][i])
			}
		}
	}
	for _, c := range []struct{ proto, path string }{{"alvin", "fast"}, {slowPath, "slow"}, {"alvin-nf", "nf"}} {
		t.Run(c.proto, func(t *testing.T) {
			opts := uncontended(t)
			opts.Topology = topo
			swarm.CheckLatencies(t, opts, c.proto, zeroLoadMs(topo, c.path))
		})
	}
}

// TestS12ZeroLoadLatencyAWSHelios is spec S12 on the five-site aws-helios preset: FQ = CQ = 3,
// so ALVIN's fast path is r_2 and ALVIN-NF 2·r_2, each within 1 ms.
func TestS12ZeroLoadLatencyAWSHelios(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	swarm.CheckLatencies(t, uncontended(t), "alvin", zeroLoadMs(topo, "fast"))
	swarm.CheckLatencies(t, uncontended(t), "alvin-nf", zeroLoadMs(topo, "nf"))
}

// uncontended is swarm.Uncontended on aws-helios without network batching.
func uncontended(t *testing.T) bench.Options {
	opts := swarm.Uncontended(t, "aws-helios")
	opts.Params = protocol.Params{batch.ParamWindow: "0"}
	return opts
}
