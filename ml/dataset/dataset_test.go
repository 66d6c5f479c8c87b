package dataset

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const fixture = "testdata/small.libsvm"

// TestReadLIBSVMFixture reads the committed fixture: labels (+1, -1, 1, 0), 1-based indices
// as 0-based parameters, values, comments, a qid token and a blank line.
func TestReadLIBSVMFixture(t *testing.T) {
	var seen []int
	d, err := ReadLIBSVMFile(fixture, func(i int, s Sample) { seen = append(seen, i) })
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 12 || d.NumFeatures != 9 || d.NNZ() != 32 {
		t.Fatalf("%d samples, %d features, %d non-zeros; want 12, 9, 32", d.Len(), d.NumFeatures, d.NNZ())
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(seen, want) {
		t.Errorf("OnSample saw %v, want every sample in order", seen)
	}
	for i, want := range []Sample{
		{Label: 1, Features: []uint32{0, 2, 6}, Values: []float32{1, 0.5, 1}},
		{Label: -1, Features: []uint32{1, 2, 7}, Values: []float32{1, 0.25, 2}},
		{Label: 1, Features: []uint32{0, 3, 8}, Values: []float32{1, 1, 0.125}},
		{Label: -1, Features: []uint32{1, 4}, Values: []float32{1, 1}},
	} {
		if got := d.Sample(i); !reflect.DeepEqual(got, want) {
			t.Errorf("sample %d = %+v, want %+v", i, got, want)
		}
	}
	if d.Sample(6).Label != 1 || d.Sample(7).Label != -1 {
		t.Errorf("labels 1 and 0 read as %v and %v, want +1 and -1", d.Sample(6).Label, d.Sample(7).Label)
	}
}

// TestReadLIBSVMErrors: a malformed line names the input and the line; an input without
// samples is an error.
func TestReadLIBSVMErrors(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{"+1 1:1\n-1 2:x\n", "in.txt:2: bad feature value in \"2:x\""},
		{"+1 1:1\n\n+1 3\n", "in.txt:3: bad feature \"3\" (want index:value)"},
		{"yes 1:1\n", "in.txt:1: bad label \"yes\""},
		{"+1 0:1\n", "in.txt:1: bad feature index in \"0:1\""},
		{"+1 -4:1\n", "in.txt:1: bad feature index"},
		{"+1 5:1 3:1\n", "in.txt:1: feature index 3 after 5 (indices must be ascending)"},
		{"+1 2:1 2:1\n", "in.txt:1: feature index 2 after 2"},
		{"", "in.txt: no samples"},
		{"# only a comment\n\n", "in.txt: no samples"},
	} {
		_, err := ReadLIBSVM(strings.NewReader(tc.input), "in.txt", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.input, err, tc.want)
		}
	}
	if _, err := ReadLIBSVMFile(filepath.Join(t.TempDir(), "missing"), nil); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestLIBSVMRoundTrip: a generated dataset written as LIBSVM reads back identically.
