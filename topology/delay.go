package topology

import (
	"math"
	"math/rand/v2"
)

// OneWayDelayUs draws one message's delay from datacenter a to b in microseconds: RTT/2 plus
// jitter from Normal(0, (jitterScale·σ)²/2) truncated at three standard deviations, where σ is
// the pair's RTT standard deviation (spec §6.2), never below 0. Every call draws independently
// of the others. The simulator and the network runtime's WAN emulation both use it, so that
// their links behave alike.
func (t *Topology) OneWayDelayUs(a, b int, jitterScale float64, r *rand.Rand) int64 {
	if t.StdDevMs[a][b]*jitterScale <= 0 {
		return t.DelayUs(a, b, jitterScale, 0)
	}
	return t.DelayUs(a, b, jitterScale, r.NormFloat64())
}

// DelayUs is the delay from datacenter a to b in microseconds when the link's jitter stands at
// z standard deviations: RTT/2 + clamp(z, −3, 3)·jitterScale·σ/√2, never below 0. With z a
// standard normal draw this is OneWayDelayUs; with z a sample of a JitterProcess, a
// temporally correlated link with the same distribution of delays.
func (t *Topology) DelayUs(a, b int, jitterScale, z float64) int64 {
	delayMs := t.RTTMs[a][b] / 2
	if sd := t.StdDevMs[a][b] * jitterScale / math.Sqrt2; sd > 0 {
		delayMs += max(-3, min(3, z)) * sd
	}
	return max(0, int64(math.Round(delayMs*1000)))
}

// DefaultJitterCorrelationUs is the correlation time of each link's jitter (JitterProcess) that
// the benchmarks and the real servers' WAN emulation use: 100 ms. A WAN path's delay drifts
// slowly (the topologies' standard deviations summarise hours of pings), so messages a few ms
// apart should see nearly the same jitter, not independent draws that a FIFO link turns into
// waits for the slowest recent message; and 100 ms is short enough that every run (20 s and
// more) samples the jitter's whole distribution, hundreds of correlation times, rather than one
// slow offset per link. docs/REPRODUCTION.md (E4.1) has the measurements behind the choice.
const DefaultJitterCorrelationUs = 100_000

// JitterProcess is one directed link's jitter when consecutive messages are not independent:
// a stationary Ornstein–Uhlenbeck process Z in standard-deviation units (dZ = −Z/τ dt +
// √(2/τ) dW), so that Z(t) is a standard normal at every t, as OneWayDelayUs's draws are, and
// two samples Δt apart have correlation exp(−Δt/τ). Measured WAN delay between two regions
// moves slowly (congestion, route changes) against the milliseconds between one protocol's
// messages; with independent draws, a FIFO link makes every message wait for the slowest of
// its recent predecessors, which a real link does not. The zero value, with CorrelationUs set,
// is ready: its first sample draws from the stationary distribution.
type JitterProcess struct {
	CorrelationUs int64 // τ, > 0
	z             float64
	atUs          int64
	started       bool
}

// Sample returns Z at virtual time atUs, moving the process there with the exact transition
// Z' = ρ·Z + √(1−ρ²)·N, ρ = exp(−|Δt|/τ), one standard normal draw from r (none when Δt = 0).
// Samples are expected in time order; one out of order (a sender whose messages leave later
// than its datacenter's other senders') is drawn as if |Δt| apart, and the process stays at
// the later time.
func (p *JitterProcess) Sample(atUs int64, r *rand.Rand) float64 {
	if !p.started {
		p.z, p.atUs, p.started = r.NormFloat64(), atUs, true
		return p.z
	}
	dt := atUs - p.atUs
	if dt == 0 {
		return p.z
	}
	rho := math.Exp(-math.Abs(float64(dt)) / float64(p.CorrelationUs))
	p.z = rho*p.z + math.Sqrt(1-rho*rho)*r.NormFloat64()
	p.atUs = max(p.atUs, atUs)
	return p.z
}
