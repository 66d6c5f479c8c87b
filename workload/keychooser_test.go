package workload

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// refZeta is an independent Σ_{j=1..n} j^-theta for the tests.
func refZeta(n uint64, theta float64) float64 {
	s := 0.0
	for j := uint64(1); j <= n; j++ {
		s += math.Pow(float64(j), -theta)
	}
	return s
}

// grayProb is the exact probability with which the Gray et al. generator over n ≥ 3 items yields
// rank i, worked out from its definition: u uniform in [0, 1); rank 0 when u·zetan < 1, rank 1
// when u·zetan < zeta(2, theta), otherwise rank floor(n·(1 - eta·(1-u))^alpha).
func grayProb(i, n uint64, theta, zetan float64) float64 {
	zeta2 := 1 + math.Pow(0.5, theta)
	switch i {
	case 0:
		return 1 / zetan
	case 1:
		return (zeta2 - 1) / zetan
	}
	fn := float64(n)
	eta := (1 - math.Pow(2/fn, 1-theta)) / (1 - zeta2/zetan)
	// uAt returns the u at which n·(1 - eta·(1-u))^alpha equals x.
	uAt := func(x float64) float64 { return 1 - (1-math.Pow(x/fn, 1-theta))/eta }
	return uAt(float64(i+1)) - max(uAt(float64(i)), zeta2/zetan)
}

// withinSigmas reports whether count is within k binomial standard deviations of samples·p.
func withinSigmas(count, samples int, p, k float64) bool {
	mean := float64(samples) * p
	return math.Abs(float64(count)-mean) <= k*math.Sqrt(mean*(1-p))
}

// TestZipfianFrequencies checks the empirical frequencies of ranks 0, 1, 2 and 9 over n = 1000.
//
// Tolerance: with 2e6 samples the binomial standard error of a count is sqrt(N·p·(1-p)); for
// theta = 0.99 that is about 0.2% of the count at rank 0 and 0.6% at rank 9, for theta = 0.5
// about 0.6% and 1.0%. Each count must lie within 6 standard errors of the generator's exact
// probability (a false alarm has probability ~2e-9 per check), which is 1-6% relative: tight
// enough that a rank shifted by one (10-50% off at these ranks) or a wrong eta fails.
//
// Against the pure Zipf law 1/((i+1)^theta·zeta(n)) ranks 0 and 1 are exact, so the same 6σ bound
// applies, and rank 9 must be within 6% (the generator's own bias there is 1.5% for theta 0.99 and
// 2.1% for 0.5, leaving at least 3.9σ of noise). Rank 2 is not compared with the pure law: Gray's
// approximation draws it 17% (theta 0.99) and 9.5% (theta 0.5) too often, as YCSB does.
func TestZipfianFrequencies(t *testing.T) {
	const n, samples = 1000, 2_000_000
	for _, theta := range []float64{0.99, 0.5} {
		t.Run(fmt.Sprint("theta=", theta), func(t *testing.T) {
			z, err := NewZipfian(n, theta)
			if err != nil {
				t.Fatal(err)
			}
			r := newRand(1)
			counts := make([]int, n)
			for range samples {
				k := z.Next(r)
				if k >= n {
					t.Fatalf("Next = %d, want < %d", k, n)
				}
				counts[k]++
			}
			zetan := refZeta(n, theta)
			for _, i := range []uint64{0, 1, 2, 9} {
				gray := grayProb(i, n, theta, zetan)
				law := math.Pow(float64(i+1), -theta) / zetan
				got := float64(counts[i]) / samples
				t.Logf("rank %d: got %.5f, generator %.5f (%+.2f%%), Zipf law %.5f (%+.2f%%)",
					i, got, gray, 100*(got/gray-1), law, 100*(got/law-1))
				if !withinSigmas(counts[i], samples, gray, 6) {
					t.Errorf("rank %d: frequency %.5f, generator probability %.5f: beyond 6σ", i, got, gray)
				}
				switch i {
				case 0, 1:
					if !withinSigmas(counts[i], samples, law, 6) {
						t.Errorf("rank %d: frequency %.5f, Zipf law %.5f: beyond 6σ", i, got, law)
					}
				case 9:
					if math.Abs(got/law-1) > 0.06 {
						t.Errorf("rank %d: frequency %.5f, Zipf law %.5f: more than 6%% apart", i, got, law)
					}
				}
			}
		})
	}
}

func TestChoosersStayInRange(t *testing.T) {
	r := newRand(2)
	for _, n := range []uint64{1, 2, 3, 10, 1000} {
		u, err := NewUniform(n)
		if err != nil {
			t.Fatal(err)
		}
		choosers := map[string]KeyChooser{"uniform": u}
		for _, theta := range []float64{0.01, 0.5, 0.99, 0.999999} {
			z, err := NewZipfian(n, theta)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewScrambledZipfian(n, theta)
			if err != nil {
				t.Fatal(err)
			}
			choosers[fmt.Sprint("zipfian theta=", theta)] = z
			choosers[fmt.Sprint("scrambled theta=", theta)] = s
		}
		for name, c := range choosers {
			seen := make(map[uint64]bool)
			for range 100_000 {
				k := c.Next(r)
				if k >= n {
					t.Fatalf("n=%d %s: Next = %d, out of range", n, name, k)
				}
				seen[k] = true
			}
			// Unscrambled choosers over n ≤ 3 must reach every index; in particular n = 2, where
			// eta is undefined, must still yield rank 1. (Scrambling need not be onto.)
			if n <= 3 && !strings.HasPrefix(name, "scrambled") && len(seen) != int(n) {
				t.Errorf("n=%d %s: drew %d distinct indices, want %d", n, name, len(seen), n)
			}
		}
	}
}

