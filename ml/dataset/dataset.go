// Package dataset holds the training data of Meridian's machine-learning workloads: sparse
// labelled samples in flat arrays, a reader and writer of the LIBSVM/svmlight text format, and
// seeded generators shaped like the datasets of the COP paper (spec cop.md §9.2).
//
// A sample's features are model-parameter indices, ascending and distinct, with one value each;
// they are the read and write set of the sample's SGD iteration. The arrays are flat (one offset
// per sample) so that a dataset of hundreds of millions of non-zeros costs 8 bytes per non-zero
// and no pointer per sample, and so that package cop can use the feature array as the
// transactions' access sets without copying it.
package dataset

import "fmt"

// Dataset is a list of labelled sparse samples.
type Dataset struct {
	// Name says where the samples came from: a generator's name or a file's path.
	Name string
	// NumFeatures is one more than the largest feature index: the number of model parameters.
	NumFeatures int

	labels   []int8    // +1 or -1
	offsets  []int     // sample i's non-zeros are at [offsets[i], offsets[i+1])
	features []uint32  // feature indices, ascending within a sample
	values   []float32 // the features' values
}

// Sample is one labelled example: Features ascending and distinct, Values[k] the value of
// Features[k]. Its slices point into the dataset and must not be modified.
type Sample struct {
	Label    float64 // +1 or -1
	Features []uint32
	Values   []float32
}

// New returns an empty dataset named name.
func New(name string) *Dataset {
	return &Dataset{Name: name, offsets: []int{0}}
}

// Len returns the number of samples.
func (d *Dataset) Len() int { return len(d.labels) }

// NNZ returns the number of non-zeros of all samples together.
func (d *Dataset) NNZ() int { return len(d.features) }

// Sample returns sample i.
func (d *Dataset) Sample(i int) Sample {
	lo, hi := d.offsets[i], d.offsets[i+1]
	return Sample{Label: float64(d.labels[i]), Features: d.features[lo:hi:hi], Values: d.values[lo:hi:hi]}
}

// Offsets returns the samples' offsets into Features: sample i's features are
// Features()[Offsets()[i]:Offsets()[i+1]]. The slice is the dataset's own and must not be
// modified.
func (d *Dataset) Offsets() []int { return d.offsets }

// Features returns every sample's feature indices, concatenated in sample order. The slice is
// the dataset's own and must not be modified.
func (d *Dataset) Features() []uint32 { return d.features }

// Append adds a sample with label (positive: +1, otherwise -1) and the given features, which
// must be ascending and distinct, and their values. It copies the slices.
func (d *Dataset) Append(label float64, features []uint32, values []float32) error {
	if len(features) != len(values) {
		return fmt.Errorf("dataset: %d features but %d values", len(features), len(values))
	}
	for k := 1; k < len(features); k++ {
		if features[k] <= features[k-1] {
			return fmt.Errorf("dataset: feature indices must be ascending and distinct (%d after %d)", features[k], features[k-1])
		}
	}
	d.appendSorted(label, features, values)
	return nil
}

// appendSorted is Append for features already known to be ascending and distinct.
func (d *Dataset) appendSorted(label float64, features []uint32, values []float32) {
	y := int8(-1)
	if label > 0 {
		y = 1
	}
	d.labels = append(d.labels, y)
	d.features = append(d.features, features...)
	d.values = append(d.values, values...)
	d.offsets = append(d.offsets, len(d.features))
	if n := len(features); n > 0 && int(features[n-1]) >= d.NumFeatures {
		d.NumFeatures = int(features[n-1]) + 1
	}
}

// OnSample is called with every training sample as it is loaded or generated, in order: i is
// its index. Planning fused with loading (spec cop.md §1.3, mode 3) is an OnSample that plans
// the sample's transaction. s's slices are the dataset's storage and never change afterwards,
// so the callback may keep them.
type OnSample func(i int, s Sample)

// added calls on (if not nil) with the last sample appended to d.
func (d *Dataset) added(on OnSample) {
	if on != nil {
		i := d.Len() - 1
		on(i, d.Sample(i))
	}
}

// Slice returns a new dataset (named name) with copies of samples lo…hi-1 of d: a collection
// site's batch, say. Its NumFeatures is d's.
func (d *Dataset) Slice(name string, lo, hi int) *Dataset {
	out := New(name)
	for i := lo; i < hi; i++ {
		s := d.Sample(i)
		out.appendSorted(s.Label, s.Features, s.Values)
	}
	out.NumFeatures = d.NumFeatures
	return out
}

// AppendAll appends copies of every sample of o to d.
func (d *Dataset) AppendAll(o *Dataset) {
	for i := range o.Len() {
		s := o.Sample(i)
		d.appendSorted(s.Label, s.Features, s.Values)
	}
	d.NumFeatures = max(d.NumFeatures, o.NumFeatures)
}
