package helios

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// randomParams returns Helios-f's registry.Entry.RandomParams: the propagation interval and,
// unless every commit offset is 0 (Helios-B), random commit latencies that satisfy Rule 1 and,
// for f > 0, a grace time around the largest one-way delay: mostly long enough to acknowledge,
// sometimes too short, so that both acknowledgements and NACKs get exercised.
func randomParams(f int, zeroOffsets bool) func(r *rand.Rand, topo *topology.Topology, intervalMs int) protocol.Params {
	return func(r *rand.Rand, topo *topology.Topology, intervalMs int) protocol.Params {
		p := protocol.Params{ParamInterval: fmt.Sprintf("%dms", intervalMs)}
		if zeroOffsets {
			return p
		}
		p[ParamLatencies] = randomLatencies(r, topo)
		if f > 0 {
			maxOneWayMs := 0
			for dc := range topo.N() {
				maxOneWayMs = max(maxOneWayMs, int(topo.MaxRTTMs(dc)/2))
			}
			p[ParamGrace] = fmt.Sprintf("%dms", max(20, maxOneWayMs-50+r.IntN(450)))
		}
		return p
	}
}

// randomLatencies draws a commit latency per datacenter, each at most its largest RTT, and
// raises the smaller of every pair that violates Rule 1 (L_A + L_B ≥ RTT(A, B)); it returns
// them as the latency_ms parameter.
func randomLatencies(r *rand.Rand, topo *topology.Topology) string {
	n := topo.N()
	l := make([]float64, n)
	for a := range n {
		l[a] = float64(r.IntN(int(topo.MaxRTTMs(a)) + 1))
	}
	for a := range n {
		for b := range n {
			if a != b && l[a]+l[b] < topo.RTTMs[a][b] {
				if l[a] < l[b] {
					l[a] = topo.RTTMs[a][b] - l[b]
				} else {
					l[b] = topo.RTTMs[a][b] - l[a]
				}
			}
		}
	}
	parts := make([]string, n)
	for i, v := range l {
		parts[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}
