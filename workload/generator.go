// T-YCSB, the transactional YCSB workload of the Message Futures and Helios experiments (spec
// §6.3, §6.4, GAP-E4): every transaction performs a fixed number of operations on distinct keys,
// each operation independently a read with a given probability, with keys drawn uniformly or
// from a scrambled Zipfian distribution.

package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"unsafe"
)

// Distribution names accepted in TYCSB.Distribution.
const (
	// DistZipfian draws keys from a ScrambledZipfian with skew TYCSB.Theta (the Ch. 4 setting).
	DistZipfian = "zipfian"
	// DistUniform draws keys uniformly (the Ch. 3 setting).
	DistUniform = "uniform"
)

// TYCSB describes a T-YCSB workload.
type TYCSB struct {
	// Keys is the size of the key space; keys are KeyName(0) … KeyName(Keys-1).
	Keys int
	// Distribution is DistZipfian or DistUniform.
	Distribution string
	// Theta is the Zipfian skew, in (0, 1). Ignored for DistUniform.
	Theta float64
	// OpsPerTxn is the number of operations per transaction, each on a different key.
	OpsPerTxn int
	// ReadRatio is the probability that an operation is a read; otherwise it is a write.
	ReadRatio float64
	// ReadOnlyClientsPerDC read-only clients run in every datacenter besides the read-write
	// ones (Ogre's analytics clients, spec ogre.md §7.4 E3), on protocols whose snapshots are
	// serializable (registry.Entry.SerializableSnapshotsPerDC). Each runs read-only transactions of
	// ReadOnlyKeys distinct keys from the same distribution, ReadOnlyRate of them per second (0:
	// back to back).
	ReadOnlyClientsPerDC int
	ReadOnlyKeys         int
	ReadOnlyRate         float64
}

// DefaultTYCSB returns the Ch. 4 (Helios) T-YCSB setting: 50,000 keys, scrambled Zipfian with
// YCSB's default theta 0.99, 5 operations per transaction, each a read with probability 0.5.
func DefaultTYCSB() TYCSB {
	return TYCSB{
		Keys:         50_000,
		Distribution: DistZipfian,
		Theta:        0.99,
		OpsPerTxn:    5,
		ReadRatio:    0.5,
	}
}

// Validate reports the first invalid field of c, naming it in the error.
func (c TYCSB) Validate() error {
	if c.Keys < 1 {
		return fmt.Errorf("workload: Keys must be at least 1, got %d", c.Keys)
	}
	if c.OpsPerTxn < 1 {
		return fmt.Errorf("workload: OpsPerTxn must be at least 1, got %d", c.OpsPerTxn)
	}
	if c.OpsPerTxn > c.Keys {
		return fmt.Errorf("workload: OpsPerTxn (%d) exceeds Keys (%d); keys within a transaction are distinct",
			c.OpsPerTxn, c.Keys)
	}
	if !(c.ReadRatio >= 0 && c.ReadRatio <= 1) {
		return fmt.Errorf("workload: ReadRatio must be in [0, 1], got %v", c.ReadRatio)
	}
	switch {
	case c.ReadOnlyClientsPerDC < 0:
		return fmt.Errorf("workload: ReadOnlyClientsPerDC must not be negative, got %d", c.ReadOnlyClientsPerDC)
	case c.ReadOnlyClientsPerDC > 0 && (c.ReadOnlyKeys < 1 || c.ReadOnlyKeys > c.Keys):
		return fmt.Errorf("workload: ReadOnlyKeys must be in [1, Keys=%d], got %d", c.Keys, c.ReadOnlyKeys)
	case !(c.ReadOnlyRate >= 0) || math.IsInf(c.ReadOnlyRate, 0):
		return fmt.Errorf("workload: ReadOnlyRate must be a finite rate ≥ 0, got %v", c.ReadOnlyRate)
	}
	switch c.Distribution {
	case DistUniform:
	case DistZipfian:
		if !(c.Theta > 0 && c.Theta < 1) {
			return fmt.Errorf("workload: Theta must be in (0, 1) for the %s distribution, got %v",
				DistZipfian, c.Theta)
		}
	default:
		return fmt.Errorf("workload: unknown Distribution %q (want %q or %q)",
			c.Distribution, DistZipfian, DistUniform)
	}
	return nil
}

// KeyName returns the name of key i: "k" followed by i in decimal.
func KeyName(i uint64) string { return "k" + strconv.FormatUint(i, 10) }

