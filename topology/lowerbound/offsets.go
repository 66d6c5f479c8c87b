package lowerbound

import (
	"fmt"
	"math"
	"strconv"
)

// roundUpTol absorbs floating-point noise before RoundUp takes the ceiling.
const roundUpTol = 1e-9

// feasTol is the slack, in ms, that Feasible allows on each pair constraint, so that the output
// of MAO on fractional RTTs (exact only up to rounding) is accepted.
const feasTol = 1e-6

// RoundUp returns each latency rounded up to a whole millisecond. Rounding up preserves
// feasibility, and applied to MAO solved on unrounded RTT means it reproduces the paper's target
// latencies (GAP-H8). Values less than 1e-9 above an integer are treated as that integer, so
// floating-point noise does not add a millisecond: 5.0000000001 rounds to 5, 5.1 to 6.
func RoundUp(L []float64) []float64 {
	out := make([]float64, len(L))
	for i, v := range L {
		out[i] = math.Ceil(v - roundUpTol)
	}
	return out
}

// Feasible reports whether the latencies L satisfy every Lemma 1 constraint
// L_A + L_B ≥ RTT(A,B) and L ≥ 0 (each within 1e-6 ms); the error names the first violation by
// DC index, e.g. "L[0]+L[4] = 200 < RTT 268".
func Feasible(L []float64, rttMs [][]float64) error {
	return FeasibleNamed(L, rttMs, nil)
}

// FeasibleNamed is Feasible with DC names in the error, e.g. "L[V]+L[S] = 200 < RTT 268".
// names may be nil, in which case DC indices are used.
func FeasibleNamed(L []float64, rttMs [][]float64, names []string) error {
	if err := validateRTT(rttMs); err != nil {
		return err
	}
	n := len(rttMs)
	if len(L) != n {
		return fmt.Errorf("lowerbound: %d latencies for %d DCs", len(L), n)
	}
	if names != nil && len(names) != n {
		return fmt.Errorf("lowerbound: %d names for %d DCs", len(names), n)
	}
	for i, l := range L {
		if l < -feasTol || math.IsNaN(l) {
			return fmt.Errorf("lowerbound: infeasible: L[%s] = %g < 0", label(names, i), l)
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if s := L[i] + L[j]; s < rttMs[i][j]-feasTol {
				return fmt.Errorf("lowerbound: infeasible: L[%s]+L[%s] = %g < RTT %g", label(names, i), label(names, j), s, rttMs[i][j])
			}
		}
	}
	return nil
}

// ThroughputTxnPerSec is the paper's throughput estimate 1000·N·Σ_A 1/L_A in transactions per
// second, for N clients per DC each running one transaction at a time with latencies L in ms.
// A zero latency makes the estimate infinite, and +Inf is returned.
func ThroughputTxnPerSec(L []float64, clientsPerDC int) float64 {
	var s float64
	for _, l := range L {
		if l == 0 {
			return math.Inf(1)
		}
		s += 1 / l
	}
	return 1000 * float64(clientsPerDC) * s
}

// Offsets returns the Helios commit offsets of Eq. 4.5 for target latencies L:
// co[A][B] = L_A − RTTest(A,B)/2 for B ≠ A and co[A][A] = 0, with negative estimated RTTs
// clamped to 0. If L is feasible for rttEstMs, Rule 1 holds, since co[A][B] + co[B][A] =
// L_A + L_B − RTTest(A,B); a wrong estimate then costs latency, never safety. rttEstMs must be
// len(L)×len(L); Offsets panics otherwise.
func Offsets(L []float64, rttEstMs [][]float64) [][]float64 {
	n := len(L)
	if len(rttEstMs) != n {
		panic(fmt.Sprintf("lowerbound: Offsets: %d latencies but %d RTT rows", n, len(rttEstMs)))
	}
	co := make([][]float64, n)
	for a := range co {
		if len(rttEstMs[a]) != n {
			panic(fmt.Sprintf("lowerbound: Offsets: RTT row %d has %d entries, want %d", a, len(rttEstMs[a]), n))
		}
		co[a] = make([]float64, n)
		for b := range co[a] {
			if b != a {
				co[a][b] = L[a] - math.Max(rttEstMs[a][b], 0)/2
			}
		}
	}
	return co
}

// HeliosBOffsets returns the all-zero n×n offsets of Helios-B (spec §4.8), which need neither RTT
// estimates nor the LP.
func HeliosBOffsets(n int) [][]float64 {
	co := make([][]float64, n)
	for a := range co {
		co[a] = make([]float64, n)
	}
	return co
}

// CheckRule1 validates commit offsets against Rule 1 (spec §4.4): co[A][B] + co[B][A] ≥ 0 for
// every pair, checked exactly because safety depends on it. The error names the first violating
// pair and its sum. co must be square; names may be nil, in which case DC indices are used.
func CheckRule1(co [][]float64, names []string) error {
	n := len(co)
	for a, row := range co {
		if len(row) != n {
			return fmt.Errorf("lowerbound: offset matrix is not square: %d rows but row %d has %d entries", n, a, len(row))
		}
	}
	if names != nil && len(names) != n {
		return fmt.Errorf("lowerbound: %d names for %d DCs", len(names), n)
	}
	for a := range n {
		for b := a + 1; b < n; b++ {
			if s := co[a][b] + co[b][a]; !(s >= 0) {
				return fmt.Errorf("lowerbound: Rule 1 violated: co[%s][%s] + co[%s][%s] = %g < 0",
					label(names, a), label(names, b), label(names, b), label(names, a), s)
			}
		}
	}
	return nil
}

// PredictedLatency returns the commit latency Eq. 4.4 predicts at each DC under synchronised
// clocks and one-way delays of RTT/2: L_A = max_{B≠A} (co[A][B] + RTT(A,B)/2). A commit cannot
// finish before it is requested, so the result is at least 0 (spec §4.10), and it is 0 for a
// single DC. co and rttMs must be n×n.
func PredictedLatency(co [][]float64, rttMs [][]float64) []float64 {
	L := make([]float64, len(co))
	for a := range co {
		for b := range co[a] {
			if b != a {
				L[a] = math.Max(L[a], co[a][b]+rttMs[a][b]/2)
			}
		}
	}
	return L
}

// label names DC i in error messages.
func label(names []string, i int) string {
	if names == nil {
		return strconv.Itoa(i)
	}
	return names[i]
}
