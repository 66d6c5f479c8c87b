// Package train runs the training jobs of the COP evaluation (spec cop.md §7, §9): it loads or
// generates a dataset and plans it in one of COP's planning modes (Load), then trains the SVM of
// package svm with one scheme of package cop for a number of epochs (Run), timing every epoch,
// evaluating the model after each and hashing the final parameters. `meridian ml` is its
// command line.
package train

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
)

// PlanningMode is where and when COP's plan is made (spec §1.3).
type PlanningMode int

const (
	// Offline plans in one pass after loading (Alg. 12; mode 2, a plan stored with the dataset).
	Offline PlanningMode = iota
	// Fused plans each sample as it is loaded (mode 3).
	Fused
	// FirstEpoch runs COP's first epoch under Locking and records the plan there (mode 4).
	FirstEpoch
	// Sources splits the training set into contiguous batches, plans each on its own as a
	// collection site would, and transposes them at the central site (mode 1, §4.3).
	Sources
)

// Planning is a planning mode and, for Sources, the number of sources.
type Planning struct {
	Mode    PlanningMode
	Sources int
}

// ParsePlanning parses "offline", "fused", "first-epoch" or "sources:N".
func ParsePlanning(s string) (Planning, error) {
	switch s {
	case "offline":
		return Planning{Mode: Offline}, nil
	case "fused":
		return Planning{Mode: Fused}, nil
	case "first-epoch":
		return Planning{Mode: FirstEpoch}, nil
	}
	if n, ok := strings.CutPrefix(s, "sources:"); ok {
		if k, err := strconv.Atoi(n); err == nil && k >= 1 {
			return Planning{Mode: Sources, Sources: k}, nil
		}
	}
	return Planning{}, fmt.Errorf("unknown planning %q (want offline, fused, first-epoch or sources:N with N >= 1)", s)
}

// String returns the form ParsePlanning reads.
func (p Planning) String() string {
	switch p.Mode {
	case Fused:
		return "fused"
	case FirstEpoch:
		return "first-epoch"
	case Sources:
		return "sources:" + strconv.Itoa(p.Sources)
	}
	return "offline"
}

// Input says which data to load and how to plan it.
type Input struct {
	// Dataset is a generator (kdd-like, imdb-like, hotspot:H; see dataset.Lookup) or a LIBSVM
	// file.
	Dataset string
	// Scale and Seed pick a generator's size and stream.
	Scale dataset.Scale
	Seed  uint64
	// Shape, if not nil, is generated instead of Dataset at Scale (a shape of another size).
	Shape *dataset.Shape
	// TestFile is a LIBSVM file of held-out samples for a Dataset file ("": evaluate on the
	// training set).
	TestFile string
	Planning Planning
}

// Data is a loaded training set, its transactions and their plan.
type Data struct {
	// Shape is the generator's shape, nil for a file.
	Shape *dataset.Shape
	Train *dataset.Dataset
	// Test holds the samples accuracy is measured on: held-out ones, or Train itself.
	Test     *dataset.Dataset
	HeldOut  bool // Test is not the training set
	Txns     *cop.Txns
	Plan     *cop.Plan // nil with FirstEpoch: COP plans during its first epoch
	Planning Planning
	// LoadDuration is the time to read or generate the data (with Fused, planning included);
	// PlanDuration the separate planning (Offline; Sources: every source's in turn);
	// AdmitDuration the central site's transposition (Sources).
	LoadDuration, PlanDuration, AdmitDuration time.Duration
}

