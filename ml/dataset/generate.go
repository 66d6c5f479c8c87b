package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Shape describes a synthetic dataset (spec cop.md §9.2, A7): the real KDD Cup 2010 and IMDB
// files are not available offline, so generators with their size and sparsity stand in for
// them, and the contention datasets are generated exactly as the source describes them.
//
// A sample has about MeanNNZ features: a near-universal feature is present with probability
// UniversalShare each, and the others are drawn without repetition from the remaining features
// with Zipf popularity of exponent Zipf (0: uniform). Feature ranks are scattered over the index
// space by a fixed bijection, so popular features do not share cache lines. Values are 1/√nnz
// (every sample has unit norm). The label is the sign of a hidden sparse linear model (half the
// features have a weight, uniform in [-1, 1]) flipped with probability LabelNoise.
type Shape struct {
	Name                string
	Samples             int     // training samples
	TestSamples         int     // held-out samples from the same distribution
	Features            int     // model parameters
	MeanNNZ             float64 // mean features per sample
	NNZSpread           float64 // a sample's count is uniform in MeanNNZ·[1-NNZSpread, 1+NNZSpread]
	Zipf                float64 // popularity exponent of the features (0: uniform)
	Universal           int     // near-universal features
	UniversalShare      float64 // probability that a sample has a given near-universal feature
	LabelNoise          float64 // probability that a label is flipped
	fullSamples, fullTS int     // Samples and TestSamples at full scale (for String)
	hotSpot             bool    // Features is the hot spot's size, kept when the shape shrinks
}

// Scale picks a dataset's size: the paper's, or one small enough for CI.
type Scale int

const (
	// Full is the paper's size (KDDA: 8.4 million samples over 20.2 million features).
	Full Scale = iota
	// CI keeps at most ciSamples training samples and scales the test set and the number of
	// features by the same factor (a hot spot keeps its size), so contention stays alike.
	CI
)

// ciSamples is the number of training samples at CI scale (the source's CI-scale contention
// datasets have 100,000).
const ciSamples = 100_000

// ParseScale parses "full" or "ci".
func ParseScale(s string) (Scale, error) {
	switch s {
	case "full":
		return Full, nil
	case "ci":
		return CI, nil
	}
	return 0, fmt.Errorf("unknown scale %q (want full or ci)", s)
}

// String returns "full" or "ci".
func (s Scale) String() string {
	if s == CI {
		return "ci"
	}
	return "full"
}

// KDDLike is shaped like KDD Cup 2010 algebra_2008_2009 (KDDA): 8,407,752 training and 510,302
// test samples over 20,216,830 features, 36.3 non-zeros per sample, heavy-tailed popularity
// (Zipf 1.1) plus four near-universal features (each in 90% of the samples), as spec §9.2
// recommends: high contention. The head of the Zipf distribution alone puts its most popular
// feature in nearly every sample, so nearly every two transactions conflict.
func KDDLike(scale Scale) Shape {
	return Shape{Name: "kdd-like", Samples: 8_407_752, TestSamples: 510_302, Features: 20_216_830,
		MeanNNZ: 36.3, NNZSpread: 0.5, Zipf: 1.1, Universal: 4, UniversalShare: 0.9, LabelNoise: 0.05}.scaled(scale)
}

// KDDBLike is shaped like KDD Cup 2010 bridge_to_algebra_2008_2009 (KDDB): 19,264,097 training
// and 748,401 test samples over 29,890,095 features, 29.4 non-zeros per sample, with KDDLike's
// popularity recipe (spec §9.2): sparser transactions over more features than KDDA.
func KDDBLike(scale Scale) Shape {
	return Shape{Name: "kddb-like", Samples: 19_264_097, TestSamples: 748_401, Features: 29_890_095,
		MeanNNZ: 29.4, NNZSpread: 0.5, Zipf: 1.1, Universal: 4, UniversalShare: 0.9, LabelNoise: 0.05}.scaled(scale)
}

// IMDBLike is shaped like the IMDB dataset of the paper: 167,773 samples over 685,569 features,
// 14.6 non-zeros per sample, milder skew (Zipf 0.8), no near-universal feature: less contention.
// The real dataset has no test split (A10); this one holds out 10% more samples.
func IMDBLike(scale Scale) Shape {
	return Shape{Name: "imdb-like", Samples: 167_773, TestSamples: 16_777, Features: 685_569,
		MeanNNZ: 14.6, NNZSpread: 0.5, Zipf: 0.8, LabelNoise: 0.05}.scaled(scale)
}

