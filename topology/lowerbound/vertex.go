package lowerbound

import (
	"fmt"
	"math"
	"slices"
)

// MaxVertexDCs is the largest number of DCs MAOByVertices and Throughput accept. Vertex
// enumeration examines up to C(n(n−1)/2+n, n) constraint subsets, about 3·10⁷ at n = 8, which
// takes seconds; use MAO beyond that.
const MaxVertexDCs = 8

// MAOByVertices solves the same program as MAO, with the same tie-break, by enumerating the
// vertices of the feasible polyhedron (spec §3.3): every choice of n of the n(n−1)/2 pair
// constraints and n non-negativity constraints is solved as a system of equalities, and the
// feasible solution with the smallest sum wins. It is independent of any LP library and serves
// as an exact cross-check of MAO for n ≤ MaxVertexDCs.
//
// The tie-break point (minimum max_A L_A, then lexicographically smallest) need not be a vertex
// of the polyhedron, but it is a vertex of the optimal face lifted by z ≥ L_A, and that face is
// spanned by the constraints tight at some optimal vertex; a second, much smaller enumeration
// over those finds it.
func MAOByVertices(rttMs [][]float64) (Solution, error) {
	if err := validateVertexInput(rttMs); err != nil {
		return Solution{}, err
	}
	n := len(rttMs)
	tol := relTol * maxRTT(rttMs)
	poly := append(pairRows(rttMs, n), nonNegRows(n, n)...)

	var verts [][]float64
	best := math.Inf(1)
	vertices(n, nil, poly, poly, tol, func(x []float64) {
		verts = append(verts, append([]float64(nil), x...))
		best = math.Min(best, sum(x))
	})

	// The same constraints over (L, z), and those tight at some optimal vertex.
	lifted := append(pairRows(rttMs, n+1), nonNegRows(n, n+1)...)
	var tight []halfspace
	for i, r := range poly {
		for _, v := range verts {
			if sum(v) <= best+tol && dot(r.a, v) <= r.b+tol {
				tight = append(tight, lifted[i])
				break
			}
		}
	}
	all := append(lifted, capRows(n)...)
	sumRow := halfspace{a: make([]float64, n+1), b: best}
	for i := range n {
		sumRow.a[i] = 1
	}
	var key []float64 // (z, L_0, ..., L_{n-1}) of the best point so far
	vertices(n+1, []halfspace{sumRow}, append(tight, capRows(n)...), all, tol, func(x []float64) {
		k := append([]float64{x[n]}, x[:n]...)
		if key == nil || lexLess(k, key, tol) {
			key = k
		}
	})
	return newSolution(snap(key[1:])), nil
}

// Throughput solves the throughput-oriented variant of spec §3.4:
//
//	maximise Σ_A 1/(L_A + c)  subject to  L_A + L_B ≥ RTT(A,B),  L ≥ 0
//
// where c = overheadMs > 0 is a per-transaction execution overhead. The objective is convex and
// does not increase along the polyhedron's unbounded directions (latencies only grow), so its
// maximum is at a vertex, found by vertex enumeration. Ties go to the lexicographically smallest
// L; values are snapped as in MAO. Inputs are validated as for MAOByVertices.
func Throughput(rttMs [][]float64, overheadMs float64) (Solution, error) {
	if err := validateVertexInput(rttMs); err != nil {
		return Solution{}, err
	}
	if !(overheadMs > 0) || math.IsInf(overheadMs, 1) {
		return Solution{}, fmt.Errorf("lowerbound: throughput overhead must be positive and finite, got %g", overheadMs)
	}
	n := len(rttMs)
	tol := relTol * maxRTT(rttMs)
	poly := append(pairRows(rttMs, n), nonNegRows(n, n)...)

	var best []float64
	bestObj := math.Inf(-1)
	vertices(n, nil, poly, poly, tol, func(x []float64) {
		var obj float64
		for _, l := range x {
			obj += 1 / (l + overheadMs)
		}
		const rel = 1e-12
		if obj > bestObj*(1+rel) || obj >= bestObj*(1-rel) && lexLess(x, best, tol) {
			best, bestObj = append([]float64(nil), x...), obj
		}
	})
	return newSolution(snap(best)), nil
}

