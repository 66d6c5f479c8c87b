package lowerbound

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// snapTol is how close a computed latency must be to a multiple of 0.5 ms to be snapped onto it.
// MAO optima are half-integral for integer RTTs (the dual is a fractional matching), so snapping
// removes floating-point noise without moving any genuine value.
const snapTol = 1e-7

// Solution is a vector of per-DC commit latencies together with its sum and average.
type Solution struct {
	// LatencyMs holds L_A for every DC A, in DC order.
	LatencyMs []float64
	// SumMs is Σ_A L_A.
	SumMs float64
	// AverageMs is SumMs divided by the number of DCs.
	AverageMs float64
}

// halfspace is the constraint a·x ≥ b.
type halfspace struct {
	a []float64
	b float64
}

// MAO solves the Minimum Average Optimal linear program (Problem 1, spec §3.3):
//
//	minimise Σ_A L_A  subject to  L_A + L_B ≥ RTT(A,B) for all A ≠ B,  L ≥ 0
//
// with gonum's simplex. Optima can be non-unique; following GAP-H8 the tie is broken by follow-up
// LPs that, with the sum held at its optimum, minimise max_A L_A and then L_0, L_1, ... in DC
// order, so the answer is deterministic. Values within 1e-7 of a multiple of 0.5 are snapped
// onto it, so integer RTTs give exact results.
//
// rttMs must be square, symmetric, finite and non-negative with a zero diagonal, and describe at
// least two DCs. To reproduce the paper's latencies, pass unrounded RTT means and apply RoundUp
// to the result (GAP-H8).
func MAO(rttMs [][]float64) (Solution, error) {
	if err := validateRTT(rttMs); err != nil {
		return Solution{}, err
	}
	n := len(rttMs)
	// gonum's simplex uses absolute tolerances, so solve with RTTs scaled into [0, 1].
	scale := maxRTT(rttMs)
	scaled := make([][]float64, n)
	for i, row := range rttMs {
		scaled[i] = make([]float64, n)
		for j, v := range row {
			scaled[i][j] = v / scale
		}
	}

	// Variables are L_0..L_{n-1} and z ≥ every L_A. The rows L_A ≤ 1 cut off no optimum, since
	// an optimal L_A never exceeds A's largest RTT, and make L = z = 1 a vertex to start from.
	rows := append(pairRows(scaled, n+1), capRows(n)...)
	for i := range n {
		rows = append(rows, halfspace{a: negate(unit(n+1, i)), b: -1})
	}
	x := make([]float64, n+1)
	for i := range x {
		x[i] = 1
	}
	objectives := [][]float64{make([]float64, n+1), unit(n+1, n)}
	for i := range n {
		objectives[0][i] = 1
		objectives = append(objectives, unit(n+1, i))
	}
	for _, c := range objectives {
		var err error
		if x, err = simplexMin(c, rows, x); err != nil {
			return Solution{}, fmt.Errorf("lowerbound: simplex: %w", err)
		}
		// Hold this objective at its optimum for the following tie-break stages; the slack keeps
		// x a vertex of the next stage, with this row's surplus basic.
		rows = append(rows, halfspace{a: negate(c), b: -(dot(c, x) + relTol)})
	}
	for i := range n {
		x[i] *= scale
	}
	return newSolution(snap(x[:n])), nil
}

// simplexMin minimises c·x subject to x ≥ 0 and rows, starting from the vertex x0. It adds one
// surplus variable per row to reach the standard form A·x = b, x ≥ 0 that lp.Simplex expects, and
// passes it a basis of x0: gonum's own phase I is slower and fails on some degenerate instances.
func simplexMin(c []float64, rows []halfspace, x0 []float64) ([]float64, error) {
	nv, m := len(c), len(rows)
	a := mat.NewDense(m, nv+m, nil)
	b := make([]float64, m)
	start := slices.Clone(x0)
	for i, r := range rows {
		for j, v := range r.a {
			a.Set(i, j, v)
		}
		a.Set(i, nv+i, -1)
		b[i] = r.b
		start = append(start, dot(r.a, x0)-r.b)
	}
	cost := make([]float64, nv+m)
	copy(cost, c)
	_, x, err := lp.Simplex(cost, a, b, 1e-10, basisAt(a, b, start))
	if err != nil {
		return nil, err
	}
	return x[:nv], nil
}

