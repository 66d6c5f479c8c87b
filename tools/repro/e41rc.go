package repro

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// rcMajority is E4.1's reference for Replicated Commit at each datacenter: the expected time from
// a commit request to the majority-th vote (the local one plus the ⌊n/2⌋ fastest remote ones)
// when every message crosses the simulator's network (spec §6.2: one-way delay RTT/2 plus
// jitter Normal(0, σ²/2) truncated at ±3σ/√2, FIFO per directed link; with a correlation time,
// each link's jitter an Ornstein–Uhlenbeck process of that distribution), plus the client's round
// trip to its replica.
type rcMajority struct {
	staticMs []float64 // the ⌊n/2⌋-th smallest RTT (§5.6), no jitter
	jitterMs []float64 // expected order statistic of jittered RTTs, links otherwise idle
	loadedMs []float64 // the same, each link also carrying the run's message rate (FIFO)
}

// rcMCSamples is how many commits the Monte Carlo draws per datacenter, and how many messages
// it passes through each link's FIFO queue.
const rcMCSamples = 200_000

// rcExpectation computes rcMajority for res, a Replicated Commit run on topo with the given
// jitter scale and client hop. The loaded case needs each directed link's message rate, which
// the simulator reports only in total: Replicated Commit broadcasts every ReadLock, Accept and
// Decision of a transaction coordinated at A to every other datacenter and each answers every
// one, so link A→B (and B→A) carries a share of the messages proportional to the transactions
// attempted at A plus those attempted at B. Sends on a link are taken as a Poisson process at
// that rate, and a message's excess over RTT/2 follows the FIFO link's recursion
// e_i = max(e_{i−1} − gap_i, jitter_i) (Lindley's): a message cannot overtake its predecessor.
// With corrUs > 0 (bench.Options.JitterCorrelationUs) jitter_i follows the link's
// Ornstein–Uhlenbeck process across the gaps instead of being drawn afresh.
func rcExpectation(topo *topology.Topology, jitter float64, corrUs, clientHopUs, durationUs int64, res *bench.Result, seed uint64) rcMajority {
	n := topo.N()
	attempts := make([]float64, n)
	total := 0.0
	for i, dc := range res.DCs {
		attempts[i] = float64(dc.Committed + dc.Aborted)
		total += attempts[i]
	}
	msgPerMs := float64(res.Sim.Messages) / (float64(durationUs) / 1000)
	rng := rand.New(rand.NewPCG(seed, 0x5243)) // "RC"
	hopMs := 2 * float64(clientHopUs) / 1000
	out := rcMajority{}
	// excess[a][b] holds rcMCSamples draws of a message's delay above RTT/2 on link a→b.
	idle, loaded := make([][][]float64, n), make([][][]float64, n)
	for a := range n {
		idle[a], loaded[a] = make([][]float64, n), make([][]float64, n)
		for b := range n {
			if a == b {
				continue
			}
			sd := topo.StdDevMs[a][b] * jitter / math.Sqrt2
			rate := 0.0
			if total > 0 {
				rate = msgPerMs * (attempts[a] + attempts[b]) / (2 * float64(n-1) * total)
			}
			idle[a][b] = linkExcess(rng, sd, 0, corrUs)
			loaded[a][b] = linkExcess(rng, sd, rate, corrUs)
		}
	}
	k := n / 2 // remote votes needed
	for a := range n {
		var static []float64
		for b := range n {
			if b != a {
				static = append(static, topo.RTTMs[a][b])
			}
		}
		slices.Sort(static)
		out.staticMs = append(out.staticMs, static[k-1]+hopMs)
		out.jitterMs = append(out.jitterMs, orderStatMean(topo, a, k, idle)+hopMs)
		out.loadedMs = append(out.loadedMs, orderStatMean(topo, a, k, loaded)+hopMs)
	}
	return out
}

// linkExcess draws rcMCSamples consecutive excess delays of a FIFO link whose sends form a
// Poisson process of ratePerMs (0: an idle link, where each message has only its own jitter),
// the jitter independent per message (corrUs = 0) or an Ornstein–Uhlenbeck process of
// correlation time corrUs sampled at the sends (the same distribution, so an idle link's
// samples are drawn independently either way).
func linkExcess(rng *rand.Rand, sdMs, ratePerMs float64, corrUs int64) []float64 {
	z := rng.NormFloat64()
	jitterAfter := func(gapMs float64) float64 {
		if corrUs > 0 && ratePerMs > 0 {
			rho := math.Exp(-gapMs * 1000 / float64(corrUs))
			z = rho*z + math.Sqrt(1-rho*rho)*rng.NormFloat64()
		} else {
			z = rng.NormFloat64()
		}
		return max(-3, min(3, z)) * sdMs
	}
	out := make([]float64, rcMCSamples)
	e := max(-3, min(3, z)) * sdMs
	for range 1000 { // reach the stationary regime
		if ratePerMs > 0 {
			gap := rng.ExpFloat64() / ratePerMs
			e = max(e-gap, jitterAfter(gap))
		}
	}
	for i := range out {
		if ratePerMs > 0 {
			gap := rng.ExpFloat64() / ratePerMs
			e = max(e-gap, jitterAfter(gap))
		} else {
			e = jitterAfter(0)
		}
		out[i] = e
	}
	return out
}

// orderStatMean is the mean over the samples of the k-th smallest RTT from a, where the RTT to
// b adds one excess sample of each direction (independent: different links and times).
func orderStatMean(topo *topology.Topology, a, k int, excess [][][]float64) float64 {
	n := topo.N()
	rtts := make([]float64, 0, n-1)
	sum := 0.0
	for i := range rcMCSamples {
		rtts = rtts[:0]
		for b := range n {
			if b != a {
				rtts = append(rtts, topo.RTTMs[a][b]+excess[a][b][i]+excess[b][a][i])
			}
		}
		slices.Sort(rtts)
		sum += rtts[k-1]
	}
	return sum / rcMCSamples
}
