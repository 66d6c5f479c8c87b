package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/protocols/tcc"
)

// TCC is the FastCCS thesis's dynamic workload generator (its Table 4.1; spec
// fastccs-tcc.md §4.3): closed-loop clients that run a write-only transaction with probability
// WriteFraction and a read-only one otherwise, over keys drawn from a Gaussian over the key
// space. The thesis leaves the key space and the Gaussian unstated; we choose (spec WL1) a key
// space of 100,000 keys per partition and keys ~ round(Normal(K/2, (SigmaFraction·K)²)) clipped to
// [0, K), with SigmaFraction 1/8.
type TCC struct {
	KeysPerROT    int     // keys per read-only transaction (thesis default 5; range 2–64)
	KeysPerWOT    int     // keys per write-only transaction (5; 2–64)
	ValueBytes    int     // value size (128; 2–1024)
	WriteFraction float64 // share of transactions that are WOTs (0.05; 0.01–0.5)
	// KeysPerPartition sizes the key space: KeysPerPartition × partitions keys.
	KeysPerPartition int
	// Distribution is DistGaussian (the thesis's default) or DistUniform (its E6/E8: "5 objects
	// selected at random", spec WL6).
	Distribution string
	// SigmaFraction is the Gaussian's standard deviation as a fraction of the key space.
	SigmaFraction float64
	// PartitionsPerTxn, if > 0, makes every transaction touch exactly that many distinct
	// partitions, chosen uniformly, with its keys spread round-robin over them (E7, spec WL5;
	// keys within a partition are drawn uniformly).
	PartitionsPerTxn int
	// MoveFraction is the chance that a client moves to another datacenter (uniformly chosen)
	// before a transaction; 0 (the default) keeps clients in their datacenters. It needs a
	// protocol whose client library can move (tcc.Mover: fastccs-geo) and two datacenters.
	MoveFraction float64
}

// DistGaussian draws keys from a normal distribution centred on the key space (TCC).
const DistGaussian = "gaussian"

// DefaultTCC is the thesis's default workload.
func DefaultTCC() TCC {
	return TCC{KeysPerROT: 5, KeysPerWOT: 5, ValueBytes: 128, WriteFraction: 0.05,
		KeysPerPartition: 100_000, Distribution: DistGaussian, SigmaFraction: 0.125}
}

// Validate reports the first invalid field.
func (c TCC) Validate() error {
	switch {
	case c.KeysPerROT < 1 || c.KeysPerWOT < 1:
		return fmt.Errorf("workload: keys per read and per write transaction must be at least 1, got %d and %d", c.KeysPerROT, c.KeysPerWOT)
	case c.ValueBytes < 1:
		return fmt.Errorf("workload: value size must be at least 1 byte, got %d", c.ValueBytes)
	case c.WriteFraction < 0 || c.WriteFraction > 1:
		return fmt.Errorf("workload: write fraction must be in [0, 1], got %g", c.WriteFraction)
	case c.KeysPerPartition < 1:
		return fmt.Errorf("workload: keys per partition must be at least 1, got %d", c.KeysPerPartition)
	case c.Distribution != DistGaussian && c.Distribution != DistUniform:
		return fmt.Errorf("workload: distribution must be %q or %q, got %q", DistGaussian, DistUniform, c.Distribution)
	case c.Distribution == DistGaussian && (c.SigmaFraction <= 0 || math.IsNaN(c.SigmaFraction)):
		return fmt.Errorf("workload: gaussian sigma fraction must be positive, got %g", c.SigmaFraction)
	case c.MoveFraction < 0 || c.MoveFraction > 1 || math.IsNaN(c.MoveFraction):
		return fmt.Errorf("workload: move fraction must be in [0, 1], got %g", c.MoveFraction)
	case c.PartitionsPerTxn < 0:
		return fmt.Errorf("workload: partitions per transaction must not be negative, got %d", c.PartitionsPerTxn)
	}
	return nil
}

// TCCTxn is one generated transaction: a WOT of Keys (distinct) or a ROT of Keys (distinct).
type TCCTxn struct {
	Write bool
	Keys  []string
}

// TCCGenerator draws TCCTxns for a store of a given number of partitions. It is immutable, so
// clients share one; each draws with its own seeded *rand.Rand.
type TCCGenerator struct {
	cfg        TCC
	partitions int
	keys       uint64
	// byPartition lists, for PartitionsPerTxn, a sample of key indices of every partition.
	byPartition [][]uint64
}

// keysPerPartitionSample is how many keys of each partition PartitionsPerTxn draws from.
const keysPerPartitionSample = 4096

// NewTCCGenerator validates cfg for a store of partitions partitions.
func NewTCCGenerator(cfg TCC, partitions int) (*TCCGenerator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if partitions < 1 {
		return nil, fmt.Errorf("workload: partitions must be at least 1, got %d", partitions)
	}
	if cfg.PartitionsPerTxn > partitions {
		return nil, fmt.Errorf("workload: %d partitions per transaction but only %d partitions", cfg.PartitionsPerTxn, partitions)
	}
	g := &TCCGenerator{cfg: cfg, partitions: partitions, keys: uint64(cfg.KeysPerPartition) * uint64(partitions)}
	if n := max(cfg.KeysPerROT, cfg.KeysPerWOT); uint64(n) > g.keys {
		return nil, fmt.Errorf("workload: %d distinct keys per transaction from a key space of %d", n, g.keys)
	}
	if cfg.PartitionsPerTxn > 0 {
		g.byPartition = make([][]uint64, partitions)
		want := min(keysPerPartitionSample, cfg.KeysPerPartition)
		for i := uint64(0); i < g.keys; i++ {
			p := tcc.PartitionOf(KeyName(i), partitions)
			if len(g.byPartition[p]) < want {
				g.byPartition[p] = append(g.byPartition[p], i)
			}
		}
		for p, ks := range g.byPartition {
			if len(ks) == 0 {
				return nil, fmt.Errorf("workload: partition %d owns no key of the key space", p)
			}
		}
	}
	return g, nil
}

// Keys is the size of the key space.
func (g *TCCGenerator) Keys() uint64 { return g.keys }

// Next draws one transaction.
func (g *TCCGenerator) Next(r *rand.Rand) TCCTxn {
	t := TCCTxn{Write: r.Float64() < g.cfg.WriteFraction}
	n := g.cfg.KeysPerROT
	if t.Write {
		n = g.cfg.KeysPerWOT
	}
	idx := make([]uint64, 0, n)
	if g.cfg.PartitionsPerTxn > 0 {
		parts := r.Perm(g.partitions)[:g.cfg.PartitionsPerTxn]
		for i := 0; len(idx) < max(n, len(parts)); i++ {
			ks := g.byPartition[parts[i%len(parts)]]
			if k := ks[r.IntN(len(ks))]; !slices.Contains(idx, k) {
				idx = append(idx, k)
			}
		}
	} else {
		for len(idx) < n {
			if k := g.key(r); !slices.Contains(idx, k) {
				idx = append(idx, k)
			}
		}
	}
	t.Keys = make([]string, len(idx))
	for i, k := range idx {
		t.Keys[i] = KeyName(k)
	}
	return t
}

// key draws one key index.
func (g *TCCGenerator) key(r *rand.Rand) uint64 {
	if g.cfg.Distribution == DistUniform {
		return r.Uint64N(g.keys)
	}
	k := float64(g.keys)
	x := math.Round(k/2 + r.NormFloat64()*g.cfg.SigmaFraction*k)
	return uint64(min(max(x, 0), k-1))
}