func validateVertexInput(rttMs [][]float64) error {
	if len(rttMs) > MaxVertexDCs {
		return fmt.Errorf("lowerbound: vertex enumeration supports at most %d DCs, got %d", MaxVertexDCs, len(rttMs))
	}
	return validateRTT(rttMs)
}

// nonNegRows returns L_A ≥ 0 for the n latencies among dim variables.
func nonNegRows(n, dim int) []halfspace {
	rows := make([]halfspace, n)
	for i := range rows {
		rows[i] = halfspace{a: unit(dim, i)}
	}
	return rows
}

// vertices calls visit with every point of R^dim at which all rows of fixed and dim−len(fixed)
// linearly independent rows of pick hold with equality and every row of all holds (within tol).
// A degenerate vertex is visited once per basis. visit must copy x to retain it.
//
// Subsets of pick are explored depth first with incremental Gaussian elimination, so a subset
// whose first rows are already linearly dependent is pruned with all its supersets.
func vertices(dim int, fixed, pick, all []halfspace, tol float64, visit func(x []float64)) {
	e := newEliminator(dim)
	for i, r := range fixed {
		if !e.add(i, r.a, r.b) {
			return
		}
	}
	var extend func(from, depth int)
	extend = func(from, depth int) {
		if depth == dim {
			if e.solve(); satisfies(all, e.x, tol) {
				visit(e.x)
			}
			return
		}
		for i := from; i <= len(pick)-(dim-depth); i++ {
			if e.add(depth, pick[i].a, pick[i].b) {
				extend(i+1, depth+1)
			}
		}
	}
	extend(0, len(fixed))
}

// eliminator holds a square system in row echelon form, built one row at a time: row k is
// zero in the pivot columns of rows 0..k−1 and has its largest entry in column pivots[k].
type eliminator struct {
	rows   [][]float64 // augmented rows [a | b]
	pivots []int
	x      []float64
}

func newEliminator(dim int) *eliminator {
	e := &eliminator{rows: make([][]float64, dim), pivots: make([]int, dim), x: make([]float64, dim)}
	for i := range e.rows {
		e.rows[i] = make([]float64, dim+1)
	}
	return e
}

// add stores a·x = b as row k, reduced against rows 0..k−1, and reports whether it is linearly
// independent of them.
func (e *eliminator) add(k int, a []float64, b float64) bool {
	row := e.rows[k]
	copy(row, a)
	n := len(a)
	row[n] = b
	for i, p := range e.pivots[:k] {
		if f := row[p] / e.rows[i][p]; f != 0 {
			for j, v := range e.rows[i] {
				row[j] -= f * v
			}
		}
	}
	best := -1
	for j, v := range row[:n] {
		if !slices.Contains(e.pivots[:k], j) && (best < 0 || math.Abs(v) > math.Abs(row[best])) {
			best = j
		}
	}
	e.pivots[k] = best
	return math.Abs(row[best]) > 1e-9
}

// solve back-substitutes the complete system into e.x.
func (e *eliminator) solve() {
	n := len(e.x)
	for k := n - 1; k >= 0; k-- {
		row, p := e.rows[k], e.pivots[k]
		v := row[n]
		for _, q := range e.pivots[k+1:] {
			v -= row[q] * e.x[q]
		}
		e.x[p] = v / row[p]
	}
}

func satisfies(rows []halfspace, x []float64, tol float64) bool {
	for _, r := range rows {
		if dot(r.a, x) < r.b-tol {
			return false
		}
	}
	return true
}

// lexLess reports whether a precedes b lexicographically, treating entries within tol as equal.
func lexLess(a, b []float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return a[i] < b[i]
		}
	}
	return false
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}