// keyNames holds KeyName(0) … KeyName(n-1) in one byte array, name i at i·width, so that naming
// a drawn key is arithmetic: a []string of the names costs a 16-byte header per key, read from a
// random place of an array of n of them (a cache miss on most draws), besides the names' bytes.
type keyNames struct {
	bytes []byte // never written after newKeyNames: the names share it
	width int    // the longest name's length, len(KeyName(n-1))
	n     uint64
}

func newKeyNames(n uint64) keyNames {
	width := len(KeyName(n - 1))
	b := make([]byte, int(n)*width)
	for i := range n {
		copy(b[int(i)*width:], KeyName(i))
	}
	return keyNames{bytes: b, width: width, n: n}
}

// name returns KeyName(i) (i < n), sharing the array.
func (k keyNames) name(i uint64) string {
	size := 2 // "k" and the first digit
	for p := uint64(10); p <= i; p *= 10 {
		size++
	}
	return unsafe.String(&k.bytes[int(i)*k.width], size)
}

// Op is one operation of a transaction.
type Op struct {
	// Key is the key the operation accesses.
	Key string
	// Read is true for a read and false for a write.
	Read bool
}

// Spec is one generated transaction: its operations in issue order, on pairwise distinct keys.
type Spec struct {
	// Ops holds TYCSB.OpsPerTxn operations.
	Ops []Op
}

// maxRedraws bounds how often Generator.Next redraws a key already in the transaction before it
// falls back to probing for the next unused key. The fallback is only reached when the
// transaction covers most of a tiny or very skewed key space; a scrambled Zipfian may never draw
// some keys at all, so unbounded redrawing could spin forever when OpsPerTxn is close to Keys.
const maxRedraws = 64

// Generator draws T-YCSB transactions. It is immutable after construction and safe for
// concurrent use when each goroutine passes its own *rand.Rand.
type Generator struct {
	keys      keyNames // KeyName(i) of every key, built once so that Next allocates no key strings
	chooser   KeyChooser
	ops       int
	readRatio float64
}

// NewGenerator validates cfg and returns a generator for it. Construction is O(Keys): it names
// every key and, for DistZipfian, computes the zeta constant.
func NewGenerator(cfg TYCSB) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := uint64(cfg.Keys)
	var (
		chooser KeyChooser
		err     error
	)
	if cfg.Distribution == DistZipfian {
		chooser, err = NewScrambledZipfian(n, cfg.Theta)
	} else { // Validate admits only DistZipfian and DistUniform.
		chooser, err = NewUniform(n)
	}
	if err != nil {
		return nil, err
	}
	return &Generator{keys: newKeyNames(n), chooser: chooser, ops: cfg.OpsPerTxn, readRatio: cfg.ReadRatio}, nil
}

// DistinctKeys draws n distinct keys (n at most the key space) as Next draws a transaction's:
// a key already drawn is redrawn up to maxRedraws times, then replaced by the next unused one.
func (g *Generator) DistinctKeys(r *rand.Rand, n int) []string {
	drawn := make(map[uint64]bool, n)
	keys := make([]string, 0, n)
	for len(keys) < n {
		k := g.chooser.Next(r)
		for redraws := 0; drawn[k]; redraws++ {
			if redraws < maxRedraws {
				k = g.chooser.Next(r)
			} else {
				k = (k + 1) % g.keys.n
			}
		}
		drawn[k] = true
		keys = append(keys, g.keys.name(k))
	}
	return keys
}

// Next draws one transaction. A key that is already in the transaction is redrawn, up to
// maxRedraws times, and after that replaced by the next unused key index (wrapping around), so
// Next always terminates, even when OpsPerTxn equals Keys. Duplicate detection scans the keys
// drawn so far: O(OpsPerTxn²) work, meant for T-YCSB's handful of operations. For up to 8
// operations the only allocation is the Ops slice.
func (g *Generator) Next(r *rand.Rand) Spec {
	var buf [8]uint64
	drawn := buf[:0] // key indices already in the transaction
	ops := make([]Op, g.ops)
	for i := range ops {
		k := g.chooser.Next(r)
		for redraws := 0; slices.Contains(drawn, k); redraws++ {
			if redraws < maxRedraws {
				k = g.chooser.Next(r)
			} else {
				k = (k + 1) % g.keys.n
			}
		}
		drawn = append(drawn, k)
		ops[i] = Op{Key: g.keys.name(k), Read: r.Float64() < g.readRatio}
	}
	return Spec{Ops: ops}
}
