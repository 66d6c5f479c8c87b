// Package svm is the machine-learning workload of the COP evaluation (spec cop.md §7): stochastic
// gradient descent for a sparse linear support vector machine with the separable cost of
// Hogwild!,
//
//	f(w) = Σ_α [ max(0, 1 − y_α·(w·z_α)) + λ Σ_{u ∈ e_α} w_u² / d_u ],
//
// where e_α are the non-zero features of sample α and d_u the number of training samples with
// feature u. One sample is one iteration, whose read and write sets are both e_α; its update of
// feature u is g_u = (y·(w·z) < 1 ? −y·z_u : 0) + 2λ·w_u/d_u, w_u −= γ·g_u. The step γ starts at
// 0.1 and is multiplied by 0.9 after every epoch, for 20 epochs.
package svm

import "github.com/meridian-kv/meridian/ml/dataset"

// The schedule of the evaluation (seed §6.5).
const (
	InitialStep = 0.1 // γ of the first epoch
	StepDecay   = 0.9 // γ's factor at the end of every epoch
	Epochs      = 20  // epochs of every run
	// DefaultLambda is the regularization weight λ, which the source does not give (A6); it
	// does not affect throughput.
	DefaultLambda = 1e-4
)

// SGD is the per-sample SGD iteration over a training set, the Computation every scheme of
// package cop runs. Compute only reads SGD's fields, so workers may call it concurrently; the
// step changes between epochs only (EndEpoch).
type SGD struct {
	train *dataset.Dataset
	// reg is 2λ/d_u per feature (0 for a feature no sample has), looked up by feature like the
	// parameter itself.
	reg    []float64
	lambda float64
	step   float64
}

// New returns the iteration over train with regularization weight lambda, at the first
// epoch's step.
func New(train *dataset.Dataset, lambda float64) *SGD {
	degree := make([]int, train.NumFeatures)
	for _, u := range train.Features() {
		degree[u]++
	}
	reg := make([]float64, train.NumFeatures)
	for u, d := range degree {
		if d > 0 {
			reg[u] = 2 * lambda / float64(d)
		}
	}
	return &SGD{train: train, reg: reg, lambda: lambda, step: InitialStep}
}

// Compute runs the iteration of sample j: mu holds the sample's feature weights, in feature
// order, and delta receives their new values.
func (s *SGD) Compute(j int, mu, delta []float64) {
	x := s.train.Sample(j)
	dot := 0.0
	for k, v := range x.Values {
		dot += mu[k] * float64(v)
	}
	hinge := x.Label*dot < 1
	for k, u := range x.Features {
		g := s.reg[u] * mu[k]
		if hinge {
			g -= x.Label * float64(x.Values[k])
		}
		delta[k] = mu[k] - s.step*g
	}
}

// Step returns the current step γ.
func (s *SGD) Step() float64 { return s.step }

// EndEpoch applies the step decay at the end of an epoch.
func (s *SGD) EndEpoch() { s.step *= StepDecay }

// Accuracy returns the share of d's samples whose label is the sign of w·z (0 counts as +1).
func Accuracy(w []float64, d *dataset.Dataset) float64 {
	right := 0
	for i := range d.Len() {
		x := d.Sample(i)
		if (margin(w, x) >= 0) == (x.Label > 0) {
			right++
		}
	}
	return float64(right) / float64(d.Len())
}

// Objective returns f(w)/n on the training set the SGD iterates over, the quantity it
// minimizes: the mean hinge loss plus λ·Σ_u w_u²/n (each feature's d_u terms sum to w_u²).
func (s *SGD) Objective(w []float64) float64 {
	hinge := 0.0
	for i := range s.train.Len() {
		x := s.train.Sample(i)
		hinge += max(0, 1-x.Label*margin(w, x))
	}
	reg := 0.0
	for u, r := range s.reg {
		if r > 0 { // a feature of the training set
			reg += w[u] * w[u]
		}
	}
	return (hinge + s.lambda*reg) / float64(s.train.Len())
}

// margin returns w·z for sample x.
func margin(w []float64, x dataset.Sample) float64 {
	dot := 0.0
	for k, u := range x.Features {
		dot += w[u] * float64(x.Values[k])
	}
	return dot
}