// Hotspot is the paper's contention dataset (§6.5.2): 1,000,000 samples of exactly 100
// features each, drawn uniformly without repetition from a hot spot of hot features, plus 10%
// held-out samples.
func Hotspot(hot int, scale Scale) Shape {
	name := "hotspot:" + strconv.Itoa(hot)
	if hot%1000 == 0 {
		name = "hotspot:" + strconv.Itoa(hot/1000) + "K"
	}
	return Shape{Name: name, Samples: 1_000_000, TestSamples: 100_000, Features: hot, MeanNNZ: 100, LabelNoise: 0.05,
		hotSpot: true}.scaled(scale)
}

// scaled returns s at scale.
func (s Shape) scaled(scale Scale) Shape {
	s.fullSamples, s.fullTS = s.Samples, s.TestSamples
	if scale == CI {
		return s.Shrunk(ciSamples)
	}
	return s
}

// Shrunk returns s with at most samples training samples, its test set and its features (but
// not a hot spot's, whose size is the point) scaled by the same factor, so that contention
// stays alike: CI scale is Shrunk(100,000), and smaller ones serve quick tests.
func (s Shape) Shrunk(samples int) Shape {
	if s.fullSamples == 0 {
		s.fullSamples, s.fullTS = s.Samples, s.TestSamples
	}
	if s.Samples > samples {
		f := float64(samples) / float64(s.Samples)
		s.Samples = samples
		s.TestSamples = int(math.Round(float64(s.TestSamples) * f))
		if !s.hotSpot {
			s.Features = int(math.Round(float64(s.Features) * f))
		}
	}
	return s
}

// Lookup returns the generator named name at scale: "kdd-like", "kddb-like", "imdb-like" or "hotspot:H"
// with H a number of features, optionally with a K suffix (hotspot:10K). ok is false if name
// names no generator (it may be a file); err reports a malformed hot-spot size.
func Lookup(name string, scale Scale) (s Shape, ok bool, err error) {
	switch name {
	case "kdd-like":
		return KDDLike(scale), true, nil
	case "kddb-like":
		return KDDBLike(scale), true, nil
	case "imdb-like":
		return IMDBLike(scale), true, nil
	}
	h, found := strings.CutPrefix(name, "hotspot:")
	if !found {
		return Shape{}, false, nil
	}
	mult := 1
	if rest, k := strings.CutSuffix(strings.ToUpper(h), "K"); k {
		h, mult = rest, 1000
	}
	n, err := strconv.Atoi(h)
	if err != nil || n*mult < 100 {
		return Shape{}, true, fmt.Errorf("bad hot-spot size in %q (want at least 100 features, e.g. hotspot:1K)", name)
	}
	return Hotspot(n*mult, scale), true, nil
}

// Validate reports a shape that cannot be generated.
func (s Shape) Validate() error {
	switch {
	case s.Samples < 1:
		return fmt.Errorf("dataset %s: no samples", s.Name)
	case s.TestSamples < 0:
		return fmt.Errorf("dataset %s: negative test size", s.Name)
	case s.MeanNNZ < 1 || s.NNZSpread < 0 || s.NNZSpread > 1:
		return fmt.Errorf("dataset %s: bad sample size %g±%g%%", s.Name, s.MeanNNZ, 100*s.NNZSpread)
	case float64(s.Features) < (1+s.NNZSpread)*s.MeanNNZ+float64(s.Universal):
		return fmt.Errorf("dataset %s: %d features cannot make samples of up to %.0f distinct features", s.Name, s.Features, (1+s.NNZSpread)*s.MeanNNZ)
	case s.Features > math.MaxUint32:
		return fmt.Errorf("dataset %s: more than 2^32 features", s.Name)
	}
	return nil
}

// String describes the shape's size, e.g. "kdd-like: 100000 samples (of 8407752), ...".
func (s Shape) String() string {
	of := ""
	if s.Samples != s.fullSamples && s.fullSamples > 0 {
		of = fmt.Sprintf(" (of %d)", s.fullSamples)
	}
	return fmt.Sprintf("%s: %d training samples%s, %d test samples, %d features, %.1f non-zeros per sample",
		s.Name, s.Samples, of, s.TestSamples, s.Features, s.MeanNNZ)
}