// Load loads (or generates) the data and plans it.
func Load(in Input) (*Data, error) {
	d := &Data{Planning: in.Planning}
	start := time.Now()
	shape, generated, err := dataset.Lookup(in.Dataset, in.Scale)
	if in.Shape != nil {
		shape, generated, err = *in.Shape, true, nil
	}
	var planner *FusedPlanner
	var on dataset.OnSample
	if in.Planning.Mode == Fused {
		planner = NewFusedPlanner(shape.Features) // 0 for a file: the planner grows as it goes
		on = planner.OnSample
	}
	switch {
	case err != nil:
		return nil, err
	case generated && in.TestFile != "":
		return nil, fmt.Errorf("a test file goes with a dataset file, not with the generator %s", in.Dataset)
	case generated:
		d.Shape = &shape
		d.Train, d.Test, err = shape.Generate(in.Seed, on)
	default:
		d.Train, err = dataset.ReadLIBSVMFile(in.Dataset, on)
		if err == nil && in.TestFile != "" {
			d.Test, err = dataset.ReadLIBSVMFile(in.TestFile, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	if planner != nil {
		planner.Flush() // the last sample's planning is part of the load
	}
	d.LoadDuration = time.Since(start)
	d.HeldOut = d.Test != nil && d.Test.Len() > 0
	if !d.HeldOut {
		d.Test = d.Train
	}
	// The model spans the features of both sets, so the test set can be scored against it.
	d.Train.NumFeatures = max(d.Train.NumFeatures, d.Test.NumFeatures)
	if d.Txns, err = cop.SameSets(d.Train.Offsets(), d.Train.Features()); err != nil {
		return nil, err
	}
	switch in.Planning.Mode {
	case Offline:
		start = time.Now()
		d.Plan, err = cop.PlanAll(d.Txns)
		d.PlanDuration = time.Since(start)
	case Fused:
		d.Plan, err = planner.Plan(d.Txns)
	case Sources:
		err = d.planAtSources(in.Planning.Sources)
	}
	return d, err
}

// planAtSources plans the training set as n collection sites would, each its contiguous share
// as one batch, then admits the batches at the central site in source order.
func (d *Data) planAtSources(n int) error {
	samples := d.Train.Len()
	if n > samples {
		return fmt.Errorf("%d sources for %d samples", n, samples)
	}
	offsets, features := d.Train.Offsets(), d.Train.Features()
	batches := make([]*cop.BatchPlan, n)
	start := time.Now()
	for b := range n {
		lo, hi := b*samples/n, (b+1)*samples/n
		local := make([]int, hi-lo+1)
		for i := range local {
			local[i] = offsets[lo+i] - offsets[lo]
		}
		txns, err := cop.SameSets(local, features[offsets[lo]:offsets[hi]])
		if err != nil {
			return err
		}
		if batches[b], err = cop.NewBatch("source-"+strconv.Itoa(b+1), 1, txns); err != nil {
			return err
		}
	}
	d.PlanDuration = time.Since(start)
	start = time.Now()
	var central cop.Central
	for _, b := range batches {
		if _, err := central.Admit(b); err != nil {
			return err
		}
	}
	d.Plan = central.Plan()
	d.AdmitDuration = time.Since(start)
	return nil
}

// FusedPlanner plans samples as they are loaded (spec §1.3 mode 3), each one sample late: it
// prefetches a sample's planning state when the sample has been parsed and plans the sample
// when the next one has, so that the state's cache misses overlap the next line's parsing
// instead of stalling it (docs/BENCHMARKS.md, issue 15: about 12,000 instructions of parsing
// per imdb-like sample lie between two samples' planning). A sample's slices are its dataset's
// storage, unchanged after the call, so keeping them is safe. Load plans with it, and so do
// the benchmark and `meridian repro cop-x4` that measure fused planning's cost, so that they
// measure the code users run.
type FusedPlanner struct {
	*cop.Planner
	last    []uint32 // the features of the sample parsed but not planned yet
	pending bool
}

// NewFusedPlanner returns a fused planner; numParams (0 if unknown, as for a file) sizes its
// per-parameter state ahead.
func NewFusedPlanner(numParams int) *FusedPlanner {
	return &FusedPlanner{Planner: cop.NewPlanner(numParams)}
}

// OnSample is the loader's dataset.OnSample.
func (f *FusedPlanner) OnSample(_ int, s dataset.Sample) {
	f.Prefetch(s.Features)
	f.Flush()
	f.last, f.pending = s.Features, true
}

// Flush plans the sample still pending, if any; the loader calls it once loading has ended,
// before Plan.
func (f *FusedPlanner) Flush() {
	if f.pending {
		f.Add(f.last, f.last)
		f.pending = false
	}
}
