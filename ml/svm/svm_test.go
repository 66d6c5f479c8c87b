package svm

import (
	"math"
	"testing"

	"github.com/meridian-kv/meridian/ml/dataset"
)

// threeSamples is a tiny training set: feature 0 in two samples, features 1 and 2 in one each.
func threeSamples(t *testing.T) *dataset.Dataset {
	t.Helper()
	d := dataset.New("three")
	for _, s := range []struct {
		label    float64
		features []uint32
		values   []float32
	}{
		{1, []uint32{0, 2}, []float32{0.6, 0.8}},
		{-1, []uint32{0, 1}, []float32{1, 1}},
		{1, []uint32{1}, []float32{0.5}},
	} {
		if err := d.Append(s.label, s.features, s.values); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestComputeIsTheSGDUpdate checks one iteration against the update rule of spec §7 computed by
// hand: g_u = (y·(w·z) < 1 ? −y·z_u : 0) + 2λ·w_u/d_u, w_u −= γ·g_u.
func TestComputeIsTheSGDUpdate(t *testing.T) {
	const lambda = 0.01
	s := New(threeSamples(t), lambda)
	mu := []float64{0.5, -0.25} // w_0, w_2 for sample 0 (features 0 and 2)
	delta := make([]float64, 2)
	s.Compute(0, mu, delta)
	// w·z = 0.5·0.6 − 0.25·0.8 = 0.1 < 1: the hinge is active. d_0 = 2, d_2 = 1. Values are
	// stored as float32.
	z0, z2 := float64(float32(0.6)), float64(float32(0.8))
	want := []float64{
		0.5 - 0.1*(2*lambda*0.5/2-z0),
		-0.25 - 0.1*(2*lambda*-0.25/1-z2),
	}
	for k := range want {
		if math.Abs(delta[k]-want[k]) > 1e-15 {
			t.Errorf("delta[%d] = %v, want %v", k, delta[k], want[k])
		}
	}
	// Sample 2 (y = +1, z_1 = 0.5) with w_1 = 4: margin 2 ≥ 1, only the regularizer acts.
	s.Compute(2, []float64{4}, delta[:1])
	if want := 4 - 0.1*(2*lambda*4/2); math.Abs(delta[0]-want) > 1e-15 {
		t.Errorf("outside the margin: delta = %v, want %v", delta[0], want)
	}
}

// TestStepSchedule: γ starts at 0.1 and is multiplied by 0.9 after every epoch.
func TestStepSchedule(t *testing.T) {
	s := New(threeSamples(t), DefaultLambda)
	for epoch := range Epochs {
		if want := InitialStep * math.Pow(StepDecay, float64(epoch)); math.Abs(s.Step()-want) > 1e-15 {
			t.Fatalf("epoch %d: step %v, want %v", epoch+1, s.Step(), want)
		}
		s.EndEpoch()
	}
}

// TestAccuracyAndObjective evaluates a fixed model by hand.
func TestAccuracyAndObjective(t *testing.T) {
	d := threeSamples(t)
	w := []float64{1, -1, 0}
	// Margins: 0.6, 0, -0.5 → predictions +1, +1 (0 counts as +1), -1: one right of three.
	if got := Accuracy(w, d); math.Abs(got-1.0/3) > 1e-15 {
		t.Errorf("accuracy %v, want 1/3", got)
	}
	s := New(d, 0.5)
	// Hinge: max(0, 1−0.6) + max(0, 1+0) + max(0, 1+0.5) = 2.9; λ·Σw² = 0.5·2 = 1; over 3 samples.
	if got, want := s.Objective(w), (2.9+1)/3; math.Abs(got-want) > 1e-6 { // values are float32
		t.Errorf("objective %v, want %v", got, want)
	}
}
