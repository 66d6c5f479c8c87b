package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// KeyChooser draws key indices. Implementations are immutable after construction, so one chooser
// may serve many goroutines as long as each passes its own *rand.Rand.
type KeyChooser interface {
	// Next returns a key index in [0, n), where n is the chooser's key count.
	Next(r *rand.Rand) uint64
}

// Uniform draws every index in [0, n) with equal probability.
type Uniform struct {
	n uint64
}

// NewUniform returns a uniform chooser over [0, n). n must be at least 1.
func NewUniform(n uint64) (*Uniform, error) {
	if n == 0 {
		return nil, errors.New("workload: uniform chooser needs at least one key")
	}
	return &Uniform{n: n}, nil
}

// Next returns an index drawn uniformly from [0, n).
func (u *Uniform) Next(r *rand.Rand) uint64 { return r.Uint64N(u.n) }

// Zipfian draws ranks in [0, n) with P(rank i) ≈ (1/(i+1)^theta) / zeta(n, theta), where
// zeta(n, theta) = Σ_{j=1..n} 1/j^theta. Rank 0 is the most popular.
//
// It is the rejection-free generator of J. Gray, P. Sundaresan, S. Englert, K. Baclawski and
// P. J. Weinberger, "Quickly generating billion-record synthetic databases", SIGMOD 1994, in the
// 0-based form YCSB's ZipfianGenerator uses: one uniform variate per draw. Ranks 0 and 1 get their
// exact probabilities; larger ranks come from a closed-form approximation of the inverse CDF. The
// approximation over-weights the next few ranks: for n = 1000 and theta = 0.99, rank 2 is drawn
// about 17% more often than the pure Zipf law says, rank 9 about 1.5% more, and the tail slightly
// less. This is the distribution YCSB actually generates, so it is kept unchanged.
//
// Construction precomputes zeta(n, theta) (at most about a million terms, see zeta); Next is O(1).
type Zipfian struct {
	n      uint64
	zetan  float64 // zeta(n, theta)
	alpha  float64 // 1 / (1 - theta)
	eta    float64 // (1 - (2/n)^(1-theta)) / (1 - zeta(2, theta)/zetan); meaningful for n ≥ 3
	second float64 // zeta(2, theta) = 1 + 0.5^theta: u*zetan below this (and ≥ 1) means rank 1
}

// NewZipfian returns a Zipfian chooser over [0, n) with skew theta. It needs n ≥ 1 and
// 0 < theta < 1; YCSB's default skew is 0.99.
func NewZipfian(n uint64, theta float64) (*Zipfian, error) {
	if n == 0 {
		return nil, errors.New("workload: zipfian chooser needs at least one key")
	}
	if !(theta > 0 && theta < 1) {
		return nil, fmt.Errorf("workload: zipfian theta %v outside (0, 1)", theta)
	}
	z := &Zipfian{
		n:      n,
		zetan:  zeta(n, theta),
		alpha:  1 / (1 - theta),
		second: zeta(2, theta),
	}
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - z.second/z.zetan)
	return z, nil
}

// zetaExactTerms bounds the terms zeta sums one by one; beyond it the tail is integrated.
const zetaExactTerms = 1 << 16

// zeta returns Σ_{i=1..n} 1/i^theta, adding the small terms first to limit rounding error. For
// n above zetaExactTerms it sums the first zetaExactTerms terms exactly and the rest with the
// Euler–Maclaurin formula (integral plus end corrections), accurate to far below 1e-9 there.
func zeta(n uint64, theta float64) float64 {
	m := min(n, zetaExactTerms)
	sum := 0.0
	for i := m; i >= 1; i-- {
		sum += 1 / math.Pow(float64(i), theta)
	}
	if n == m {
		return sum
	}
	f := func(x float64) float64 { return math.Pow(x, -theta) }
	a, b := float64(m), float64(n)
	integral := (math.Pow(b, 1-theta) - math.Pow(a, 1-theta)) / (1 - theta)
	// Σ_{i=a+1..b} f(i) ≈ ∫_a^b f + (f(b) − f(a))/2 + (f'(b) − f'(a))/12, with f'(x) = −θ x^(−θ−1).
	deriv := func(x float64) float64 { return -theta * math.Pow(x, -theta-1) }
	return sum + integral + (f(b)-f(a))/2 + (deriv(b)-deriv(a))/12
}

// Next returns a rank in [0, n); rank i is drawn with probability ≈ 1/((i+1)^theta · zeta(n, theta)).
func (z *Zipfian) Next(r *rand.Rand) uint64 {
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 || z.n == 1 {
		return 0
	}
	// For n == 2, zetan == zeta(2, theta) and eta is 0/0; every remaining draw is rank 1.
	if uz < z.second || z.n == 2 {
		return 1
	}
	rank := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	// The formula stays below n in exact arithmetic; guard against rounding at u → 1.
	return min(rank, z.n-1)
}

// ScrambledZipfian is YCSB's scrambled Zipfian: it draws a rank from a Zipfian over
// ScrambledItems (ten billion) items, hashes the rank with 64-bit FNV-1a over its 8 bytes (least
// significant first) and reduces the hash mod n. Popular keys are thus scattered over the key
// space, and the skew does not depend on n: with theta 0.99 the hottest rank gets
// 1/zeta(10^10, 0.99) ≈ 3.8% of the draws (YCSB's precomputed zeta for this case is 26.469),
// and the long tail of ranks spreads almost uniformly over all n keys. This is the "θ = 0.99,
// scrambled" of the Helios evaluation (spec GAP-E4).
type ScrambledZipfian struct {
	z *Zipfian
	n uint64
}

// ScrambledItems is the size of the rank space a ScrambledZipfian draws from, as in YCSB.
const ScrambledItems = 10_000_000_000

// NewScrambledZipfian returns a scrambled Zipfian chooser over [0, n) with skew theta, under the
// same constraints as NewZipfian.
func NewScrambledZipfian(n uint64, theta float64) (*ScrambledZipfian, error) {
	if n == 0 {
		return nil, errors.New("workload: zipfian chooser needs at least one key")
	}
	z, err := NewZipfian(ScrambledItems, theta)
	if err != nil {
		return nil, err
	}
	return &ScrambledZipfian{z: z, n: n}, nil
}

// Next returns FNV-1a-64(rank) mod n for a Zipfian-distributed rank.
func (s *ScrambledZipfian) Next(r *rand.Rand) uint64 {
	return fnv1a64(s.z.Next(r)) % s.n
}

// FNV-1a 64-bit parameters (Fowler, Noll, Vo).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fnv1a64 hashes the 8 bytes of v, least significant first, with 64-bit FNV-1a.
func fnv1a64(v uint64) uint64 {
	h := uint64(fnvOffset64)
	for range 8 {
		h ^= v & 0xff
		h *= fnvPrime64
		v >>= 8
	}
	return h
}