// Generate draws the training and test sets from the PCG stream of seed. on (if not nil) sees
// every training sample as it is generated. The same shape and seed give the same datasets.
func (s Shape) Generate(seed uint64, on OnSample) (train, test *Dataset, err error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	g := newGenerator(s, seed)
	train, test = New(s.Name), New(s.Name+" (test)")
	for range s.Samples {
		g.sample(train)
		train.added(on)
	}
	for range s.TestSamples {
		g.sample(test)
	}
	// Both sets span every feature, whether a sample drew it or not.
	train.NumFeatures, test.NumFeatures = s.Features, s.Features
	return train, test, nil
}

// generator draws samples of one shape.
type generator struct {
	s         Shape
	rng       *rand.Rand
	seed      uint64
	mult, add uint64 // rank -> feature bijection: (mult·rank + add) mod Features
	zipfFrom  int    // first rank drawn by popularity (after the near-universal ones)
	zipfPow   float64
	zipfTop   float64 // (ranks+1)^(1-s)
	features  []uint32
	values    []float32
	ranks     []int // the ranks drawn for the current sample
}

func newGenerator(s Shape, seed uint64) *generator {
	g := &generator{s: s, rng: rand.New(rand.NewPCG(seed, 0x6d6c2d64617461)), seed: seed, zipfFrom: s.Universal}
	d := uint64(s.Features)
	g.mult = uint64(0x9e3779b97f4a7c15) % d
	for gcd(g.mult, d) != 1 {
		g.mult++
	}
	g.add = splitmix(seed) % d
	if s.Zipf > 0 {
		g.zipfPow = 1 - s.Zipf
		g.zipfTop = math.Pow(float64(s.Features-s.Universal)+1, g.zipfPow)
	}
	return g
}

// sample appends one sample to d.
func (g *generator) sample(d *Dataset) {
	s := g.s
	g.features, g.ranks = g.features[:0], g.ranks[:0]
	for r := range s.Universal {
		if g.rng.Float64() < s.UniversalShare {
			g.features = append(g.features, g.feature(r))
		}
	}
	// floor(x + u) with u uniform in [0,1) has mean x: the mean count is exactly MeanNNZ.
	x := s.MeanNNZ * (1 - s.NNZSpread + 2*s.NNZSpread*g.rng.Float64())
	n := max(int(x+g.rng.Float64()), 1)
	for len(g.features) < n {
		// A sample has at most a few hundred features: a scan beats a set.
		if r := g.rank(); !slices.Contains(g.ranks, r) {
			g.ranks = append(g.ranks, r)
			g.features = append(g.features, g.feature(r))
		}
	}
	slices.Sort(g.features)
	v := float32(1 / math.Sqrt(float64(len(g.features))))
	g.values = g.values[:0]
	margin := 0.0
	for _, f := range g.features {
		g.values = append(g.values, v)
		margin += g.weight(f)
	}
	label := 1.0
	if margin < 0 {
		label = -1
	}
	if g.rng.Float64() < s.LabelNoise {
		label = -label
	}
	d.appendSorted(label, g.features, g.values)
}

// rank draws a feature rank at or after zipfFrom: by the continuous inverse of the Zipf
// distribution's CDF (one power per draw, exact enough for a popularity shape), or uniformly.
func (g *generator) rank() int {
	n := g.s.Features - g.zipfFrom
	if g.s.Zipf == 0 {
		return g.zipfFrom + g.rng.IntN(n)
	}
	x := math.Pow((g.zipfTop-1)*g.rng.Float64()+1, 1/g.zipfPow) // in [1, n+1)
	return g.zipfFrom + min(int(x)-1, n-1)
}

// feature maps a rank to its feature index.
func (g *generator) feature(rank int) uint32 {
	return uint32((g.mult*uint64(rank) + g.add) % uint64(g.s.Features))
}

// weight is feature f's weight in the hidden model that labels the samples.
func (g *generator) weight(f uint32) float64 {
	h := splitmix(g.seed ^ uint64(f)<<1 ^ 0x5bd1e995)
	if h&1 == 0 {
		return 0
	}
	return float64(h>>11)/(1<<53)*2 - 1
}

// splitmix is the SplitMix64 finalizer, a cheap well-mixed hash.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