func TestNewChoosersReject(t *testing.T) {
	for _, tc := range []struct {
		n     uint64
		theta float64
	}{{0, 0.99}, {10, 0}, {10, 1}, {10, 1.5}, {10, -0.1}, {10, math.NaN()}} {
		if _, err := NewZipfian(tc.n, tc.theta); err == nil {
			t.Errorf("NewZipfian(%d, %v) succeeded, want error", tc.n, tc.theta)
		}
		if _, err := NewScrambledZipfian(tc.n, tc.theta); err == nil {
			t.Errorf("NewScrambledZipfian(%d, %v) succeeded, want error", tc.n, tc.theta)
		}
	}
	if _, err := NewUniform(0); err == nil {
		t.Error("NewUniform(0) succeeded, want error")
	}
}

// TestScrambledZipfianProfile checks YCSB's scrambled Zipfian: the hottest key is FNV-1a(rank 0)
// mod n, not index 0, and receives about 1/zeta(10^10, 0.99) ≈ 3.78% of the draws plus its share
// of the near-uniform tail. With 2e6 draws the standard error of a 3.8% share is 0.014 points, so
// ±0.3 points is a wide band that a Zipfian over only n items (13% at n = 1000) would still fail.
func TestScrambledZipfianProfile(t *testing.T) {
	const n, samples = 1000, 2_000_000
	s, err := NewScrambledZipfian(n, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	r := newRand(3)
	counts := make([]int, n)
	for range samples {
		counts[s.Next(r)]++
	}
	hottest := uint64(0)
	for i, c := range counts {
		if c > counts[hottest] {
			hottest = uint64(i)
		}
	}
	if hottest == 0 || hottest != fnv1a64(0)%n {
		t.Errorf("hottest scrambled index = %d, want FNV-1a(0) mod n = %d (≠ 0)", hottest, fnv1a64(0)%n)
	}
	zetaN := zeta(ScrambledItems, 0.99)
	// The hottest key holds rank 0 plus about 1/n of the ranks beyond the few hundred hottest.
	want := 1/zetaN + 1.0/n*(1-0.5)
	if share := float64(counts[hottest]) / samples; math.Abs(share-want) > 0.003 {
		t.Errorf("hottest key share %.4f, want ≈ %.4f", share, want)
	}
}

// TestZetaTenBillion checks the Euler–Maclaurin tail against YCSB's published constant for its
// scrambled generator, zeta(10^10, 0.99) = 26.46902820178302, and against an exact sum where one
// is affordable.
func TestZetaTenBillion(t *testing.T) {
	if got := zeta(ScrambledItems, 0.99); math.Abs(got-26.46902820178302) > 1e-6 {
		t.Errorf("zeta(1e10, 0.99) = %.12f, want 26.469028201783", got)
	}
	exact := 0.0
	const n = 3 * zetaExactTerms
	for i := n; i >= 1; i-- {
		exact += 1 / math.Pow(float64(i), 0.5)
	}
	if got := zeta(n, 0.5); math.Abs(got-exact) > 1e-9*exact {
		t.Errorf("zeta(%d, 0.5) = %.12f, exact %.12f", n, got, exact)
	}
}

// TestUniformChiSquare draws 1e6 samples over 1000 buckets. The statistic has 999 degrees of
// freedom, mean 999 and standard deviation sqrt(2·999) ≈ 44.7; it must lie within 6 of those.
// The lower bound catches a generator that is too regular to be random.
func TestUniformChiSquare(t *testing.T) {
	const n, samples = 1000, 1_000_000
	u, err := NewUniform(n)
	if err != nil {
		t.Fatal(err)
	}
	r := newRand(4)
	counts := make([]int, n)
	for range samples {
		counts[u.Next(r)]++
	}
	expected := float64(samples) / n
	chi2 := 0.0
	for _, c := range counts {
		d := float64(c) - expected
		chi2 += d * d / expected
	}
	df := float64(n - 1)
	if margin := 6 * math.Sqrt(2*df); math.Abs(chi2-df) > margin {
		t.Errorf("chi-square = %.1f, want %.0f ± %.0f", chi2, df, margin)
	}
}

// TestFNV1a64 cross-checks the inlined hash against hash/fnv over the value's little-endian bytes.
func TestFNV1a64(t *testing.T) {
	for _, v := range []uint64{0, 1, 255, 256, 49_999, 1 << 63, math.MaxUint64} {
		h := fnv.New64a()
		h.Write(binary.LittleEndian.AppendUint64(nil, v))
		if got, want := fnv1a64(v), h.Sum64(); got != want {
			t.Errorf("fnv1a64(%d) = %#x, want %#x", v, got, want)
		}
	}
}
