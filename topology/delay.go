package topology

import (
	"math"
	"math/rand/v2"
)

// OneWayDelayUs draws one message's delay from datacenter a to b in microseconds: RTT/2 plus
// jitter from Normal(0, (jitterScale·σ)²/2) truncated at three standard deviations, where σ is
// the pair's RTT standard deviation (spec §6.2), never below 0. The simulator and the network
// runtime's WAN emulation both use it, so that their links behave alike.
func (t *Topology) OneWayDelayUs(a, b int, jitterScale float64, r *rand.Rand) int64 {
	delayMs := t.RTTMs[a][b] / 2
	if sd := t.StdDevMs[a][b] * jitterScale / math.Sqrt2; sd > 0 {
		delayMs += max(-3, min(3, r.NormFloat64())) * sd
	}
	return max(0, int64(math.Round(delayMs*1000)))
}