func TestLIBSVMRoundTrip(t *testing.T) {
	shape := Shape{Name: "tiny", Samples: 300, Features: 500, MeanNNZ: 12, NNZSpread: 0.5, Zipf: 1.1, Universal: 2, UniversalShare: 0.5, LabelNoise: 0.1}
	d, _, err := shape.Generate(7, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteLIBSVM(&buf, d); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLIBSVM(&buf, "round-trip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != d.Len() {
		t.Fatalf("%d samples back, want %d", back.Len(), d.Len())
	}
	for i := range d.Len() {
		if got, want := back.Sample(i), d.Sample(i); !reflect.DeepEqual(got, want) {
			t.Fatalf("sample %d = %+v, want %+v", i, got, want)
		}
	}
}

// TestAppendValidates: Append refuses unsorted features and mismatched lengths.
func TestAppendValidates(t *testing.T) {
	d := New("x")
	if err := d.Append(1, []uint32{3, 1}, []float32{1, 1}); err == nil {
		t.Error("unsorted features accepted")
	}
	if err := d.Append(1, []uint32{1}, nil); err == nil {
		t.Error("a feature without a value accepted")
	}
	if err := d.Append(-1, []uint32{4, 9}, []float32{1, 2}); err != nil || d.NumFeatures != 10 || d.Sample(0).Label != -1 {
		t.Errorf("Append: %v, %d features, label %v", err, d.NumFeatures, d.Sample(0).Label)
	}
}

// TestGeneratorsDeterministic: a shape and seed always give the same data, another seed other
// data.
func TestGeneratorsDeterministic(t *testing.T) {
	shape := IMDBLike(CI)
	shape.Samples, shape.TestSamples = 2000, 200
	a, at, _ := shape.Generate(1, nil)
	b, bt, _ := shape.Generate(1, nil)
	c, _, _ := shape.Generate(2, nil)
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(at, bt) {
		t.Error("the same seed gave different datasets")
	}
	if reflect.DeepEqual(a.Features(), c.Features()) {
		t.Error("different seeds gave the same features")
	}
}

// TestGeneratorShapes checks the generated datasets against their shapes (spec §9.2): sizes,
// mean sample size, exact hot-spot samples, unit-norm values, label balance, and that kdd-like
// concentrates its features far more than imdb-like (more contention).
func TestGeneratorShapes(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		tol   float64 // on the mean sample size
	}{
		{KDDLike(CI).Shrunk(20_000), 0.02},
		{IMDBLike(CI).Shrunk(20_000), 0.02},
		{Hotspot(1000, CI).Shrunk(5_000), 0},
	} {
		s := tc.shape
		train, test, err := s.Generate(3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if train.Len() != s.Samples || test.Len() != s.TestSamples || train.NumFeatures != s.Features {
			t.Errorf("%s: %d/%d samples over %d features, want %d/%d over %d", s.Name, train.Len(), test.Len(), train.NumFeatures, s.Samples, s.TestSamples, s.Features)
		}
		mean := float64(train.NNZ()) / float64(train.Len())
		if math.Abs(mean-s.MeanNNZ) > tc.tol*s.MeanNNZ {
			t.Errorf("%s: %.2f features per sample, want %.1f", s.Name, mean, s.MeanNNZ)
		}
		positive := 0
		for i := range train.Len() {
			x := train.Sample(i)
			if tc.tol == 0 && len(x.Features) != int(s.MeanNNZ) {
				t.Fatalf("%s: sample %d has %d features, want exactly %v", s.Name, i, len(x.Features), s.MeanNNZ)
			}
			norm := 0.0
			for _, v := range x.Values {
				norm += float64(v) * float64(v)
			}
			if math.Abs(norm-1) > 1e-5 {
				t.Fatalf("%s: sample %d has norm² %v, want 1", s.Name, i, norm)
			}
			if x.Label > 0 {
				positive++
			}
		}
		if share := float64(positive) / float64(train.Len()); share < 0.2 || share > 0.8 {
			t.Errorf("%s: %.0f%% positive labels", s.Name, 100*share)
		}
	}
	top := func(s Shape) float64 { // share of the samples that have the most popular feature
		train, _, _ := s.Shrunk(20_000).Generate(4, nil)
		counts := make([]int, train.NumFeatures)
		for _, f := range train.Features() {
			counts[f]++
		}
		return float64(slices.Max(counts)) / float64(train.Len())
	}
	if kdd, imdb := top(KDDLike(CI)), top(IMDBLike(CI)); kdd < 0.5 || imdb > kdd/2 {
		t.Errorf("the most popular feature is in %.0f%% of kdd-like samples and %.0f%% of imdb-like ones; want kdd-like far more concentrated", 100*kdd, 100*imdb)
	}
}

// TestLookup parses generator names and scales.
func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		scale   Scale
		samples int
		feats   int
	}{
		{"kdd-like", Full, 8_407_752, 20_216_830},
		{"kdd-like", CI, 100_000, 240_455},
		{"kddb-like", Full, 19_264_097, 29_890_095},
		{"kddb-like", CI, 100_000, 155_160},
		{"imdb-like", Full, 167_773, 685_569},
		{"hotspot:1K", Full, 1_000_000, 1000},
		{"hotspot:100k", CI, 100_000, 100_000},
		{"hotspot:2500", CI, 100_000, 2500},
	} {
		s, ok, err := Lookup(tc.name, tc.scale)
		if !ok || err != nil || s.Samples != tc.samples || s.Features != tc.feats {
			t.Errorf("Lookup(%q, %v) = %d samples, %d features, %v, %v; want %d, %d", tc.name, tc.scale, s.Samples, s.Features, ok, err, tc.samples, tc.feats)
		}
	}
	for _, bad := range []string{"hotspot:", "hotspot:abc", "hotspot:50", "hotspot:-1K"} {
		if _, ok, err := Lookup(bad, CI); !ok || err == nil {
			t.Errorf("Lookup(%q): ok %v, error %v; want a hot-spot size error", bad, ok, err)
		}
	}
	if _, ok, _ := Lookup("data/train.libsvm", CI); ok {
		t.Error("a file name was taken for a generator")
	}
	if _, err := ParseScale("half"); err == nil {
		t.Error(`ParseScale("half") succeeded`)
	}
	if _, _, err := (Shape{Name: "empty", Features: 10, MeanNNZ: 1}).Generate(1, nil); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("an empty shape: %v", err)
	}
}