// basisAt returns m linearly independent columns of the m-row matrix a, taken greedily in order
// of decreasing x. If x is a vertex of {a·x = b, x ≥ 0}, its positive entries come first and are
// independent, so x is the basic solution of the returned basis. On an ill-conditioned basis the
// basic solution's zero entries can come out slightly negative, which lp.Simplex rejects with a
// panic (below −1e-13); basisAt then returns nil so that lp.Simplex finds a basis itself.
func basisAt(a *mat.Dense, b, x []float64) []int {
	m, _ := a.Dims()
	order := make([]int, len(x))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(x[j], x[i]) })
	e := newEliminator(m)
	ab := mat.NewDense(m, m, nil)
	var basis []int
	for _, j := range order {
		if len(basis) == m {
			break
		}
		col := mat.Col(nil, j, a)
		if e.add(len(basis), col, 0) {
			ab.SetCol(len(basis), col)
			basis = append(basis, j)
		}
	}
	var xb mat.VecDense
	if xb.SolveVec(ab, mat.NewVecDense(m, b)) != nil || slices.Min(xb.RawVector().Data) < -1e-13 {
		return nil
	}
	return basis
}

// pairRows returns the Lemma 1 constraints L_A + L_B ≥ RTT(A,B), for A < B in DC order, over
// dim ≥ n variables of which the first n are the latencies.
func pairRows(rttMs [][]float64, dim int) []halfspace {
	var rows []halfspace
	for i := range rttMs {
		for j := i + 1; j < len(rttMs); j++ {
			a := make([]float64, dim)
			a[i], a[j] = 1, 1
			rows = append(rows, halfspace{a: a, b: rttMs[i][j]})
		}
	}
	return rows
}

// capRows returns z ≥ L_A for every DC, where z is variable n.
func capRows(n int) []halfspace {
	rows := make([]halfspace, n)
	for i := range rows {
		a := unit(n+1, n)
		a[i] = -1
		rows[i] = halfspace{a: a}
	}
	return rows
}

// validateRTT checks that rttMs is a usable RTT matrix for at least two DCs.
func validateRTT(rttMs [][]float64) error {
	n := len(rttMs)
	if n < 2 {
		return fmt.Errorf("lowerbound: need at least 2 DCs, got %d", n)
	}
	for i, row := range rttMs {
		if len(row) != n {
			return fmt.Errorf("lowerbound: RTT matrix is not square: %d rows but row %d has %d entries", n, i, len(row))
		}
	}
	for i, row := range rttMs {
		for j, v := range row {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				return fmt.Errorf("lowerbound: RTT[%d][%d] = %g is not finite", i, j, v)
			case v < 0:
				return fmt.Errorf("lowerbound: RTT[%d][%d] = %g is negative", i, j, v)
			case i == j && v != 0:
				return fmt.Errorf("lowerbound: RTT[%d][%d] = %g, want 0 on the diagonal", i, j, v)
			case v != rttMs[j][i]:
				return fmt.Errorf("lowerbound: RTT matrix is not symmetric: RTT[%d][%d] = %g but RTT[%d][%d] = %g", i, j, v, j, i, rttMs[j][i])
			}
		}
	}
	return nil
}

// relTol is the slack, relative to the largest RTT, used when comparing objective values,
// checking constraints and holding earlier tie-break stages: far above floating-point noise yet
// far below snapTol, since later stages can exploit the slack.
const relTol = 1e-11

// maxRTT returns the largest entry of rttMs, or 1 if that is smaller.
func maxRTT(rttMs [][]float64) float64 {
	m := 1.0
	for _, row := range rttMs {
		for _, v := range row {
			m = math.Max(m, v)
		}
	}
	return m
}

// snap moves every value within snapTol of a multiple of 0.5 onto it, in place.
func snap(l []float64) []float64 {
	for i, v := range l {
		if r := math.Round(2*v) / 2; math.Abs(v-r) <= snapTol {
			l[i] = r + 0 // + 0 turns −0 into 0.
		}
	}
	return l
}

func newSolution(l []float64) Solution {
	s := sum(l)
	return Solution{LatencyMs: l, SumMs: s, AverageMs: s / float64(len(l))}
}

func unit(dim, i int) []float64 {
	e := make([]float64, dim)
	e[i] = 1
	return e
}

func negate(v []float64) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = -x
	}
	return w
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
